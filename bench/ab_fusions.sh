#!/usr/bin/env bash
# A/B of the forward-pass fusions: `edgedecode bench` with all fusions on against each `--no-fuse NAME`
# (and optionally a second binary, e.g. a build without the profiler hooks), in alternating rounds so
# that the load of a shared machine falls on every variant alike; prints the median over rounds of each
# variant's per-round median.
#
#   bench/ab_fusions.sh [-m MODEL] [--rounds 5] [--args "-p 128 -n 32 -t 2 -r 3"] [--variants "none qkv ..."]
#                       [--base-bin PATH]
#
# Variants: "none" = all fusions on; a fusion name = that fusion off; "base" = --base-bin, all on.
# attn_tiles acts on passes of several rows over a long cache, e.g. --variants "none attn_tiles"
# --args "-p 64 -n 0 -d 2048 -t 2 -r 3" (the prefill of a follow-up turn after 2048 tokens).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${EDGEDECODE_BIN:-$here/build/edgedecode}
model=${HOME}/.cache/edgedecode/tinyllama-1.1b.q4_0.gguf
rounds=5
args="-p 128 -n 32 -t 2 -r 3"
variants="none norm_quant qkv gate_up_silu rope_kv attn_online attn_tiles"
base_bin=""
while (($#)); do
  case $1 in
    -m) model=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --base-bin) base_bin=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for v in $variants; do
    case $v in
      none) cmd=("$bin" bench -m "$model" $args --json) ;;
      base) cmd=("$base_bin" bench -m "$model" $args --json) ;;
      *) cmd=("$bin" bench -m "$model" $args --json --no-fuse "$v") ;;
    esac
    "${cmd[@]}" | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if "tps_median" in j: print(j["test"], j["tps_median"])' >> "$out/$v"
  done
  echo "round $r/$rounds done" >&2
done
python3 - "$out" $variants <<'EOF'
import statistics, sys, collections
d, variants = sys.argv[1], sys.argv[2:]
res = {}
for v in variants:
    per = collections.defaultdict(list)
    for line in open(f"{d}/{v}"):
        t, x = line.split()
        per[t].append(float(x))
    res[v] = per
tests = sorted(res[variants[0]])
print("| variant | " + " | ".join(f"{t} t/s median (min..max of rounds)" for t in tests) + " |")
print("|---" * (len(tests) + 1) + "|")
for v in variants:
    cells = []
    for t in tests:
        xs = res[v][t]
        cells.append(f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})")
    name = "all fused" if v == "none" else ("base binary" if v == "base" else f"--no-fuse {v}")
    print(f"| {name} | " + " | ".join(cells) + " |")
EOF
