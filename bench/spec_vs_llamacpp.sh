#!/usr/bin/env bash
# Speculative decoding side by side with llama.cpp's own: edgedecode `run --lookup` against `llama-lookup`
# (prompt lookup on a copy-heavy prompt), and `run --draft` against `llama-speculative-simple` (a q8_0
# target with its q4_0 copy as the draft), same files, prompt, draft length and thread count, alternating
# runs in one script; medians and ratios.
#
#   bench/spec_vs_llamacpp.sh [--threads "1 2"] [--reps 3] [--tg 128] [--draft 8] [--preset tinyllama-1.1b]
#                             [--lookup-model FILE] [--only lookup|draft]
#
# The peer tools are built once (CPU only, Release, native) from the llama.cpp source that the pinned npm
# node-llama-cpp ships (llama/gitRelease.bundle), as bench/vs_llamacpp.sh builds llama-bench, and cached.
# Lookup runs on the trained stories260K (../shared/testdata/llm/gguf/stories260K.f32.gguf, made by
# llama.cpp) unless --lookup-model says otherwise: on random weights nothing is ever copied. The draft rows
# use `edgedecode synth --preset P` at q8_0 and q4_0 (the same weights, one seed); llama.cpp is given
# --spec-draft-p-min 0 and --spec-draft-n-min 0, so that both engines draft greedily to the full length.
# Tok/s is each engine's own decode rate (llama.cpp: its "decoded ... t/s" line; edgedecode:
# timings.decode_tok_s of `run --json`); acceptance is drafted tokens the target kept.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
threads="1 2"; reps=3; tg=128; draft=8; preset=tinyllama-1.1b; only=""
lookup_model="$here/../shared/testdata/llm/gguf/stories260K.f32.gguf"
while (($#)); do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --draft) draft=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --lookup-model) lookup_model=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "no edgedecode binary at $bin (make build, or set EDGEDECODE_BIN)" >&2; exit 2; }
mkdir -p "$cache"

# 1. The peer tools.
src="$cache/llama.cpp-v0.4.0"
peer="$cache/llama.cpp-v0.4.0-spec-build/bin"
if [[ ! -x $peer/llama-lookup || ! -x $peer/llama-speculative-simple ]]; then
  bundle="$here/tools/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  [[ -f $bundle ]] || { echo "missing $bundle: run make setup" >&2; exit 1; }
  [[ -f $src/CMakeLists.txt ]] || { rm -rf "$src" && git clone -q "$bundle" "$src"; }
  echo "bench: building llama-lookup and llama-speculative-simple (CPU, Release, native)" >&2
  cmake -S "$src" -B "$(dirname "$peer")" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON \
        -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$(dirname "$peer")" --target llama-lookup llama-speculative-simple -j "$(nproc)" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
ours() {  # decode tok/s and acceptance of one run's JSON
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j.get("speculative") or {}
print(j["timings"]["decode_tok_s"], s.get("acceptance_rate", 0.0))' "$1"
}
theirs() {  # decode tok/s and acceptance from a llama.cpp example's log
  python3 -c 'import re,sys; t=open(sys.argv[1], errors="replace").read()
d=re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", t)
a=re.search(r"accept\s+=\s+([\d.]+)%", t)
if not d: sys.exit("no decode speed in the llama.cpp log " + sys.argv[1])
print(d.group(1), float(a.group(1)) / 100 if a else 0.0)' "$1"
}

# One comparison: label, our run's extra flags, the peer's command (its log is parsed); prints a table row.
compare() {
  local label=$1 t=$2; shift 2
  local -a our_flags=() peer_cmd=()
  while [[ $1 != -- ]]; do our_flags+=("$1"); shift; done
  shift
  peer_cmd=("$@")
  local -a plain=() spec=() spec_acc=() peer=() peer_acc=()
  for ((r = 0; r < reps; r++)); do
    "$bin" run "${our_common[@]}" -t "$t" --json "$work/plain.json" >/dev/null 2>&1
    "$bin" run "${our_common[@]}" -t "$t" "${our_flags[@]}" --json "$work/spec.json" >/dev/null 2>&1
    "${peer_cmd[@]}" -t "$t" -tb "$t" >"$work/peer.log" 2>&1 || { cat "$work/peer.log" >&2; exit 1; }
    read -r p _ < <(ours "$work/plain.json")
    read -r s sa < <(ours "$work/spec.json")
    read -r l la < <(theirs "$work/peer.log")
    plain+=("$p"); spec+=("$s"); spec_acc+=("$sa"); peer+=("$l"); peer_acc+=("$la")
  done
  local mp ms ml
  mp=$(median "${plain[@]}"); ms=$(median "${spec[@]}"); ml=$(median "${peer[@]}")
  printf '| %s | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.2fx |\n' "$label" "$t" "$mp" "$ms" "$(median "${spec_acc[@]}")" \
    "$ml" "$(median "${peer_acc[@]}")" "$(python3 -c "print($ms / $ml)")"
}

echo "tg $tg, draft $draft, reps $reps (medians)"
printf '| case | threads | edgedecode plain tok/s | edgedecode spec tok/s | acceptance | llama.cpp spec tok/s | acceptance | edgedecode / llama.cpp |\n'
printf '|---|---|---|---|---|---|---|---|\n'

# 2. Lookup on a copy-heavy prompt: a story, then the request to tell it again, and its first words.
if [[ -z $only || $only == lookup ]]; then
  [[ -f $lookup_model ]] || { echo "no lookup model at $lookup_model" >&2; exit 2; }
  # Short: stories260K's context is 128 tokens (prompt + tg must fit; --tg 64 does).
  story="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
  prompt="$story Once upon a time, there was a little girl"
  our_common=(-m "$lookup_model" -p "$prompt" -n "$tg" --temp 0 --ignore-eos -c 128)
  for t in $threads; do
    compare lookup "$t" --lookup "$draft" -- \
      "$peer/llama-lookup" -m "$lookup_model" -p "$prompt" -n "$tg" --temp 0 --ignore-eos --spec-draft-n-max "$draft" -c 128
  done
fi

# 3. A draft model: the target at q8_0, its q4_0 copy drafting.
if [[ -z $only || $only == draft ]]; then
  run_help=$("$bin" run --help 2>&1 || true)  # grep -q would end the pipe early (SIGPIPE under pipefail)
  if ! grep -qE -- '--draft [A-Z]' <<<"$run_help"; then
    echo "| draft | - | this build has no run --draft | | | | | |"
  else
    for ty in q8_0 q4_0; do
      [[ -f $cache/$preset.$ty.gguf ]] || "$bin" synth --preset "$preset" --type "$ty" -o "$cache/$preset.$ty.gguf" >&2
    done
    target="$cache/$preset.q8_0.gguf"; drafter="$cache/$preset.q4_0.gguf"
    prompt="The quick brown fox jumps over the lazy dog. Once upon a time, in a small village by the sea,"
    our_common=(-m "$target" -p "$prompt" -n "$tg" --temp 0 --ignore-eos)
    for t in $threads; do
      compare "draft q4_0 -> q8_0" "$t" --draft "$drafter" --draft-max "$draft" -- \
        "$peer/llama-speculative-simple" -m "$target" -md "$drafter" -p "$prompt" -n "$tg" --temp 0 --ignore-eos --spec-type draft-simple \
        --spec-draft-n-max "$draft" --spec-draft-n-min 0 --spec-draft-p-min 0 -c 2048
    done
  fi
fi
