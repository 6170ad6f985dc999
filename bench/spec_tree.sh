#!/usr/bin/env bash
# Token trees against chains at a given two-candidate acceptance: `run --draft-replay` (a measuring tool: it
# drafts the target's own recorded greedy continuation) with chains (--draft-max D, each token right with
# probability A) and with trees (--tree-nodes N: at each position a second candidate, one of the two right
# with probability A2), alternating runs in one script with plain decoding; medians and ratios.
#
#   bench/spec_tree.sh [--type q4_0] [--threads "1 2"] [--accept 0.6] [--accept2 0.9] [--chains "4 8"]
#                      [--depth 8] [--nodes "7 15"] [--reps 3] [--tg 128] [--fixed]
#
# The model is synthesized by `edgedecode synth --preset tinyllama-1.1b` into the cache (random weights; see
# bench/spec_replay.sh). "best chain" is the chain length with the highest median tok/s; tree/chain is the
# tree's median over it. Drafting is adaptive (chain lengths and tree sizes chosen from the measured
# acceptance and pass times; paused while drafts lose), as run's default, unless --fixed (--lookup-fixed:
# every chain and tree at its full size, so that only the timings vary between runs).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
type=q4_0; threads="1 2"; accept=0.6; accept2=0.9; chains="4 8"; depth=8; nodes="7 15"; reps=3; tg=128; preset=tinyllama-1.1b; fixed=""
while (($#)); do
  case $1 in
    --type) type=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --accept) accept=$2; shift 2 ;;
    --accept2) accept2=$2; shift 2 ;;
    --chains) chains=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --fixed) fixed="--lookup-fixed"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "no edgedecode binary at $bin (make build, or set EDGEDECODE_BIN)" >&2; exit 2; }
mkdir -p "$cache"
model="$cache/$preset.$type.gguf"
if [[ ! -f $model ]]; then
  echo "synthesizing $preset $type into $model (once)" >&2
  "$bin" synth --preset "$preset" --type "$type" -o "$model" >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prompt="The quick brown fox jumps over the lazy dog. Once upon a time, in a small village by the sea,"

field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j.get("speculative") or {}
print(j["timings"]["decode_tok_s"], s.get("tokens_per_pass", 1.0))' "$1"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "model: $model ($type), tg $tg, A $accept, A2 $accept2, chains: $chains, trees: $nodes nodes, depth $depth, reps $reps${fixed:+, fixed}"
printf '| threads | config | tok/s | tokens/pass | vs plain |\n|---|---|---|---|---|\n'
for t in $threads; do
  common=(-m "$model" -p "$prompt" -n "$tg" --temp 0 --ignore-eos -t "$t")
  "$bin" run "${common[@]}" --json "$work/rec.$t.json" >/dev/null 2>&1
  configs=(plain)
  for d in $chains; do configs+=("chain$d"); done
  for n in $nodes; do configs+=("tree$n"); done
  declare -A tps=() tpp=()
  for ((r = 0; r < reps; r++)); do
    for c in "${configs[@]}"; do
      args=()
      case $c in
        chain*) args=(--draft-replay "$work/rec.$t.json" --replay-accept "$accept" --draft-max "${c#chain}") ;;
        tree*) args=(--draft-replay "$work/rec.$t.json" --replay-accept "$accept" --replay-accept2 "$accept2"
                     --draft-max "$depth" --tree-nodes "${c#tree}") ;;
      esac
      # The same replay seed for every configuration of a round (the seed only picks the wrong tokens).
      "$bin" run "${common[@]}" "${args[@]}" --seed $((r + 1)) $fixed --json "$work/out.json" >/dev/null 2>&1
      read -r s p < <(field "$work/out.json")
      tps[$c]+="$s "; tpp[$c]+="$p "
    done
  done
  declare -A med=()
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    med[$c]=$(median ${tps[$c]})
    # shellcheck disable=SC2086
    printf '| %s | %s | %.2f | %.2f | %.2fx |\n' "$t" "$c" "${med[$c]}" "$(median ${tpp[$c]})" "$(python3 -c "print(${med[$c]} / ${med[plain]})")"
  done
  best=""; for d in $chains; do
    if [[ -z $best ]] || python3 -c "import sys; sys.exit(0 if ${med[chain$d]} > ${med[$best]} else 1)"; then best=chain$d; fi
  done
  for n in $nodes; do
    printf '| %s | tree%s / best chain (%s) | | | %.2fx |\n' "$t" "$n" "$best" "$(python3 -c "print(${med[tree$n]} / ${med[$best]})")"
  done
  unset tps tpp med
done
