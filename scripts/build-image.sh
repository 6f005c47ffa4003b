#!/usr/bin/env bash
# Build the base image of the docker sandbox backend, clawgym/base:bookworm, without a registry.
#
#   scripts/build-image.sh            # build unless the image already exists
#   scripts/build-image.sh --force    # rebuild
#
# Needs root, a running Docker daemon and debootstrap (apt-get install -y debootstrap docker.io).
# It bootstraps a minimal Debian bookworm root filesystem (bash, coreutils, python3) from the
# configured Debian mirror (CLAWGYM_DEBIAN_MIRROR, default deb.debian.org) and imports it (pytest is
# in it because published graders run the tasks' unit tests with it):
#
#   debootstrap --variant=minbase --include=python3,procps,python3-pytest bookworm ROOTFS MIRROR
#   tar -C ROOTFS -c . | docker import --change 'CMD ["/bin/bash"]' - clawgym/base:bookworm
set -euo pipefail

IMAGE="${CLAWGYM_DOCKER_IMAGE:-clawgym/base:bookworm}"
SUITE="${CLAWGYM_DEBIAN_SUITE:-bookworm}"
MIRROR="${CLAWGYM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ "${1:-}" != "--force" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "image $IMAGE exists (use --force to rebuild)"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install -y debootstrap" >&2; exit 3; }
command -v docker >/dev/null || { echo "docker is missing: apt-get install -y docker.io" >&2; exit 3; }
[ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 3; }

ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/clawgym-rootfs.XXXXXX")"
trap 'rm -rf --one-file-system "$ROOTFS"' EXIT
start=$(date +%s)
debootstrap --variant=minbase --include=python3,procps,python3-pytest "$SUITE" "$ROOTFS" "$MIRROR"
# Trim what a sandbox never needs.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
       "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/*
# No package-manager state either: nothing is installed at run time (no registry is reachable), and an
# empty /var/lib keeps the image from mirroring host paths (the conformance suite probes for them).
rm -rf "$ROOTFS"/var/lib/*
# Password hashes are unreadable even to the sandbox's root: it has no capabilities and a read-only root.
chmod 000 "$ROOTFS"/etc/shadow "$ROOTFS"/etc/gshadow
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
  --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
  --message "clawgym sandbox base ($SUITE, debootstrap minbase + python3)" - "$IMAGE"
echo "built $IMAGE in $(( $(date +%s) - start ))s"
