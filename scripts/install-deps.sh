#!/usr/bin/env bash
# Installs the Debian 12 packages Bloomgate needs, skipping what is already
# there. Run as root. Usage: scripts/install-deps.sh [--test]
#   (no flag)  what building and running the server needs
#   --test     also what the test suite needs (GoogleTest, redis-cli, redis-py)
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config
          libboost-dev libboost-system-dev libxxhash-dev
          libspdlog-dev libfmt-dev libyaml-cpp-dev
          redis-tools)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(googletest libgtest-dev python3 python3-redis)
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
fi
