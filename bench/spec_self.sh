#!/usr/bin/env bash
# Self-speculative decoding by layer skip (`run --self-spec`) against plain decoding, on the same model, prompt
# and thread count, alternating runs in one script; medians and ratios, acceptance and tokens per pass.
#
#   bench/spec_self.sh [-m MODEL.gguf] [--skip "2 3-4"] [--threads "1 2"] [--reps 3] [--tg 120] [--draft-max 4]
#                      [--fixed]
#
# Default model: stories260K f32 (../shared/testdata/llm). The model is copied into a temporary folder first, so
# that `--self-spec auto` saves its MODEL.gguf.self-spec.json there and never beside the original; its search
# runs once, before the timed runs (which then read the saved set). Compared: plain, `--self-spec auto`, and
# each fixed skip set of --skip. Greedy, past EOG, on "Once upon a time". Drafting is adaptive (it pauses
# while drafts lose) unless --fixed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
data=${EDGEDECODE_TESTDATA:-$here/../shared/testdata}
model=$data/llm/gguf/stories260K.f32.gguf
skips="2 3-4"; threads="1"; reps=3; tg=120; dmax=4; fixed=""
while (($#)); do
  case $1 in
    -m) model=$2; shift 2 ;;
    --skip) skips=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --draft-max) dmax=$2; shift 2 ;;
    --fixed) fixed="--lookup-fixed"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "no edgedecode binary at $bin (make build, or set EDGEDECODE_BIN)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/model.gguf"
m=$work/model.gguf

field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j.get("speculative") or {}
print(j["timings"]["decode_tok_s"], s.get("tokens_per_pass", 1.0), s.get("acceptance_rate", 0.0))' "$1"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

"$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0 --self-spec auto >/dev/null 2>"$work/search.txt"
grep 'self-spec:' "$work/search.txt" >&2
echo "model: $model, tg $tg, draft-max $dmax${fixed:+, fixed}, reps $reps"
printf '| threads | skip | plain tok/s | spec tok/s | speedup | tokens/pass | acceptance |\n|---|---|---|---|---|---|---|\n'
for t in $threads; do
  common=(-m "$m" -p "Once upon a time" -n "$tg" --temp 0 --ignore-eos -t "$t")
  declare -A spec=() per_pass=() acc=()
  plain=()
  for ((r = 0; r < reps; r++)); do
    "$bin" run "${common[@]}" --json "$work/plain.json" >/dev/null 2>&1
    read -r p _ _ < <(field "$work/plain.json")
    plain+=("$p")
    for s in auto $skips; do
      # shellcheck disable=SC2086
      "$bin" run "${common[@]}" --self-spec "$s" --draft-max "$dmax" $fixed --json "$work/spec.json" >/dev/null 2>&1
      read -r v pp a < <(field "$work/spec.json")
      spec[$s]+=" $v"; per_pass[$s]+=" $pp"; acc[$s]+=" $a"
    done
  done
  mp=$(median "${plain[@]}")
  for s in auto $skips; do
    # shellcheck disable=SC2086
    ms=$(median ${spec[$s]})
    # shellcheck disable=SC2086
    printf '| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n' "$t" "$s" "$mp" "$ms" "$(python3 -c "print($ms / $mp)")" \
      "$(median ${per_pass[$s]})" "$(median ${acc[$s]})"
  done
  unset spec per_pass acc
done
