#!/usr/bin/env bash
# Builds docker/Dockerfile's image with Debian's podman: no Docker daemon and
# no container registry. The Dockerfile's base images (debian:12 and
# debian:12-slim) are one Debian 12 root filesystem made here with
# debootstrap and imported into podman's local storage; the build then runs
# with --pull=never, so nothing is fetched but Debian packages (through the
# same apt mirror this machine uses).
#
# Usage (as root, from anywhere):  bash docker/podman-build.sh [IMAGE_TAG]
#   IMAGE_TAG   default "bloomgate"
#   BASE_ROOTFS where the Debian 12 tree is made (default
#               /var/tmp/bloomgate-debian12-rootfs); kept, so later runs skip it
#   REBUILD_BASE=1 makes the base image again
# Then: podman run -p 6379:6379 -v bloomgate-data:/data -e BLOOMGATE_PASSWORD=... bloomgate
#
# --isolation=chroot runs the RUN steps without user namespaces or a runtime
# like runc/crun, which works inside a container or a VM without them. The
# build stage compiles the server (no tests): with the machine's other work
# it is CPU-heavy, hence nice -n 19.
set -euo pipefail
cd "$(dirname "$0")/.."
image="${1:-bloomgate}"
rootfs="${BASE_ROOTFS:-/var/tmp/bloomgate-debian12-rootfs}"

need=()
for tool in podman:podman debootstrap:debootstrap; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool##*:}")
done
if (( ${#need[@]} > 0 )); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The apt mirror this machine uses (deb822 or one-line sources), so the base
# image installs from the same place; debootstrap's default otherwise.
mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
if [[ -z "$mirror" ]]; then
  mirror="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list \
            2>/dev/null || true)"
fi

if [[ "${REBUILD_BASE:-0}" == 1 ]] || ! podman image exists localhost/debian:12; then
  if [[ ! -x "$rootfs/bin/bash" ]]; then
    echo "podman-build: making a Debian 12 root filesystem in $rootfs (debootstrap)" >&2
    rm -rf "$rootfs"
    nice -n 19 debootstrap --variant=minbase bookworm "$rootfs" ${mirror:+"$mirror"}
  fi
  echo "podman-build: importing it as localhost/debian:12 and localhost/debian:12-slim" >&2
  tar -C "$rootfs" -c . | podman import - localhost/debian:12
  podman tag localhost/debian:12 localhost/debian:12-slim
fi

nice -n 19 podman build --isolation=chroot --pull=never -f docker/Dockerfile -t "$image" .
echo "podman-build: built $image; run it with" >&2
echo "  podman run -p 6379:6379 -v bloomgate-data:/data -e BLOOMGATE_PASSWORD=... $image" >&2
