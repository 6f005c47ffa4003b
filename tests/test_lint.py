"""The code passes the linter configured in pyproject.toml ([tool.ruff]): unused or undefined
names, syntax errors and bug-prone patterns fail the test run, with ruff's own report."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _ruff() -> list[str] | None:
    try:
        import ruff  # noqa: F401
        return [sys.executable, "-m", "ruff"]
    except ImportError:
        found = shutil.which("ruff")
        return [found] if found else None


def test_ruff_finds_nothing():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (scripts/setup.sh installs it)")
    result = subprocess.run([*ruff, "check", "--output-format", "concise", "clawgym", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
