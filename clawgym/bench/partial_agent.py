"""Scripted partial agents: workspaces holding a known fraction of the reference solution's work.

Reference solutions are mostly one script, so "the first half of the steps" means little. What a
reference solution does is measured by its effects instead: every file it creates, changes or
deletes, and every simulated action it records (a sent message, a cron job). The effects an
instruction asks for (their path is mentioned in it or graded by a check) are the units of work,
ordered as the instruction asks for them (first mention; then by path). A partial agent at
fraction f performs the first floor(f x n) of the n units on a pristine workspace, exactly as the
reference did them, and nothing else. Effects nobody asked for (caches, scratch files) are left
out of every partial workspace.

If reward rises with f, the checks reward each piece of the requested work; if a partial
workspace already scores as much as the complete one, some requested output is not graded.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
SIDE_EFFECTS = ("outbox", "cron")


@dataclass(frozen=True)
class Effect:
    """One unit of the reference's work: `write` or `delete` a path, or a recorded side effect."""

    kind: str  # write | delete | outbox | cron
    path: str  # the workspace path, or "outbox #1", "cron #2"
    index: int = -1  # position in the trajectory's side-effect list

    def label(self) -> str:
        return f"{self.kind} {self.path}" if self.kind in ("write", "delete") else self.path


def _files(root: Path) -> dict[str, Path]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = Path(dirpath) / name
            out[full.relative_to(root).as_posix()] = full
    return out


def _same(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return a.read_bytes() == b.read_bytes() and os.access(a, os.X_OK) == os.access(b, os.X_OK)


def file_effects(pristine: Path, final: Path) -> list[Effect]:
    """Files the reference created or changed (`write`) and removed (`delete`), by path."""
    before, after = _files(pristine), _files(final)
    out = [Effect("write", p) for p in sorted(after) if p not in before or not _same(before[p], after[p])]
    return out + [Effect("delete", p) for p in sorted(before) if p not in after]


def _position(path: str, instruction: str) -> int | None:
    """Where the instruction first names `path` or, failing that, its closest named folder."""
    if (found := instruction.find(path)) >= 0:
        return found
    parts = path.split("/")
    for end in range(len(parts) - 1, 0, -1):
        if (found := instruction.find("/".join(parts[:end]) + "/")) >= 0:
            return found
    return None


def _graded(path: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatch(path, p)
        or fnmatch.fnmatch(path, p.rstrip("/") + "/**")
        or path == p
        or path.startswith(p.rstrip("/") + "/")
        for p in patterns
    )


def units_of_work(
    effects: list[Effect], trajectory: dict[str, Any], instruction: str, graded: list[str]
) -> tuple[list[Effect], list[Effect]]:
    """(requested units in the order asked for, incidental effects nobody asked for)."""
    ranked, incidental = [], []
    for e in effects:
        pos = _position(e.path, instruction)
        if pos is None and not _graded(e.path, graded):
            incidental.append(e)
        else:
            ranked.append((pos if pos is not None else len(instruction), e.path, e))
    units = [e for _, _, e in sorted(ranked, key=lambda r: (r[0], r[1]))]
    for kind in SIDE_EFFECTS:
        items = (trajectory.get("side_effects") or {}).get(kind) or []
        units += [Effect(kind, f"{kind} #{i + 1}", i) for i in range(len(items))]
    return units, incidental


def count_for(fraction: float, n: int) -> int:
    """Units a partial agent at `fraction` performs (floor, so 0.25 of 3 units is none)."""
    return int(fraction * n + 1e-9)


def build(
    pristine: Path, final: Path, target: Path, units: list[Effect], k: int, trajectory: dict[str, Any]
) -> dict[str, Any]:
    """Make `target` the pristine workspace plus the first `k` units, copied from the reference's
    final workspace; returns the trajectory the partial agent would have recorded."""
    shutil.copytree(pristine, target, symlinks=True)
    side: dict[str, list] = {}
    for e in units[:k]:
        if e.kind == "write":
            dest = target / e.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_symlink() or dest.exists():
                dest.unlink()
            shutil.copy2(final / e.path, dest, follow_symlinks=False)
        elif e.kind == "delete":
            (target / e.path).unlink(missing_ok=True)
        else:
            side.setdefault(e.kind, []).append(trajectory["side_effects"][e.kind][e.index])
    steps = [{"kind": "partial", "index": i, "description": e.label()} for i, e in enumerate(units[:k])]
    return {**trajectory, "steps": steps, "side_effects": side, "agent": {"type": "partial"}}


def monotone(rewards: dict[float, float]) -> bool:
    """Whether reward never drops as the fraction grows."""
    values = [rewards[f] for f in sorted(rewards)]
    return all(b >= a - 1e-9 for a, b in zip(values, values[1:]))
