#!/usr/bin/env bash
# Quick start: install what is missing, build (Release) and run the server on
# its default configuration (port 6379, loopback only). Extra arguments go to
# the server, e.g. scripts/run.sh --port 7000.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build -DBUILD_TESTING=OFF
exec ./build/server/bloomgate --config config/bloomgate.example.yaml "$@"
