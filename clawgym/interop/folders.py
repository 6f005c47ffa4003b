"""Small pieces every import and export shares: task names from foreign ids, and atomic folder swaps."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_NAME_JUNK = re.compile(r"[^a-z0-9-]+")


def spec_name(text: str) -> str:
    """A task name (lowercase letters, digits, hyphens, at most 64) for a foreign task id or folder name."""
    name = _NAME_JUNK.sub("-", text.lower().replace("_", "-").replace("/", "-")).strip("-")[:64].strip("-")
    return name or "task"


def staging(target: Path) -> Path:
    """An empty folder beside `target` to write into before `swap_in` (any leftover removed)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def swap_in(tmp: Path, target: Path) -> None:
    """Replace `target` by the finished folder `tmp`; a reader sees the old folder or the new one."""
    old = target.with_name(f".{target.name}.{os.getpid()}.old")
    if target.exists():
        target.rename(old)
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)
