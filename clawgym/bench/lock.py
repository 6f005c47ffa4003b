"""The benchmark's lock file: every instance's content hash and the version derived from them.

`clawgym bench lock` writes it; `calibrate` compares it with the instances as they are now, so an
instance changed, added or removed without re-locking is caught (and results, which record the
version, can never silently mix two benchmarks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SpecError
from ..files.atomic import write_text_atomic
from .layout import LOCK_FILE, Instance, read_lock, series_of, version_of


def current_hashes(instances: list[Instance], jobs: int | None = None) -> dict[str, str]:
    """{instance name: content hash} of the instances as they are now (compiled in parallel)."""
    from ..compile.batch import compile_files

    results = compile_files([i.spec for i in instances], [0], jobs=jobs)
    problems = [p for r in results for p in r.problems]
    if problems:
        raise SpecError(problems)
    return {i.name: r.tasks[0].hash for i, r in zip(instances, results)}


def write_lock(root: Path, hashes: dict[str, str]) -> dict:
    """Write `root/bench.lock.json` and return what was written."""
    lock = {"version": version_of(hashes, series_of(root)), "instances": dict(sorted(hashes.items()))}
    write_text_atomic(root / LOCK_FILE, json.dumps(lock, indent=1) + "\n")
    return lock


@dataclass
class Staleness:
    """How the instances differ from the lock."""

    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    missing_lock: bool = False

    @property
    def stale(self) -> bool:
        return self.missing_lock or bool(self.changed or self.added or self.removed)

    def lines(self) -> list[str]:
        if self.missing_lock:
            return [f"the benchmark has no {LOCK_FILE}"]
        out = [f"changed since the lock: {', '.join(self.changed)}"] if self.changed else []
        out += [f"not in the lock (added): {', '.join(self.added)}"] if self.added else []
        out += [f"in the lock but gone (removed): {', '.join(self.removed)}"] if self.removed else []
        return out


def staleness(root: Path, hashes: dict[str, str], only: set[str] | None = None) -> Staleness:
    """Compare `hashes` (all instances, or those named in `only`) with the lock under `root`."""
    lock = read_lock(root)
    if not lock:
        return Staleness(missing_lock=True)
    locked = lock.get("instances", {})
    names = set(hashes) if only is None else only & set(hashes)
    out = Staleness(
        changed=sorted(n for n in names if n in locked and locked[n] != hashes[n]),
        added=sorted(n for n in names if n not in locked),
    )
    if only is None:
        out.removed = sorted(n for n in locked if n not in hashes)
    return out
