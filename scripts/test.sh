#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs
#   1. every unit and end-to-end test (ctest, Release build);
#   2. a smoke run of every benchmark (bench/), so they never rot: each must
#      start, finish and produce its figures; timings are not judged;
#   3. the unit tests of the threaded code (filters, persistence, server)
#      under ThreadSanitizer, and the e2e tests that race
#      writers, saves and kill -9 against a ThreadSanitizer server;
#   4. the unit tests (RESP parser included) under AddressSanitizer and
#      UndefinedBehaviorSanitizer, built with clang in the fuzz tree;
#   5. every libFuzzer target (tests/fuzz/, clang) for 15 s, two at a time.
# The two sanitizer trees build in the background, at the lowest priority,
# while the stages before theirs run.
# End-to-end tests start their own server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test

jobs=$(nproc)
# ThreadSanitizer only where threads are: config parsing is single-threaded
# and alloc_test skips itself under any sanitizer, so the TSan tree builds
# neither (~15 s of CI) and ctest's placeholders for them are left out.
tsan_unit_tests=(filters_test persistence_test server_test)
tsan_not_built='^(config_test|alloc_test)_NOT_BUILT$'
# ASan + UBSan: every unit test but alloc_test, which skips itself there
# (the sanitizer brings its own operator new): its compile, link and test
# discovery took 4.7 s of the fresh-clone run (build-fuzz/.ninja_log) for a skip.
asan_unit_tests=(filters_test persistence_test server_test config_test)

# Every ctest call fails when it finds no test (--no-tests=error): a stage
# that silently ran nothing (a build dir configured without tests, e.g. by
# scripts/run.sh's BUILD_TESTING=OFF) must not pass.
# Each call ends with its ten slowest tests, so a test that grows slow shows
# in CI's log before it eats the budget.
run_ctest() {
  local log status=0
  log=$(mktemp)
  ctest --no-tests=error --output-on-failure --parallel "$jobs" --timeout 600 "$@" | tee "$log" ||
    status=$?
  echo "-- the ten slowest:"
  # sed, not head, takes the first ten: it reads to the end, where head would
  # close the pipe early and pipefail would fail the stage on sort's SIGPIPE.
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]+(Passed|Failed|\*+[A-Za-z]+).* ([0-9.]+) sec$/\3 s  \1/p' "$log" |
    sort -rn | sed -n 1,10p
  rm -f "$log"
  if (( status != 0 )); then
    print_failures "$2"
  fi
  return "$status"
}
# CI shows only the end of a failed run's log, where ctest's own summary
# names a failed test but not why: so each failed test's last 80 lines of
# output come again last. Usage: print_failures TEST_DIR
print_failures() {
  local dir=$1/Testing/Temporary name
  [[ -f $dir/LastTestsFailed.log ]] || return 0
  while IFS=: read -r _ name; do
    echo "-- the end of ${name}'s output:"
    awk -v name="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " name "$" { inside = 1; next }
      inside && /^<end of output>$/ { exit }
      inside { print }' "$dir/LastTest.log" | tail -n 80
  done <"$dir/LastTestsFailed.log"
}
# Each stage's wall time, so a slow stage shows in CI's log (budget: 20 min),
# and the CPU (user + sys) of the processes it waited for: unlike wall time,
# that figure holds on a busy machine. A background build counts in the
# stage during which it ends.
# `times` runs in this shell (not in a pipeline or $(...), whose subshell has
# no children yet) and prints the shell's, then its children's user and sys.
cpu_file=$(mktemp)
children_cpu() {
  times >"$cpu_file"
  cpu_now=$(sed -n 2p "$cpu_file" | sed -E 's/([0-9]+)m([0-9.]+)s/\1 \2/g' |
    awk '{ printf "%d", $1 * 60 + $2 + $3 * 60 + $4 }')
}
stage_start=$SECONDS
children_cpu
stage_cpu=$cpu_now
stage_done() {
  children_cpu
  echo "-- stage took $(( SECONDS - stage_start )) s ($(( cpu_now - stage_cpu )) s of CPU)"
  stage_start=$SECONDS
  stage_cpu=$cpu_now
}

echo "== The quick start's run command: the server starts on its default config and stops"
bash scripts/quickstart_check.sh
stage_done

# The TSan build compiles the unit tests and the server, at -O1 with line tables
# (-g1): enough for readable reports at a fraction of -O2 -g's build time.
sanitized_build() {
  local dir=$1 sanitizers=$2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DBLOOMGATE_SANITIZE="$sanitizers" >/dev/null
  cmake --build "$dir" --parallel "$jobs" --target "${@:3}"
}

echo "== Release build: unit and end-to-end tests"
bash scripts/build.sh build -DBUILD_TESTING=ON
# The e2e tests mostly wait on their servers (about 100 s of CPU in 240 s of
# wall time on 2 cores), so the TSan tree builds beside them at the lowest
# priority: it takes the idle CPU, and the tests' processes keep theirs.
tsan_targets=("${tsan_unit_tests[@]}" bloomgate)
nice -n 19 bash -c "$(declare -f sanitized_build); jobs=$jobs; \
  sanitized_build build-tsan thread ${tsan_targets[*]}" >build/tsan-build.log 2>&1 &
tsan_build=$!
# Then, as soon as the TSan tree is built, the clang tree (ASan + UBSan unit
# tests and the libFuzzer targets, scripts/clang_tree.sh) at the same
# priority: it fills the idle CPU left by the Release e2e tests and the TSan
# stage's racing e2e tests (which mostly wait on their servers too), so the
# last two stages only run. Its 2 jobs never make the TSan tree wait: that
# one is built first.
clang_targets=("${asan_unit_tests[@]}" bloomgate_fuzz fuzz_make_seeds)
nice -n 19 bash -c "while kill -0 $tsan_build 2>/dev/null; do sleep 1; done; \
  bash scripts/clang_tree.sh build-fuzz && \
  cmake --build build-fuzz --parallel $jobs --target ${clang_targets[*]}" >build/clang-build.log 2>&1 &
clang_build=$!
trap 'kill "$tsan_build" "$clang_build" 2>/dev/null || true' EXIT
# The soak's writers run 40 s here (80 by default): 2 kill -9 rounds, one
# with appendfsync always and one with everysec; the TSan stage runs 2 more.
BLOOMGATE_SOAK_SECONDS=40 run_ctest --test-dir build
stage_done

echo "== Benchmark smoke runs (output in build/bench-smoke)"
BUILD_DIR=build bash bench/run.sh --smoke
/usr/bin/python3 bench/durability_bench.py --smoke --bin build/server/bloomgate \
  --out build/bench-smoke/durability.md | tail -n 1
stage_done

echo "== ThreadSanitizer: unit tests, and the threaded server under the racing e2e tests"
if ! wait "$tsan_build"; then
  tail -n 60 build/tsan-build.log
  exit 1
fi
# detect_deadlocks=1 is TSan's default, named so no options file turns it off.
# The server inherits TSAN_OPTIONS: a race or lock-order inversion in it ends
# it with TSan's report in its log, and the e2e test fails with that log.
export TSAN_OPTIONS="halt_on_error=1:detect_deadlocks=1"
# One ctest call for the unit tests, the link check of this tree's archives
# and the racing e2e tests (label racing, listed in tests/CMakeLists.txt), so
# these start first and run beside the unit tests instead of after them.
BLOOMGATE_SOAK_SECONDS=20 run_ctest --test-dir build-tsan -L '^(unit|links|racing)$' \
  -E "$tsan_not_built"
unset TSAN_OPTIONS
stage_done

# One clang tree with ASan + UBSan serves the unit tests and the libFuzzer
# targets: its libraries are compiled once for both (scripts/clang_tree.sh),
# in the background since the Release stage.
echo "== AddressSanitizer + UBSan (clang): unit tests"
if ! wait "$clang_build"; then
  tail -n 60 build/clang-build.log
  exit 1
fi
trap - EXIT
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  run_ctest --test-dir build-fuzz -E '^e2e[._]|^layering$|^alloc_test_NOT_BUILT$'
stage_done

# One line per target, the log on failure.
# 15 s each: the eight targets take a minute two at a time, what the
# cluster failover tests added to the Release stage is taken back here.
echo "== libFuzzer targets, 15 s each (scripts/fuzz.sh)"
bash scripts/fuzz.sh --time 15 --jobs 2
stage_done
echo "== All stages passed in $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s"
rm -f "$cpu_file"
