#!/usr/bin/env bash
# The fuzz harnesses' builder and runner (docs/fuzzing.md; `make fuzz`, `make test-fuzz`, the ctest
# fuzz_regression_test). Harnesses are the names of fuzz/seeds/*.txt; each seed list names files or folders,
# "testdata:REL" under the shared test data and "repo:REL" in this repository.
#
#   fuzz.sh build DIR
#       Configures DIR with clang and EDGEDECODE_FUZZ (ccache when installed; CMAKE_ARGS added) and builds
#       the harnesses and the libraries they need, nothing else (JOBS parallel jobs).
#   fuzz.sh run DIR [HARNESS...]
#       libFuzzer campaign over the harnesses built in DIR, one after the other, each for FUZZ_SECONDS
#       (default 15) with -rss_limit_mb=FUZZ_RSS_MB (2048), -timeout=FUZZ_TIMEOUT (10 s per input) and
#       -seed=FUZZ_SEED (0: a new one each run; the CI campaign fixes it so that a red run can be replayed).
#       The corpus grows in DIR/corpus/<harness>/ (seeds copied in first), crashers are written to
#       DIR/crashes/<harness>/, logs to DIR/logs/. FUZZ_QUICK=1 leaves out the seed lines marked "slow"
#       (the short CI campaign). Prints a table; exits 1 if any harness found a crash, hang, leak or OOM.
#   fuzz.sh regress BINDIR TESTDATA
#       Replays every harness of an ordinary build (driver.cc) over its seeds and fuzz/regressions/<harness>/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

# Every harness, from the seed lists.
harnesses() {
  local f
  for f in "$here"/seeds/*.txt; do basename "$f" .txt; done
}

# The seed paths of harness $1 (one per line), with testdata $2; fails on a path that is missing. Lines
# marked "slow " (many inputs that take long to load) are left out when FUZZ_QUICK=1.
seed_paths() {
  local line path
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    if [[ "$line" == slow\ * ]]; then
      [[ "${FUZZ_QUICK:-0}" == 1 ]] && continue
      line=${line#slow }
    fi
    case "$line" in
      testdata:*) path="$2/${line#testdata:}" ;;
      repo:*) path="$repo/${line#repo:}" ;;
      *) echo "fuzz.sh: $1: bad seed line '$line' (testdata:REL or repo:REL)" >&2; return 1 ;;
    esac
    [[ -e "$path" ]] || { echo "fuzz.sh: $1: seed $path is missing" >&2; return 1; }
    echo "$path"
  done < "$here/seeds/$1.txt"
}

build() {
  local dir=$1 launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
  cmake -S "$repo" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DEDGEDECODE_FUZZ=ON "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
  cmake --build "$dir" -j "${JOBS:-$(nproc)}" -t fuzz_harnesses
}

regress() {
  local bindir=$1 testdata=$2 h paths failed=0
  for h in $(harnesses); do
    local bin="$bindir/${h}_fuzz"
    [[ -x "$bin" ]] || { echo "fuzz.sh: $bin is not built" >&2; failed=1; continue; }
    mapfile -t paths < <(seed_paths "$h" "$testdata") || { failed=1; continue; }
    [[ -d "$here/regressions/$h" ]] && paths+=("$here/regressions/$h")
    local t0=$SECONDS
    if "$bin" "${paths[@]}"; then
      echo "fuzz.sh: $h: ok ($((SECONDS - t0)) s)"
    else
      echo "fuzz.sh: $h: FAILED (exit $?) replaying ${paths[*]}" >&2
      failed=1
    fi
  done
  return $failed
}

# One libFuzzer campaign; prints "harness seconds execs corpus crashes".
campaign() {
  local dir=$1 testdata=$2 h=$3
  local bin="$dir/fuzz/${h}_fuzz" corpus="$dir/corpus/$h" crashes="$dir/crashes/$h" log="$dir/logs/$h.log"
  [[ -x "$bin" ]] || { echo "fuzz.sh: $bin is not built (fuzz.sh build $dir)" >&2; return 1; }
  mkdir -p "$corpus" "$crashes" "$dir/logs"
  local p
  while IFS= read -r p; do  # seeds are copied in once (libFuzzer reads folders recursively)
    local dst="$corpus/seed-$(basename "$p")"
    [[ -e "$dst" ]] || cp -r "$p" "$dst"
  done < <(seed_paths "$h" "$testdata")
  local opts=(-max_total_time="${FUZZ_SECONDS:-15}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout="${FUZZ_TIMEOUT:-10}"
              -seed="${FUZZ_SEED:-0}" -artifact_prefix="$crashes/" -print_final_stats=1)
  [[ -f "$here/dicts/$h.dict" ]] && opts+=(-dict="$here/dicts/$h.dict")
  local before after t0=$SECONDS rc=0
  before=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" "$bin" "${opts[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  after=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%-14s %8d %10s %8d %8d\n' "$h" $((SECONDS - t0)) "${execs:-?}" "$(find "$corpus" -type f | wc -l)" $((after - before))
  if ((rc != 0 || after > before)); then
    echo "fuzz.sh: $h: exit $rc; log $log; crashers in $crashes" >&2
    grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:' "$log" >&2 || true
    return 1
  fi
}

run() {
  local dir=$1 h failed=0 testdata
  shift
  testdata=$(sed -n 's/^EDGEDECODE_TESTDATA:PATH=//p' "$dir/CMakeCache.txt" 2>/dev/null)
  [[ -n "$testdata" ]] || { echo "fuzz.sh: $dir is not configured (fuzz.sh build $dir)" >&2; return 1; }
  local list=("$@")
  ((${#list[@]})) || mapfile -t list < <(harnesses)
  printf '%-14s %8s %10s %8s %8s\n' harness seconds execs corpus crashes
  for h in "${list[@]}"; do
    campaign "$dir" "$testdata" "$h" || failed=1
  done
  return $failed
}

case "${1:-}" in
  build) shift; build "$@" ;;
  run) shift; run "$@" ;;
  regress) shift; regress "$@" ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
