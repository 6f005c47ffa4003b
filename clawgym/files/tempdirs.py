"""Temporary folders named after the process that owns them, so the ones left behind by a
killed process (kill -9, a verifier past its timeout) are found and removed by the next run.

Work folders (workspaces, pristine copies) go to `work_root()`: `$CLAWGYM_WORKDIR` if set, else
/dev/shm when it is a writable memory file system with at least 2 GiB free (creating and removing
thousands of small files there is several times faster than on a disk), else the system temp folder.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path

from .safefs import remove_tree

log = logging.getLogger(__name__)

_NAME = re.compile(r"^clawgym-(?P<kind>[a-z]+)-(?P<pid>\d+)-")


SHM = Path("/dev/shm")
SHM_MIN_FREE = 2 << 30


@lru_cache(maxsize=None)
def _root_for(override: str | None) -> Path:
    if override:
        return Path(override)
    try:
        st = os.statvfs(SHM)
        if os.access(SHM, os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= SHM_MIN_FREE:
            return SHM
    except OSError:
        pass
    return Path(tempfile.gettempdir())


def work_root() -> Path:
    """Where work folders go (see the module docstring)."""
    return _root_for(os.environ.get("CLAWGYM_WORKDIR") or None)


def make_temp(kind: str) -> Path:
    """A fresh private folder `clawgym-<kind>-<pid>-XXXX` under `work_root()`."""
    return Path(tempfile.mkdtemp(prefix=f"clawgym-{kind}-{os.getpid()}-", dir=work_root()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(root: Path | None = None) -> int:
    """Remove clawgym temp folders whose owning process is gone; returns how many were removed.

    Never raises: whatever a dead trial left behind (any depth, unwritable folders, files that
    cannot be deleted) is removed as far as possible and the rest is logged.
    """
    try:
        if root is None:
            return sum(sweep_stale(r) for r in {work_root(), Path(tempfile.gettempdir())})
        removed = 0
        for entry in list(root.iterdir()):
            match = _NAME.match(entry.name)
            if match and entry.is_dir() and not entry.is_symlink() and not _alive(int(match["pid"])):
                problems = remove_tree(entry)
                if problems:
                    log.warning("could not remove all of the stale work folder %s: %s", entry, problems[0])
                removed += not os.path.lexists(entry)
        return removed
    except Exception as e:  # noqa: BLE001 - a stale folder must never stop a run from starting
        log.warning("sweeping stale work folders failed: %s", e)
        return 0
