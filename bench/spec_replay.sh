#!/usr/bin/env bash
# What speculative decoding's verify pass gains at a given acceptance rate: `run --draft-replay` (a
# measuring tool: it drafts the target's own recorded greedy continuation, each token right with
# probability A) against plain decoding on the same model, prompt and thread count, alternating runs in
# one script; medians and ratios.
#
#   bench/spec_replay.sh [--type q4_0] [--threads "1 2"] [--accept "0 0.4 0.6 0.8 0.95"] [--draft 8]
#                        [--reps 3] [--tg 128] [--fixed] [--against-fixed K]
#
# The model is synthesized by `edgedecode synth --preset tinyllama-1.1b` into the cache (random weights:
# a real drafter would accept nothing on them, hence the replay). Per thread count, one greedy run is
# recorded (`run --json`), then plain and replay runs alternate. The speedup is the median decode tok/s
# with the drafter over the median without; tokens/pass is how many tokens each forward pass gave.
# Drafting is adaptive (it pauses while drafts lose) unless --fixed. --against-fixed K: a third run per
# rep, a fixed chain of K (--lookup-fixed --draft-max K), alternating with the others, and the adaptive
# over the fixed median (both measured under the same load).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
type=q4_0; threads="1 2"; accepts="0 0.4 0.6 0.8 0.95"; draft=8; reps=3; tg=128; preset=tinyllama-1.1b; fixed=""; against=""
while (($#)); do
  case $1 in
    --type) type=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --accept) accepts=$2; shift 2 ;;
    --draft) draft=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --fixed) fixed="--lookup-fixed"; shift ;;
    --against-fixed) against=$2; shift 2 ;;
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

# decode tok/s, tokens per pass and acceptance of one run's JSON
field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j.get("speculative") or {}
print(j["timings"]["decode_tok_s"], s.get("tokens_per_pass", 1.0), s.get("acceptance_rate", 0.0))' "$1"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "model: $model ($type), tg $tg, draft $draft${fixed:+, fixed}, reps $reps${against:+, against a fixed chain of $against}"
if [[ -n $against ]]; then
  printf '| threads | A | plain tok/s | replay tok/s | speedup | tokens/pass | acceptance | fixed %s tok/s | fixed speedup | replay / fixed |\n' "$against"
  printf '|---|---|---|---|---|---|---|---|---|---|\n'
else
  printf '| threads | A | plain tok/s | replay tok/s | speedup | tokens/pass | acceptance |\n|---|---|---|---|---|---|---|\n'
fi
for t in $threads; do
  common=(-m "$model" -p "$prompt" -n "$tg" --temp 0 --ignore-eos -t "$t")
  "$bin" run "${common[@]}" --json "$work/rec.$t.json" >/dev/null 2>&1
  for a in $accepts; do
    plain=(); spec=(); per_pass=(); acc=(); fix=()
    for ((r = 0; r < reps; r++)); do
      "$bin" run "${common[@]}" --json "$work/plain.json" >/dev/null 2>&1
      "$bin" run "${common[@]}" --draft-replay "$work/rec.$t.json" --replay-accept "$a" --draft-max "$draft" $fixed \
        --json "$work/spec.json" >/dev/null 2>&1
      read -r p _ _ < <(field "$work/plain.json")
      read -r s tp ac < <(field "$work/spec.json")
      plain+=("$p"); spec+=("$s"); per_pass+=("$tp"); acc+=("$ac")
      if [[ -n $against ]]; then
        "$bin" run "${common[@]}" --draft-replay "$work/rec.$t.json" --replay-accept "$a" --draft-max "$against" \
          --lookup-fixed --json "$work/fixed.json" >/dev/null 2>&1
        read -r f _ _ < <(field "$work/fixed.json")
        fix+=("$f")
      fi
    done
    mp=$(median "${plain[@]}"); ms=$(median "${spec[@]}")
    printf '| %s | %s | %.2f | %.2f | %.2fx | %.2f | %.2f |' "$t" "$a" "$mp" "$ms" "$(python3 -c "print($ms / $mp)")" \
      "$(median "${per_pass[@]}")" "$(median "${acc[@]}")"
    if [[ -n $against ]]; then
      mf=$(median "${fix[@]}")
      printf ' %.2f | %.2fx | %.2fx |' "$mf" "$(python3 -c "print($mf / $mp)")" "$(python3 -c "print($ms / $mf)")"
    fi
    printf '\n'
  done
done
