#!/usr/bin/env bash
# Side-by-side decode/prefill benchmark: edgedecode bench vs llama.cpp's own llama-bench, same GGUF files,
# same machine, alternating runs in one script; medians and ratios.
#
#   bench/vs_llamacpp.sh [--types "q4_0 q8_0 q4_k_m f16"] [--threads "1 2"] [--reps 3] [--pp 512] [--tg 128]
#                        [--verify K] [--quick]
#
# The peer is built once (CPU only, Release, native) from the llama.cpp source that the pinned npm
# node-llama-cpp ships (llama/gitRelease.bundle, release v0.4.0) and cached; models are synthesized by
# `edgedecode synth --preset tinyllama-1.1b` into the cache. Before measuring, one model is checked to give
# the same next-token distributions in both engines (tests/oracle/oracle_test.py does the full check).
# --verify K adds a row per model and thread count: the cost of one forward pass over K tokens (the verify
# step of speculative decoding) in decode steps, K x tg t/s / ppK t/s, for each engine from the same run
# (lower is better; the ratio column is edgedecode's cost / llama.cpp's).
# Decode rows also give llama.cpp's own share of the roofline (its t/s over the roofline edgedecode's bench
# measured right after it, in the same rep) and the ratio bound: 100% / that share, the most any engine
# could decode faster than llama.cpp at the bandwidth of those reps.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
types="q4_0 q8_0 q4_k_m f16"; threads="1 2"; reps=3; pp=512; tg=128; preset=tinyllama-1.1b; verify=0
while (($#)); do
  case $1 in
    --types) types=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --quick) pp=64; tg=32; shift ;;
    --pp) pp=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --verify) verify=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$cache"

# 1. The peer.
peer="$cache/llama.cpp-v0.4.0/build/bin/llama-bench"
if [[ ! -x "$peer" ]]; then
  bundle="$here/tools/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  [[ -f "$bundle" ]] || { echo "missing $bundle: run make setup" >&2; exit 1; }
  src="$cache/llama.cpp-v0.4.0"
  rm -rf "$src" && git clone -q "$bundle" "$src"
  echo "bench: building llama-bench (CPU, Release, native) in $src"
  cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$src/build" --target llama-bench -j "$(nproc)" >/dev/null
fi

# 2. The models.
model_for() {
  local t=$1 f="$cache/$preset.$1.gguf"
  if [[ ! -f "$f" ]]; then
    case $t in
      q4_k_m) "$bin" synth --preset "$preset" --type q4_k -o "$f.tmp.gguf" >&2
              "$bin" quantize "$f.tmp.gguf" "$f" q4_k --tensor-type output.weight=q6_k --allow-requantize >&2; rm -f "$f.tmp.gguf" ;;
      *) "$bin" synth --preset "$preset" --type "$t" -o "$f" >&2 ;;
    esac
  fi
  echo "$f"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "| model | threads | test | llama.cpp t/s | edgedecode t/s | ratio | edgedecode % of roofline | llama.cpp % of roofline | ratio bound |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in $types; do
  f=$(model_for "$t")
  for th in $threads; do
    for test in pp tg; do
      ours=(); theirs=(); roof=(); peer_roof=()
      for ((r = 0; r < reps; r++)); do
        if [[ $test == pp ]]; then
          x=$("$peer" -m "$f" -p $pp -n 0 -t "$th" -r 1 -o json | grep -o '"avg_ts": *[0-9.e+-]*' | head -1 | grep -o '[0-9.e+-]*$')
          y=$("$bin" bench -m "$f" -p $pp -n 0 -t "$th" -r 1 --json | grep -o '"tps_median":[0-9.e+-]*' | cut -d: -f2)
        else
          x=$("$peer" -m "$f" -p 0 -n $tg -t "$th" -r 1 -o json | grep -o '"avg_ts": *[0-9.e+-]*' | head -1 | grep -o '[0-9.e+-]*$')
          line=$("$bin" bench -m "$f" -p 0 -n $tg -t "$th" -r 1 --json | grep '"tg')
          y=$(grep -o '"tps_median":[0-9.e+-]*' <<<"$line" | cut -d: -f2)
          roof+=("$(grep -o '"roofline_pct":[0-9.e+-]*' <<<"$line" | cut -d: -f2)")
          rt=$(grep -o '"roofline_tps":[0-9.e+-]*' <<<"$line" | cut -d: -f2)
          peer_roof+=("$(awk -v x="$x" -v r="${rt:-0}" 'BEGIN {print (r > 0 ? 100 * x / r : 0)}')")
        fi
        theirs+=("$x"); ours+=("$y")
      done
      mt=$(printf '%s\n' "${theirs[@]}" | median); mo=$(printf '%s\n' "${ours[@]}" | median)
      mr=""; ((${#roof[@]})) && mr=$(printf '%s\n' "${roof[@]}" | median)
      mp=""; ((${#peer_roof[@]})) && mp=$(printf '%s\n' "${peer_roof[@]}" | median)
      bound=""; [[ -n $mp ]] && bound=$(awk -v p="$mp" 'BEGIN {if (p > 0) printf "%.2f", 100 / p}')
      name=$([[ $test == pp ]] && echo "pp$pp" || echo "tg$tg")
      printf "| %s %s | %s | %s | %.2f | %.2f | %.2f | %s | %s | %s |\n" "$preset" "$t" "$th" "$name" "$mt" "$mo" \
        "$(awk -v a="$mo" -v b="$mt" 'BEGIN {print (b > 0 ? a / b : 0)}')" "${mr:+$(printf '%.0f%%' "$mr")}" \
        "${mp:+$(printf '%.0f%%' "$mp")}" "$bound"
    done
    if ((verify > 0)); then
      ours=(); theirs=()
      for ((r = 0; r < reps; r++)); do
        # llama-bench prints the pp test first, then tg; edgedecode one line per test.
        mapfile -t ts < <("$peer" -m "$f" -p "$verify" -n "$tg" -t "$th" -r 1 -o json | grep -o '"avg_ts": *[0-9.e+-]*' | grep -o '[0-9.e+-]*$')
        theirs+=("$(awk -v k="$verify" -v p="${ts[0]}" -v g="${ts[1]}" 'BEGIN {print k * g / p}')")
        out=$("$bin" bench -m "$f" -p "$verify" -b "$verify" -n "$tg" -t "$th" -r 1 --json)
        p=$(grep '"pp' <<<"$out" | grep -o '"tps_median":[0-9.e+-]*' | cut -d: -f2)
        g=$(grep '"tg' <<<"$out" | grep -o '"tps_median":[0-9.e+-]*' | cut -d: -f2)
        ours+=("$(awk -v k="$verify" -v p="$p" -v g="$g" 'BEGIN {print k * g / p}')")
      done
      mt=$(printf '%s\n' "${theirs[@]}" | median); mo=$(printf '%s\n' "${ours[@]}" | median)
      printf "| %s %s | %s | verify%s (x decode step) | %.2fx | %.2fx | %.2f |  |  |  |\n" "$preset" "$t" "$th" "$verify" \
        "$mt" "$mo" "$(awk -v a="$mo" -v b="$mt" 'BEGIN {print (b > 0 ? a / b : 0)}')"
    fi
  done
done
