#!/usr/bin/env bash
# Speculative decoding with a draft model against plain decoding, on the same model, prompt and thread count,
# alternating runs in one script; medians and ratios, acceptance and tokens per pass.
#
#   bench/spec_draft.sh [-m TARGET.gguf] [--draft DRAFT.gguf] [--quant q4_0] [--threads "1 2"] [--reps 3]
#                       [--tg 128] [--draft-max 4] [--fixed]
#
# Defaults: stories260K f32 (../shared/testdata/llm) as the target, its llama.cpp q4_0 copy as --draft and
# --draft-quant q4_0, on the test data's prompts ("Once upon a time" and BOS alone), greedy. Drafting is
# adaptive (it pauses while drafts lose) unless --fixed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
data=${EDGEDECODE_TESTDATA:-$here/../shared/testdata}
model=$data/llm/gguf/stories260K.f32.gguf
draft=$data/llm/gguf/stories260K.q4_0-ffn_down_f16.gguf
quant=q4_0; threads="1 2"; reps=3; tg=128; dmax=4; fixed=""
while (($#)); do
  case $1 in
    -m) model=$2; shift 2 ;;
    --draft) draft=$2; shift 2 ;;
    --quant) quant=$2; shift 2 ;;
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

field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j.get("speculative") or {}
print(j["timings"]["decode_tok_s"], s.get("tokens_per_pass", 1.0), s.get("acceptance_rate", 0.0))' "$1"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "target: $model, tg $tg, draft-max $dmax${fixed:+, fixed}, reps $reps"
printf '| prompt | threads | drafter | plain tok/s | spec tok/s | speedup | tokens/pass | acceptance |\n|---|---|---|---|---|---|---|---|\n'
for prompt in "Once upon a time" ""; do
  for t in $threads; do
    common=(-m "$model" -p "$prompt" -n "$tg" --temp 0 --ignore-eos -t "$t")
    for d in "--draft-quant $quant" "--draft $draft"; do
      plain=(); spec=(); per_pass=(); acc=()
      for ((r = 0; r < reps; r++)); do
        "$bin" run "${common[@]}" --json "$work/plain.json" >/dev/null 2>&1
        # shellcheck disable=SC2086
        "$bin" run "${common[@]}" $d --draft-max "$dmax" $fixed --json "$work/spec.json" >/dev/null 2>&1
        read -r p _ _ < <(field "$work/plain.json")
        read -r s pp a < <(field "$work/spec.json")
        plain+=("$p"); spec+=("$s"); per_pass+=("$pp"); acc+=("$a")
      done
      mp=$(median "${plain[@]}"); ms=$(median "${spec[@]}")
      printf '| %s | %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n' "${prompt:-(BOS)}" "$t" "${d##*/}" "$mp" "$ms" \
        "$(python3 -c "print($ms / $mp)")" "$(median "${per_pass[@]}")" "$(median "${acc[@]}")"
    done
  done
done
