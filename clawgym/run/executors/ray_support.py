"""What the Ray executor needs beyond submitting trials: caps that hold across the whole cluster,
and the task files a node may lack.

- `Limiter`: one Ray actor per run (created by the driver, gone when it disconnects) counting live
  sandboxes and model requests of every trial on every node. A trial's `Slots` use a
  `ClusterSlot` as their semaphore: `acquire` asks the actor for a slot (granted at once or
  refused, never queued, so a cancelled trial leaves nothing behind) and retries with a short
  backoff until granted or the trial's own poll interval ends; `release` gives it back. Slots are
  leased to the worker process holding them, which renews them while it holds any: the slots of
  a worker or node that died come back after the lease (`LimiterState`).
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
import socket
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


LEASE_S = 30.0  # a holder that has not renewed its slots for this long is gone: they are taken back


class LimiterState:
    """The counting behind the Ray actor (kept apart so it can be tested and reused without Ray).

    Slots are leased to a holder (a worker process, `holder_id()`), which renews its leases while it
    holds any (`ClusterSlot` does, every third of `lease_s`). A holder that stops renewing (its
    process or node died) loses its slots after `lease_s`, so the cap does not shrink for the rest
    of the run; a release that comes after its lease was taken back is ignored."""

    def __init__(self, limits: dict[str, int | None], lease_s: float = LEASE_S, clock: Any = time.monotonic):
        self.limits = {k: v for k, v in limits.items() if v}
        self.held: dict[str, int] = {k: 0 for k in self.limits}
        self.most: dict[str, int] = {k: 0 for k in self.limits}
        self.lease_s, self.clock = float(lease_s), clock
        self.holders: dict[str, dict[str, int]] = {}  # holder -> kind -> slots held
        self.seen: dict[str, float] = {}  # holder -> last acquire or renewal
        self.reclaimed: dict[str, int] = {k: 0 for k in self.limits}

    def acquire(self, kind: str, holder: str = "") -> bool:
        limit = self.limits.get(kind)
        if limit is None:
            return True
        self._expire()
        if self.held[kind] >= limit:
            return False
        self.held[kind] += 1
        self.most[kind] = max(self.most[kind], self.held[kind])
        mine = self.holders.setdefault(holder, {})
        mine[kind] = mine.get(kind, 0) + 1
        self.seen[holder] = self.clock()
        return True

    def release(self, kind: str, holder: str = "") -> None:
        mine = self.holders.get(holder, {})
        if mine.get(kind, 0) > 0 and self.held.get(kind, 0) > 0:
            mine[kind] -= 1
            self.held[kind] -= 1
            if not any(mine.values()):
                self.holders.pop(holder, None)
                self.seen.pop(holder, None)

    def renew(self, holder: str) -> None:
        if holder in self.holders:
            self.seen[holder] = self.clock()

    def _expire(self) -> None:
        now = self.clock()
        for holder in [h for h, t in self.seen.items() if now - t > self.lease_s]:
            for kind, count in self.holders.pop(holder, {}).items():
                self.held[kind] = max(0, self.held[kind] - count)
                self.reclaimed[kind] += count
            self.seen.pop(holder, None)

    def stats(self) -> dict[str, Any]:
        self._expire()
        return {
            "limits": dict(self.limits),
            "held": dict(self.held),
            "most": dict(self.most),
            "reclaimed": dict(self.reclaimed),
        }


def make_limiter(ray: Any, limits: dict[str, int | None], lease_s: float = LEASE_S) -> Any:
    """Start the run's limiter actor (no CPU reserved; on the driver's node)."""
    actor = ray.remote(num_cpus=0, max_concurrency=64)(LimiterState)
    return actor.remote(limits, lease_s)


def holder_id() -> str:
    """This process, as the limiter knows it: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Renewer:
    """One thread per process that renews this process's leases while it holds slots of a limiter."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Any, tuple[int, float]] = {}  # limiter -> (slots this process holds, renewal period)
        self._thread: threading.Thread | None = None

    def add(self, limiter: Any, n: int, every: float) -> None:
        with self._lock:
            count = self._held.get(limiter, (0, every))[0] + n
            if count > 0:
                self._held[limiter] = (count, every)
            else:
                self._held.pop(limiter, None)
            if self._held and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._loop, name="clawgym-lease-renewer", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                limiters = list(self._held)
                if not limiters:
                    self._thread = None
                    return
                every = min(period for _, period in self._held.values())
            for limiter in limiters:
                try:
                    limiter.renew.remote(holder_id())
                except Exception:  # noqa: BLE001 - the run is ending: nothing to renew
                    pass
            time.sleep(every)


_RENEWER = _Renewer()


class ClusterSlot:
    """A semaphore (for `trial_controls.Slots`) whose count lives in the limiter actor."""

    def __init__(self, limiter: Any, kind: str, lease_s: float = LEASE_S):
        self.limiter, self.kind, self.lease_s = limiter, kind, lease_s

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        import ray

        deadline = None if timeout is None else time.monotonic() + timeout
        tries = 0
        while True:
            if ray.get(self.limiter.acquire.remote(self.kind, holder_id())):
                _RENEWER.add(self.limiter, 1, self.lease_s / 3)
                return True
            if not blocking or (deadline is not None and time.monotonic() >= deadline):
                return False
            time.sleep(BACKOFF_S[min(tries, len(BACKOFF_S) - 1)])
            tries += 1

    def release(self) -> None:
        import ray

        try:
            ray.get(self.limiter.release.remote(self.kind, holder_id()))
        finally:
            _RENEWER.add(self.limiter, -1, self.lease_s / 3)


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
