#!/usr/bin/env bash
# Installs the Debian 12 packages Bloomgate needs, skipping what is already
# there. Run as root. Usage: scripts/install-deps.sh [--test]
#   (no flag)  what building and running the server needs
#   --test     also what the test suite needs (GoogleTest, redis-cli, redis-py,
#              prometheus-redis-exporter, prometheus, redis-sentinel),
#              its benchmark smoke run (Google Benchmark, a stock redis-server
#              to compare against; see bench/README.md) and its fuzz run (clang
#              with libFuzzer; see scripts/fuzz.sh)
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config
          libboost-dev libboost-system-dev libxxhash-dev
          libspdlog-dev libfmt-dev libyaml-cpp-dev libssl-dev
          redis-tools
          # io-backend io_uring (server/net/uring_loop.cc)
          liburing-dev)
if [[ "${1:-}" == "--test" ]]; then
  # openssl: the TLS tests make their certificates with its CLI.
  packages+=(googletest libgtest-dev python3 python3-redis openssl
             libbenchmark-dev redis-server
             # libFuzzer (libclang_rt.fuzzer) is in libclang-rt-14-dev, which
             # clang-14 only recommends: --no-install-recommends skips it.
             clang libclang-rt-14-dev
             # tests/e2e/test_exporter.py scrapes us through Debian's exporter;
             # tests/e2e/test_metrics.py has Debian's prometheus scrape
             # metrics-port and queries it.
             prometheus-redis-exporter prometheus
             # tests/e2e/test_sentinel.py has three Debian Sentinels find
             # each other through a Bloomgate's pub/sub.
             redis-sentinel)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if (( ${#missing[@]} > 0 )); then
  echo "installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: installing packages needs root (run this script as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # Debian's prometheus package enables a daemon on port 9090 that
  # scrapes localhost; the tests start their own on a free port.
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    if [[ -d /run/systemd/system ]]; then
      systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    elif [[ -x /etc/init.d/prometheus ]]; then
      /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    fi
  fi
  # Debian's redis-server package starts a daemon on port 6379, Bloomgate's
  # default port (scripts/run.sh); the benchmarks start their own redis-server
  # on a free port, so stop and disable the one we just installed.
  if [[ " ${missing[*]} " == *" redis-server "* ]]; then
    if [[ -d /run/systemd/system ]]; then
      systemctl disable --now redis-server.service >/dev/null 2>&1 || true
    elif [[ -x /etc/init.d/redis-server ]]; then
      /etc/init.d/redis-server stop >/dev/null 2>&1 || true
    fi
  fi
  # Likewise Debian's redis-sentinel starts one on 26379 monitoring
  # 127.0.0.1:6379; the tests start their own on free ports.
  if [[ " ${missing[*]} " == *" redis-sentinel "* ]]; then
    if [[ -d /run/systemd/system ]]; then
      systemctl disable --now redis-sentinel.service >/dev/null 2>&1 || true
    elif [[ -x /etc/init.d/redis-sentinel ]]; then
      /etc/init.d/redis-sentinel stop >/dev/null 2>&1 || true
    fi
  fi
fi
