#!/usr/bin/env bash
# make demo: a deploy check of this machine for a TinyLlama-class model.
# Synthesizes tinyllama-1.1b (random weights, the real shape) at q4_0 into a cache folder once, runs a
# short prompt through it and reports what a user deciding on hardware needs.
set -euo pipefail
bin=${1:-build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
mkdir -p "$cache"
model="$cache/tinyllama-1.1b.q4_0.gguf"
if [[ ! -f "$model" ]]; then
  echo "demo: synthesizing tinyllama-1.1b q4_0 into $model (once; about a minute)"
  "$bin" synth --preset tinyllama-1.1b --type q4_0 -o "$model"
fi
threads=$(nproc)
echo
echo "== edgedecode deploy check: TinyLlama-1.1B (q4_0) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') =="
printf "model size        %d MiB\n" $(( $(stat -c %s "$model") / 1048576 ))
echo "threads           $threads"
echo
stats=$("$bin" run -m "$model" -p "Once upon a time, in a small village by the sea," -n 32 --temp 0 -t "$threads" --json 2>/dev/null)
field() { sed -E "s/.*\"$1\":([0-9.eE+-]+).*/\1/" <<<"$stats"; }
printf "prefill           %.1f tok/s\n" "$(field prefill_tok_s)"
printf "time to 1st token %.0f ms\n" "$(field ttft_ms)"
printf "decode            %.1f tok/s\n" "$(field decode_tok_s)"
echo "kernels           $(sed -E 's/.*"kernels":"([a-z0-9]+)".*/\1/' <<<"$stats")"
echo
echo "== memory plan on this machine (edgedecode plan, ctx 2048) =="
"$bin" plan -m "$model" -c 2048 || true
if "$bin" --help 2>/dev/null | grep -q '^  doctor'; then
  echo
  echo "== memory bandwidth and the decode roofline (doctor env --model) =="
  env_out=$("$bin" doctor env --model "$model" 2>&1 | grep -iE "bandwidth|roofline|bytes/token|per token" || true)
  echo "$env_out"
  # The decode above against that limit (both measured in this run; the machine may be shared).
  roof=$(sed -nE 's/^roofline: ([0-9.]+) tok\/s.*/\1/p' <<<"$env_out")
  if [[ -n "$roof" ]]; then
    awk -v d="$(field decode_tok_s)" -v r="$roof" \
      'BEGIN {printf "decode            %.1f tok/s = %.0f%% of the roofline\n", d, 100 * d / r}'
  fi
fi
