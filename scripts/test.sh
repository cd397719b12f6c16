#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs
#   1. every unit and end-to-end test (ctest, Release build);
#   2. a smoke run of every benchmark (bench/), so they never rot: each must
#      start, finish and produce its figures; timings are not judged;
#   3. the unit tests under ThreadSanitizer;
#   4. the unit tests (RESP parser included) under AddressSanitizer and
#      UndefinedBehaviorSanitizer;
#   5. every libFuzzer target (tests/fuzz/, clang) for 20 s, two at a time.
# End-to-end tests start their own server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test

jobs=$(nproc)
unit_tests=(filters_test persistence_test server_test config_test)

echo "== Release build: unit and end-to-end tests"
bash scripts/build.sh build
ctest --test-dir build --output-on-failure --parallel "$jobs" --timeout 600

echo "== Benchmark smoke runs (output in build/bench-smoke)"
BUILD_DIR=build bash bench/run.sh --smoke
/usr/bin/python3 bench/durability_bench.py --smoke --bin build/server/bloomgate \
  --out build/bench-smoke/durability.md | tail -n 1

# Sanitizer builds compile only the unit tests, at -O1 with line tables
# (-g1): enough for readable reports at a fraction of -O2 -g's build time.
sanitized_build() {
  local dir=$1 sanitizers=$2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DBLOOMGATE_SANITIZE="$sanitizers" >/dev/null
  cmake --build "$dir" --parallel "$jobs" --target "${unit_tests[@]}"
}

echo "== ThreadSanitizer: unit tests"
sanitized_build build-tsan thread
TSAN_OPTIONS="halt_on_error=1" ctest --test-dir build-tsan --output-on-failure \
  --parallel "$jobs" --timeout 600 -E '^e2e\.'

echo "== AddressSanitizer + UBSan: unit tests"
sanitized_build build-asan address,undefined
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  ctest --test-dir build-asan --output-on-failure --parallel "$jobs" --timeout 600 -E '^e2e\.'

# Its own clang tree (build-fuzz); one line per target, the log on failure.
echo "== libFuzzer targets, 20 s each (scripts/fuzz.sh)"
bash scripts/fuzz.sh --time 20 --jobs 2
