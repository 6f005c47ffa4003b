"""Shared fixtures: skip sandbox-dependent tests with a reason when bubblewrap cannot run."""

from __future__ import annotations

import shutil
from pathlib import Path
import subprocess

import pytest

# Fixture tasks ship their own test suites (agents must make them pass); they are data, not our tests.
collect_ignore_glob = ["fixtures/*"]


def _bwrap_works() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {probe.stderr.decode().strip()}"
    return None


BWRAP_PROBLEM = _bwrap_works()


@pytest.fixture
def bwrap() -> None:
    """Use in tests that run a local sandbox."""
    if BWRAP_PROBLEM:
        pytest.skip(BWRAP_PROBLEM)


FIXTURE_LIB = Path(__file__).parent / "fixtures" / "lib"


@pytest.fixture
def lib(tmp_path, monkeypatch, bwrap):
    """A private copy of the fixture library (without its broken specs), as the current directory."""
    root = tmp_path / "lib"
    shutil.copytree(FIXTURE_LIB, root, ignore=shutil.ignore_patterns("bad"))
    monkeypatch.chdir(root)
    return root
