#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang + ASan + UBSan) in their
# own tree and runs each for a bounded time, a few at a time. Fails on any
# crash, leak, timeout or out-of-memory; a failing input is kept in
# <build dir>/artifacts/<target>/.
#
#   scripts/fuzz.sh                  every target for 20 s, 2 at a time (CI: --time 15)
#   scripts/fuzz.sh --time 3600 --jobs 2 snapshot_fuzz commands_fuzz
#   scripts/fuzz.sh --seeds          rewrites tests/fuzz/corpus/ from the real writers
#
# Each target fuzzes a working corpus in <build dir>/corpus/<target>, started
# from tests/fuzz/corpus/<target> and kept between runs, so a long campaign
# can be resumed; the committed seeds are never changed by a run. Output is
# one line per target (executions and libFuzzer's final cov:/ft:); the
# libFuzzer log of a failing target is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build-fuzz
seconds=20
jobs=2
seeds=0
targets=()
while (( $# > 0 )); do
  case "$1" in
    --time) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --seeds) seeds=1; shift ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(resp_parser_fuzz snapshot_fuzz append_log_fuzz dump_chunk_fuzz dump_payload_fuzz rdb_file_fuzz
             commands_fuzz bus_message_fuzz)
(( ${#targets[@]} > 0 )) || targets=("${all_targets[@]}")

bash scripts/clang_tree.sh "$build_dir"
if ! cmake --build "$build_dir" --parallel "$(nproc)" --target bloomgate_fuzz fuzz_make_seeds \
    >"$build_dir/build.log" 2>&1; then
  grep -E -A5 "error|FAILED" "$build_dir/build.log" | head -n 60
  exit 1
fi

if (( seeds )); then
  rm -rf tests/fuzz/corpus
  "$build_dir/tests/fuzz/fuzz_make_seeds" tests/fuzz/corpus
  echo "seeds written: $(find tests/fuzz/corpus -type f | wc -l) files, $(du -sh tests/fuzz/corpus | cut -f1)"
  exit 0
fi

# One target: -timeout is per input (a hang fails), -rss_limit_mb bounds
# memory, -max_len keeps the byte-by-byte parser run quadratic-cheap.
run_target() {
  local target=$1 corpus="$build_dir/corpus/$1" artifacts="$build_dir/artifacts/$1/"
  local log="$build_dir/logs/$1.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local status=0
  ASAN_OPTIONS="detect_leaks=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$artifacts" \
      "$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
  if (( status != 0 )); then
    echo "FAIL $target (exit $status; log $log, input in $artifacts):"
    grep -v -E '^#[0-9]+' "$log" | tail -n 40
    return 1
  fi
  printf '%-18s ok: %s runs in %ss, %s, corpus %s files\n' "$target" "${runs:-?}" \
    "$seconds" "${cov:-?}" "$(find "$corpus" -type f | wc -l)"
}

failed=0
pids=()
for target in "${targets[@]}"; do
  run_target "$target" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit "$failed"
