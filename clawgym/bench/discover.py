"""Finding a benchmark's instances, picking some by name, and naming the version they make up.

Two layouts are read the same way, so one command runs both our benchmark and an imported one:
`specs/bench/<category>/<instance>/task.yaml` (see `layout.py`), and any folder whose instances
are `task.yaml` files in subfolders of any depth (what `clawgym import clawgym` writes). An
instance's key is its folder relative to the benchmark root: `category/name` in our layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ClawgymError, did_you_mean
from ..spec.task import Task
from .layout import TASK_FILE, Instance, read_lock, series_of, version_of


def discover(root: Path) -> list[Instance]:
    """Every folder under `root` holding a task.yaml, sorted by key (hidden folders skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise ClawgymError(f"no benchmark folder at {root}", hint="run from the repository root or pass --bench DIR")
    found = []
    for spec in sorted(root.rglob(TASK_FILE)):
        rel = spec.parent.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not rel.parts:
            continue
        category = rel.parts[0] if len(rel.parts) == 2 else ""
        found.append(Instance(spec.parent.name, category, spec.parent))
    if not found:
        raise ClawgymError(
            f"no instance (a folder with a {TASK_FILE}) under {root}",
            hint="pass --bench with a benchmark folder, e.g. one written by 'clawgym import clawgym'",
        )
    return sorted(found, key=lambda i: key_of(i, root))


def key_of(instance: Instance, root: Path) -> str:
    """`category/name` in our layout; the folder's path relative to the root in any layout."""
    return instance.folder.relative_to(root).as_posix()


def select(instances: list[Instance], root: Path, wanted: list[str]) -> list[Instance]:
    """The instances named by `wanted` (a key, a folder name, a category, or a path), in bench order.

    Each name must match something; a name matching several instances takes them all only when it
    is a key prefix (a category), otherwise it is ambiguous.
    """
    if not wanted:
        return list(instances)
    keys = {key_of(i, root): i for i in instances}
    chosen: dict[str, Instance] = {}
    for name in wanted:
        matches = _matches(name, keys, root)
        if not matches:
            hint = (
                did_you_mean(name, list(keys) + [i.name for i in instances])
                or "names are CATEGORY/NAME, NAME or CATEGORY; see the folders under the benchmark"
            )
            raise ClawgymError(f"no benchmark instance {name!r} under {root}", hint=hint)
        chosen.update(matches)
    return [i for k, i in keys.items() if k in chosen]


def _matches(name: str, keys: dict[str, Instance], root: Path) -> dict[str, Instance]:
    text = name.strip().rstrip("/")
    path = Path(text)
    if path.name == TASK_FILE:
        path = path.parent
    if path.exists():
        try:
            text = path.resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    if text in keys:
        return {text: keys[text]}
    by_prefix = {k: i for k, i in keys.items() if k.startswith(text + "/")}
    if by_prefix:
        return by_prefix
    by_name = {k: i for k, i in keys.items() if i.name == text}
    if len(by_name) > 1:
        raise ClawgymError(
            f"{name!r} names {len(by_name)} instances: {', '.join(sorted(by_name))}", hint="give CATEGORY/NAME"
        )
    return by_name


@dataclass(frozen=True)
class Version:
    """The benchmark version a set of instance hashes makes up, and whether the lock vouches for it."""

    version: str
    locked: bool  # the lock file exists and lists exactly these instances and hashes
    lock_version: str | None
    stale: bool  # a lock exists but the instances differ from it

    def to_dict(self) -> dict:
        return {"version": self.version, "locked": self.locked, "lock_version": self.lock_version, "stale": self.stale}


def version_info(root: Path, hashes: dict[str, str]) -> Version:
    """The lock's version when the lock matches `hashes` (keyed by `key_of`); else computed, unlocked."""
    lock = read_lock(root)
    # instances are named by folder name, as `clawgym bench lock` does, unless two folders share one
    short = {k.rsplit("/", 1)[-1]: h for k, h in hashes.items()}
    computed = version_of(short if len(short) == len(hashes) else hashes, series_of(root))
    if not lock:
        return Version(computed, False, None, False)
    listed = lock.get("instances") or {}
    if listed in (hashes, short):
        return Version(str(lock.get("version") or computed), True, lock.get("version"), False)
    return Version(computed, False, lock.get("version"), True)


def stale_lock_details(root: Path, hashes: dict[str, str]) -> list[str]:
    """What differs between the lock and the instances: lines such as 'changed productivity/x'."""
    listed = read_lock(root).get("instances") or {}
    if listed and not any("/" in k for k in listed):
        hashes = {k.rsplit("/", 1)[-1]: h for k, h in hashes.items()}
    out = [f"added {k}" for k in sorted(set(hashes) - set(listed))]
    out += [f"removed {k}" for k in sorted(set(listed) - set(hashes))]
    out += [f"changed {k}" for k in sorted(set(hashes) & set(listed)) if hashes[k] != listed[k]]
    return out


def compile_instances(instances: list[Instance], root: Path) -> dict[str, Task]:
    """Each instance compiled at seed 0 (a frozen instance has no other), by key; names must be unique."""
    from ..compile.batch import compile_many

    tasks = compile_many([i.spec for i in instances], [0])
    out = {key_of(i, root): t for i, t in zip(instances, tasks)}
    seen: dict[str, str] = {}
    for key, task in out.items():
        if task.name in seen:
            raise ClawgymError(
                f"two instances share the task name {task.name!r}: {seen[task.name]} and {key}",
                file=str(root / key / TASK_FILE),
                key="name",
                hint="results are keyed by task name; rename one of them",
            )
        seen[task.name] = key
    return out
