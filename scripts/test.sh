#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs
#   1. every unit and end-to-end test (ctest, Release build);
#   2. the unit tests under ThreadSanitizer;
#   3. the unit tests (RESP parser included) under AddressSanitizer and
#      UndefinedBehaviorSanitizer.
# End-to-end tests start their own server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test

jobs=$(nproc)
echo "== Release build: unit and end-to-end tests"
bash scripts/build.sh build
ctest --test-dir build --output-on-failure --parallel "$jobs" --timeout 600

echo "== ThreadSanitizer: unit tests"
BUILD_TYPE=RelWithDebInfo bash scripts/build.sh build-tsan -DBLOOMGATE_SANITIZE=thread
TSAN_OPTIONS="halt_on_error=1" ctest --test-dir build-tsan --output-on-failure \
  --parallel "$jobs" --timeout 600 -E '^e2e\.'

echo "== AddressSanitizer + UBSan: unit tests"
BUILD_TYPE=RelWithDebInfo bash scripts/build.sh build-asan -DBLOOMGATE_SANITIZE=address,undefined
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  ctest --test-dir build-asan --output-on-failure --parallel "$jobs" --timeout 600 -E '^e2e\.'
