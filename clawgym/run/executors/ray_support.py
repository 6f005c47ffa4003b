"""What the Ray executor needs beyond submitting trials: caps that hold across the whole cluster,
and the task files a node may lack.

- `Limiter`: one Ray actor per run (created by the driver, gone when it disconnects) counting live
  sandboxes and model requests of every trial on every node. A trial's `Slots` use a
  `ClusterSlot` as their semaphore: `acquire` asks the actor for a slot (granted at once or
  refused, never queued, so a cancelled trial leaves nothing behind) and retries with a short
  backoff until granted or the trial's own poll interval ends; `release` gives it back.
- Task files: checks that run scripts (`python`, `harbor_tests`, ...) read them next to the spec
  (`task.task_dir`). The driver packs exactly the graded files of every task (`pack_task_files`:
  a tar per task folder and its digest, put in the object store once); a node whose own copy is
  missing or differs unpacks the driver's into a private folder and runs the trial with that
  as its task folder (`local_task`).
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import ClawgymError
from ...files import safefs
from ...files.tempdirs import make_temp
from ...spec.task import Task

MAX_SHIPPED_BYTES = 64 << 20  # per task folder
BACKOFF_S = (0.005, 0.01, 0.02, 0.05, 0.1)


class LimiterState:
    """The counting behind the Ray actor (kept apart so it can be tested and reused without Ray)."""

    def __init__(self, limits: dict[str, int | None]):
        self.limits = {k: v for k, v in limits.items() if v}
        self.held: dict[str, int] = {k: 0 for k in self.limits}
        self.most: dict[str, int] = {k: 0 for k in self.limits}

    def acquire(self, kind: str) -> bool:
        limit = self.limits.get(kind)
        if limit is None:
            return True
        if self.held[kind] >= limit:
            return False
        self.held[kind] += 1
        self.most[kind] = max(self.most[kind], self.held[kind])
        return True

    def release(self, kind: str) -> None:
        if kind in self.held and self.held[kind] > 0:
            self.held[kind] -= 1

    def stats(self) -> dict[str, Any]:
        return {"limits": dict(self.limits), "held": dict(self.held), "most": dict(self.most)}


def make_limiter(ray: Any, limits: dict[str, int | None]) -> Any:
    """Start the run's limiter actor (no CPU reserved; on the driver's node)."""
    actor = ray.remote(num_cpus=0, max_concurrency=64)(LimiterState)
    return actor.remote(limits)


class ClusterSlot:
    """A semaphore (for `trial_controls.Slots`) whose count lives in the limiter actor."""

    def __init__(self, limiter: Any, kind: str):
        self.limiter, self.kind = limiter, kind

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        import ray

        deadline = None if timeout is None else time.monotonic() + timeout
        tries = 0
        while True:
            if ray.get(self.limiter.acquire.remote(self.kind)):
                return True
            if not blocking or (deadline is not None and time.monotonic() >= deadline):
                return False
            time.sleep(BACKOFF_S[min(tries, len(BACKOFF_S) - 1)])
            tries += 1

    def release(self) -> None:
        import ray

        ray.get(self.limiter.release.remote(self.kind))


# ----------------------------------------------------------------------------- task files
def _graded_paths(task: Task) -> list[str]:
    """The paths (relative to the task folder) of the files its checks grade with."""
    return sorted({key.split(":", 1)[1] for key in task.extra_hashed if ":" in key})


def _pack(root: Path, rels: list[str]) -> tuple[str, bytes]:
    """(digest, tar bytes) of `rels` under `root`: regular files and folders only, no links."""
    buf, h, total = io.BytesIO(), hashlib.sha256(), 0
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in rels:
            base = root / rel
            entries = (
                [(rel, base)]
                if base.is_file()
                else [
                    (f"{rel}/{e.rel}" if rel not in (".", "") else e.rel, base / e.rel)
                    for e in safefs.walk(base, safefs.GRADING_LIMITS)
                    if e.kind == "file"
                ]
            )
            for name, path in entries:
                data = path.read_bytes()
                total += len(data)
                if total > MAX_SHIPPED_BYTES:
                    raise ClawgymError(
                        f"the graded files of {root} pass {MAX_SHIPPED_BYTES >> 20} MiB",
                        hint="keep grading scripts small, or give every node the task files",
                    )
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o755 if os.access(path, os.X_OK) else 0o644
                tar.addfile(info, io.BytesIO(data))
                h.update(f"{name}\0{info.mode:o}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest(), buf.getvalue()


def pack_task_files(tasks: list[Task]) -> dict[str, tuple[str, list[str], bytes]]:
    """{task folder: (digest, graded paths, tar bytes)} for every task that grades with files."""
    out: dict[str, tuple[str, list[str], bytes]] = {}
    for task in tasks:
        rels = _graded_paths(task)
        if task.task_dir and rels and task.task_dir not in out:
            digest, data = _pack(Path(task.task_dir), rels)
            out[task.task_dir] = (digest, rels, data)
    return out


_local_lock = threading.Lock()
_unpacked: dict[str, Path] = {}


def local_task(task: Task, bundle: tuple[str, list[str], bytes] | None) -> Task:
    """`task` with a task folder this node has: its own when it holds the same graded files, else
    the driver's copy unpacked into a private folder (once per node process and digest)."""
    if bundle is None:
        return task
    digest, rels, data = bundle
    with _local_lock:
        if digest in _unpacked:
            return replace(task, task_dir=str(_unpacked[digest]))
        here = Path(task.task_dir)
        try:
            same = here.is_dir() and _pack(here, rels)[0] == digest
        except (OSError, ClawgymError):
            same = False
        if same:
            _unpacked[digest] = here
            return task
        folder = make_temp("taskfiles") / "task"
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(folder, filter="data")
        _unpacked[digest] = folder
        return replace(task, task_dir=str(folder))
