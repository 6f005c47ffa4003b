"""The code passes the linter and the type checker configured in pyproject.toml ([tool.ruff],
[tool.mypy]): unused or undefined names, syntax errors, bug-prone patterns and type errors in the
typed core fail the test run, with the tool's own report."""

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
    result = subprocess.run(
        [*ruff, "check", "--output-format", "concise", "clawgym", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_typed_core():
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (scripts/setup.sh installs it)")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


FORMATTED = ["clawgym", "tests", "benchmarks"]  # everything ruff looks at (fixtures are excluded in pyproject.toml)


def test_the_formatted_modules_stay_formatted():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (scripts/setup.sh installs it)")
    result = subprocess.run([*ruff, "format", "--check", *FORMATTED], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr + "\nrun: ruff format " + " ".join(FORMATTED)
