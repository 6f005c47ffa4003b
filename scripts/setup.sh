#!/usr/bin/env bash
# Install everything ClawGym needs on a Debian/Ubuntu machine: bubblewrap for the local sandbox,
# then this package with its test extras. Safe to run again; skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import clawgym, pytest" >/dev/null 2>&1 || [ "${CLAWGYM_REINSTALL:-0}" = 1 ]; then
  echo "installing clawgym (editable) with test extras"
  "$PYTHON" -m pip install -q -e '.[test]'
fi
