"""Host resources a root-run local sandbox claims: a private uid, a memory cgroup, pid-1 kills.

Kept apart from the bubblewrap command line in `bwrap_command.py`; every function here is best effort
and safe to call concurrently from many sandboxes.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import secrets
import select
import signal
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ..files import safefs
from ..errors import InfraError

log = logging.getLogger(__name__)


def kill_pid1(pid: int, parent: int) -> bool:
    """SIGKILL the sandbox's pid 1 (so its whole pid namespace) if it still is bwrap's child."""
    fd = None
    try:
        fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        with open(f"/proc/{pid}/stat", "rb") as f:
            if int(f.read().rsplit(b")", 1)[1].split()[1]) != parent:
                return False
        signal.pidfd_send_signal(fd, signal.SIGKILL) if fd is not None else os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, FileNotFoundError):
        return True  # already gone
    except OSError:
        return False
    finally:
        if fd is not None:
            os.close(fd)


def wait_exit(proc: Any, timeout: float) -> None:
    """`proc.wait(timeout)` (raising subprocess.TimeoutExpired), but woken by the kernel when the
    process exits (a pidfd) rather than by Popen's polling, whose first naps add a millisecond to
    every sandbox exec whose bwrap is still exiting when its output ends."""
    if proc.returncode is None and hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            fd = None
        if fd is not None:
            try:
                select.select([fd], [], [], max(0.0, timeout))
            finally:
                os.close(fd)
    proc.wait(timeout)


def kill_init(pid: int) -> None:
    """SIGKILL `pid` if it is the init of a pid namespace of its own (a sandbox's pid 1)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            nspid = next((line.split()[1:] for line in f if line.startswith(b"NSpid:")), [])
        if len(nspid) > 1 and nspid[-1] == b"1":
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass  # gone already


def claim_uid(base: int, count: int) -> tuple[int, socket.socket]:
    start = secrets.randbelow(count)
    for i in range(count):
        uid, sock = base + (start + i) % count, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(f"\0clawgym-sandbox-uid-{uid}")
            return uid, sock
        except OSError:
            sock.close()
    raise InfraError(f"no free sandbox uid in {base}..{base + count - 1}")


def owned_privately(path: Path) -> bool:
    """`path` (not followed if a link) is this user's and nobody else can write to it: what it holds
    may be executed or shown to sandboxes as ours."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return not stat.S_ISLNK(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def searchable(path: Path, uid: int) -> bool:
    """Can `uid` walk down to `path` (mode bits only)?"""
    for parent in path.parents:
        st = parent.stat()
        bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == uid else stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


SWEEP_EVERY_S = 60.0
_last_sweep: dict[Path, float] = {}
_sweep_lock = threading.Lock()


def cgroup_parent() -> tuple[Path, tuple[str, str, str, str]] | None:
    """Where this process makes memory cgroups (looked up once; forks keep the answer)."""
    return _cgroup_parent()


@functools.lru_cache(maxsize=1)
def _cgroup_parent() -> tuple[Path, tuple[str, str, str, str]] | None:
    """Where this process's memory cgroups go, and the files that set a limit (v1 or v2), once."""
    v1, v2 = None, None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, rel = line.split(":", 2)
        v1 = rel if "memory" in ctrls.split(",") else v1
        v2 = rel if ctrls == "" else v2
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        kind, opts = f[f.index("-") + 1], f[f.index("-") + 3].split(",")
        if kind == "cgroup" and v1 is not None and "memory" in opts:
            rel, files = v1, ("memory.limit_in_bytes", "{limit}", "memory.memsw.limit_in_bytes", "{limit}")
        elif kind == "cgroup2" and v1 is None and v2 is not None:
            rel, files = v2, ("memory.max", "{limit}", "memory.swap.max", "0")
        else:
            continue
        return Path(f[4], os.path.relpath(rel, f[3])), files
    return None


def memory_cgroup(name: str, limit: int) -> Path | None:
    """Create a memory cgroup below our own (v1, or v2 where the controller is delegated)."""
    path = None
    try:
        found = _cgroup_parent()
        if found is None:
            return None
        parent, files = found
        now = time.monotonic()
        with _sweep_lock:
            due = now - _last_sweep.get(parent, -SWEEP_EVERY_S) >= SWEEP_EVERY_S
            if due:
                _last_sweep[parent] = now
        if due:  # not per sandbox: with hundreds live, sweeping each time costs O(n^2)
            sweep(parent)
        path = parent / name
        path.mkdir()
        (path / files[0]).write_text(files[1].format(limit=limit))
        try:
            (path / files[2]).write_text(files[3].format(limit=limit))
        except OSError:
            pass
        return path
    except (OSError, ValueError):
        if path is not None and path.is_dir():
            path.rmdir()
    return None


_worker_confined = False  # this process sits in a memory cgroup of its own (see `confine_worker`)


def confine_worker(kind: str, limit: int) -> None:
    """Process-pool initializer: as root, put this worker in a memory cgroup of its own bounded by
    `limit` bytes, so sandboxes it starts can share it (`worker_sandbox`) instead of each paying a
    cgroup move per exec (a cgroup v1 move waits for an RCU grace period and blocks every fork on
    the machine meanwhile)."""
    global _worker_confined
    _worker_confined = os.geteuid() == 0 and confine(kind, limit)


def sweep_worker_cgroups(wait_s: float = 3.0) -> None:
    """Remove the memory cgroups of confined workers (and verifier servers) that have ended. A
    worker's verifier server leaves shortly after the worker (when its socket closes), so this
    waits up to `wait_s` for what is still busy."""
    found = cgroup_parent()
    if found is None:
        return
    deadline = time.monotonic() + wait_s
    while True:
        sweep(found[0])
        if not any(_ended(g) for g in found[0].glob("clawgym-*-*")) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _ended(group: Path) -> bool:
    """Whether a worker's or verifier's cgroup belongs to a process that is gone."""
    if group.name.startswith("clawgym-sandbox-"):
        return False
    try:
        os.kill(int(group.name.rsplit("-", 1)[1]), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        pass
    return False


def worker_confined() -> bool:
    return _worker_confined


def worker_sandbox(spec: dict | None) -> dict | None:
    """`spec` for a local sandbox started by a confined worker: it shares the worker's memory cgroup
    (each process still has its address-space limit). Other backends and explicit choices are kept."""
    if not _worker_confined or (spec is not None and (spec.get("type", "local") != "local" or "own_cgroup" in spec)):
        return spec
    return {**(spec or {"type": "local"}), "own_cgroup": False}


def confine(kind: str, limit: int) -> bool:
    """Move this process into a memory cgroup of its own (`clawgym-<kind>-<pid>`) bounded by `limit`
    bytes, where one can be made; True if it did. Its children inherit it without a cgroup move."""
    cgroup_parent()
    group = memory_cgroup(f"clawgym-{kind}-{os.getpid()}", limit)
    if group is None:
        return False
    try:
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return True
    except OSError:
        return False


def sweep(parent: Path) -> None:
    """Remove cgroups left by sandboxes whose process died without close() (their uid is free) and
    by verifier servers and confined workers that are gone (with what they made inside theirs)."""
    for old in parent.glob("clawgym-*-*"):  # clawgym-<kind>-<pid>: verifier servers and confined workers
        if old.name.startswith("clawgym-sandbox-"):
            continue
        try:
            os.kill(int(old.name.rsplit("-", 1)[1]), 0)
        except ProcessLookupError:
            sweep(old)  # a worker's verifier server and sandboxes made their cgroups inside its own
            _kill_members(old)  # what its owner left running when it died (a pid 1 stuck starting)
            try:
                old.rmdir()
            except OSError:
                pass
        except (OSError, ValueError):
            continue
    for old in parent.glob("clawgym-sandbox-*-*"):
        try:
            uid = int(old.name.split("-")[2])
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.bind(f"\0clawgym-sandbox-uid-{uid}")
                old.rmdir()
        except (OSError, ValueError):
            continue


def _kill_members(group: Path) -> None:
    """SIGKILL every process still in `group`, a cgroup whose owner is gone."""
    try:
        pids = (group / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        try:
            if not (group / "cgroup.procs").read_text().strip():
                return
        except OSError:
            return
        time.sleep(0.01)


OWNER_WALK_LIMITS = safefs.TreeLimits(
    entries=10**8, depth=safefs.GRADING_LIMITS.depth, apparent_bytes=1 << 62, data_bytes=1 << 62
)


def walk_entries(root: Path) -> Iterator[tuple[int | None, str, os.stat_result]]:
    """(dir_fd, name, lstat) for `root` itself and everything below it, never following links and
    never recursing. Entries nested deeper than the grading limit are skipped (logged): they
    belong to a trial whose work folder is removed next, and the workspace fails grading anyway."""
    yield None, str(root), os.stat(root, follow_symlinks=False)
    try:
        for entry in safefs.walk(root, OWNER_WALK_LIMITS):
            yield entry.dir_fd, entry.name, entry.st
    except safefs.TreeTooLarge as exc:
        log.warning("not walking all of %s: %s", root, exc)


REAP_TRIES_S = 2.0


class _Background:
    """A queue of small jobs run by one thread that exists only while there is work (so nothing
    lingers after a run), reset in a forked child (whose parent keeps its own queue)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.jobs: list[Callable[[], bool]] = []  # a job returns True when done, False to be retried
        self.thread: threading.Thread | None = None
        self.idle = threading.Event()
        self.idle.set()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.lock = threading.Lock()
        self.jobs, self.thread = [], None
        self.idle = threading.Event()
        self.idle.set()

    def add(self, job: Callable[[], bool]) -> None:
        with self.lock:
            self.jobs.append(job)
            self.idle.clear()
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.lock:
                jobs, self.jobs = self.jobs, []
                if not jobs:
                    self.thread = None
                    self.idle.set()
                    return
            retry = []
            for job in jobs:
                try:
                    if not job():
                        retry.append(job)
                except Exception as exc:  # noqa: BLE001 - one failing tear-down must not stop the rest
                    log.warning("sandbox tear-down failed: %s", exc)
            if retry:
                time.sleep(0.01)
                with self.lock:
                    self.jobs[:0] = retry

    def wait(self, timeout: float) -> bool:
        return self.idle.wait(timeout)


_teardowns = _Background("clawgym-teardown")
_cgroups = _Background("clawgym-cgroup-reaper")


def release_cgroup(cgroup: Path | None, uid_sock: socket.socket | None) -> None:
    """Remove a closed sandbox's memory cgroup, then free its uid. Its tasks leave the cgroup a few
    milliseconds after they are reaped: when the first try finds it busy, a background thread keeps
    trying (for REAP_TRIES_S) so that closing a sandbox does not wait for that."""
    if _try_rmdir(cgroup):
        if uid_sock is not None:
            uid_sock.close()
        return
    deadline = time.monotonic() + REAP_TRIES_S

    def job() -> bool:
        gone = _try_rmdir(cgroup)
        if not gone and time.monotonic() < deadline:
            return False
        if not gone:
            log.warning("cannot remove sandbox cgroup %s", cgroup)
        if uid_sock is not None:
            uid_sock.close()
        return True

    _cgroups.add(job)


def _try_rmdir(cgroup: Path | None) -> bool:
    if cgroup is None:
        return True
    try:
        cgroup.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def later(fn: Callable[[], object]) -> None:
    """Run `fn` (the tail of a sandbox's tear-down: reaping, cgroup, uid) on a background thread;
    `drain_later` (also called at exit) waits for what is queued."""

    def job() -> bool:
        fn()
        return True

    _teardowns.add(job)


def drain_later(timeout: float = 30.0) -> None:
    """Wait (bounded) for queued tear-downs and cgroup removals to finish (the end of a run)."""
    deadline = time.monotonic() + timeout
    _teardowns.wait(timeout)
    _cgroups.wait(max(0.0, deadline - time.monotonic()))


atexit.register(drain_later, REAP_TRIES_S + 5.0)
