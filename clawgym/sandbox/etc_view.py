"""The sandbox's /etc as one prepared folder, bound read-only with a single mount.

A sandbox sees a minimal /etc: a few host entries (the dynamic linker's cache, alternatives, CA
certificates, Python's site files...) and generated passwd, group, hostname, hosts and, with a
network, resolv.conf. Bound entry by entry that is some fifteen bind mounts, each of which bwrap
makes read-only after reading the mount table again (about 1.2 ms per sandbox start here). Instead
the same entries are copied once into a folder (files by content, folders with their symlinks as
links, so what a sandbox sees is unchanged) that every sandbox binds at /etc.

The folder is a cache shared by the runs of this user: `clawgym-etc-<hash>` in /dev/shm (else the
system temp folder; never a run's work folder, which is left empty), the hash covering what it
holds (the generated files and the host entries' identity: inode, size, mtime), so a changed host
entry gives a new folder. It is built under a temporary name and renamed into place, used only when
it belongs to this user, nobody else can write to it and every sandbox uid can reach it, and never
removed by the sweep of stale work folders. Where it cannot be made, sandboxes bind entry by entry.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Sequence

from ..files import safefs
from ..files.tempdirs import SHM
from .host import owned_privately

log = logging.getLogger(__name__)
PREFIX = "clawgym-etc-"
_lock = threading.Lock()
_made: dict[tuple, Path | None] = {}


def host_entries(names: Sequence[str]) -> list[str]:
    """The `names` (relative to /etc) that exist on the host."""
    return [name for name in names if os.path.exists("/etc/" + name)]


def etc_folder(names: Sequence[str], generated: Sequence[tuple[str, str]]) -> Path | None:
    """A world-readable folder holding the host's /etc `names` and the `generated` (/etc/NAME, text)
    files, made once per content; None when it cannot be made (sandboxes then bind entry by entry)."""
    key = (tuple(names), tuple(generated))
    with _lock:
        if key not in _made:
            try:
                _made[key] = _ensure(names, generated)
            except OSError as exc:
                log.warning("cannot prepare the sandbox /etc (binding its entries one by one): %s", exc)
                _made[key] = None
        return _made[key]


def _fingerprint(names: Sequence[str], generated: Sequence[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name in names:
        st = os.stat("/etc/" + name)
        digest.update(f"{name}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    for path, text in generated:
        digest.update(f"{path}\0{text}\0".encode())
    return digest.hexdigest()[:20]


def _usable(folder: Path) -> bool:
    """Ours, and nobody else can change it or what is in it (the top level is checked; we made the rest)."""
    return owned_privately(folder) and folder.is_dir()


def cache_root() -> Path | None:
    """Where the folder goes: a folder every uid can walk through (sandbox uids resolve it)."""
    for root in (SHM, Path(tempfile.gettempdir())):
        try:
            if os.access(root, os.W_OK | os.X_OK) and all(p.stat().st_mode & 0o001 for p in (root, *root.parents)):
                return root
        except OSError:
            continue
    return None


def _ensure(names: Sequence[str], generated: Sequence[tuple[str, str]]) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    target = root / f"{PREFIX}{_fingerprint(names, generated)}"
    if _usable(target):
        return target
    if os.path.lexists(target):  # someone else's, or broken: not ours to use or remove
        log.warning("not using %s for the sandbox /etc: it is not this user's own", target)
        return None
    build = Path(tempfile.mkdtemp(prefix=f"clawgym-etcbuild-{os.getpid()}-", dir=root))  # swept if left
    try:
        for name in names:
            source, dest = Path("/etc", name), build / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, dest, symlinks=True)
            else:
                shutil.copyfile(source, dest)
        for path, text in generated:
            (build / Path(path).relative_to("/etc")).write_text(text)
        for folder, dirs, files in os.walk(build):
            os.chmod(folder, 0o755)
            for name in files:
                if not os.path.islink(os.path.join(folder, name)):
                    os.chmod(os.path.join(folder, name), 0o644)
        try:
            os.rename(build, target)
        except OSError:  # another process made it first
            if not _usable(target):
                raise
    finally:
        if build.exists():
            safefs.remove_tree(build)
    return target
