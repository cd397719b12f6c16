#!/usr/bin/env bash
# Installs the Debian 12 packages Bloomgate needs, skipping what is already
# there. Run as root. Usage: scripts/install-deps.sh [--test]
#   (no flag)  what building and running the server needs
#   --test     also what the test suite needs (GoogleTest, redis-cli, redis-py,
#              prometheus-redis-exporter, prometheus, redis-sentinel),
#              its benchmark smoke run (Google Benchmark, a stock redis-server
#              to compare against; see bench/README.md) and its fuzz run (clang
#              with libFuzzer; see scripts/fuzz.sh), and Node.js with the npm
#              cluster clients tests/e2e/node/package-lock.json pins
set -euo pipefail
cd "$(dirname "$0")/.."

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
             redis-sentinel
             # tests/e2e/test_cluster_clients.py runs node-redis and ioredis
             # (tests/e2e/node/, installed below by npm ci) against a cluster.
             nodejs npm)
fi

# A package counts as there when installed or provided by an installed one
# (e.g. a newer nodejs package that bundles npm and conflicts with Debian's).
installed_or_provided() {
  if [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]; then
    return 0
  fi
  dpkg-query -W -f='${Status}|${Provides}\n' 2>/dev/null | awk -F'|' -v want="$1" '
    $1 == "install ok installed" {
      n = split($2, names, ", *")
      for (i = 1; i <= n; i++) { sub(/ .*/, "", names[i]); if (names[i] == want) found = 1 }
    }
    END { exit !found }'
}

missing=()
for package in "${packages[@]}"; do
  if ! installed_or_provided "$package"; then
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

# The npm packages of the cluster client tests, exactly as the lock pins them:
# npm ci only when node_modules was not made from this very lock (a stamp of
# the lock's hash), so a second run costs nothing and needs no network.
if [[ "${1:-}" == "--test" ]]; then
  node_dir=tests/e2e/node
  stamp=$node_dir/node_modules/.installed-lock.sha256
  lock_hash=$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$lock_hash" ]]; then
    echo "installing the npm packages of $node_dir (npm ci)"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_hash" >"$stamp"
  fi
fi
