#!/usr/bin/env bash
# Configures the clang ASan + UBSan tree (default build-fuzz) that both
# scripts/fuzz.sh (libFuzzer targets) and scripts/test.sh (unit tests under
# ASan + UBSan) build in, with one set of flags, so neither makes the other
# recompile. -O1 with line tables, as the TSan build in scripts/test.sh:
# enough for readable reports at a fraction of -O2 -g's build time.
#   scripts/clang_tree.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B "${1:-build-fuzz}" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DBLOOMGATE_FUZZ=ON >/dev/null
