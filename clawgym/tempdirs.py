"""Temporary folders named after the process that owns them, so the ones left behind by a
killed process (kill -9, a verifier past its timeout) are found and removed by the next run."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

_NAME = re.compile(r"^clawgym-(?P<kind>[a-z]+)-(?P<pid>\d+)-")


def make_temp(kind: str) -> Path:
    """A fresh private folder `clawgym-<kind>-<pid>-XXXX` in the system temp folder."""
    return Path(tempfile.mkdtemp(prefix=f"clawgym-{kind}-{os.getpid()}-"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(root: Path | None = None) -> int:
    """Remove clawgym temp folders whose owning process is gone; returns how many were removed."""
    root = Path(root or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for entry in entries:
        match = _NAME.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink() and not _alive(int(match["pid"])):
            shutil.rmtree(entry, ignore_errors=True)
            removed += not entry.exists()
    return removed
