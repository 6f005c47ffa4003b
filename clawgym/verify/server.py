"""A verifier fork server: one process per runner that has the checks imported, so grading costs
a fork (or less) instead of an interpreter start.

Protocol (Unix sockets): the client creates a socket pair per request and sends one end to the
server over the control socket (SCM_RIGHTS), with one byte saying who should answer:

- `v`: a **fresh fork** of the server. It starts its own session, writes `<pid>\\n` on the socket,
  reads the JSON request until EOF, writes the JSON answer and exits. Requests with a check that
  runs code (grading sandboxes, processes) always take this way.
- `r`: a **reused worker**, for requests whose checks all only read files (`Check.reads_only`).
  A worker is a fork of the server that answers one request after another the same way, in its
  own session; it is replaced after REUSES requests or once its memory grew, and a worker killed
  on a timeout is replaced by a new fork. Up to `CLAWGYM_VERIFIER_WORKERS` (default two per core)
  workers exist; further requests wait for one to be free. Forking costs about 5–10 ms of CPU
  (page tables, copy-on-write and tear-down of a 35 MB process), more than grading such checks.

The client kills the answering process's group on timeout or cancellation. The server exits when
its control socket closes (the runner ended, even by kill -9); its workers exit when it is gone.
The runner's end is `connection.py`.

Run as `python -m clawgym.verify.server FD` (started by `VerifierServer`, never by hand).
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import sys
from collections import deque
from typing import Any

from .connection import CHUNK, REUSED

REUSES = 200  # requests a reused worker answers before a new fork replaces it (CLAWGYM_VERIFIER_REUSES)
GROWTH_LIMIT_KB = 64 << 10  # ... or once its resident memory grew by this much


# ----------------------------------------------------------------------------- the server
def serve(ctrl_fd: int) -> None:
    """Answer every connection received on `ctrl_fd` (a fresh fork or a reused worker), until the socket closes."""
    from .. import checks  # noqa: F401
    from . import grade, worker  # noqa: F401 - import the checks once, before any fork

    worker.warm_up()  # what every verification needs, loaded once here rather than in each child
    _confine()

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    ctrl = socket.socket(fileno=ctrl_fd)
    selector = selectors.DefaultSelector()
    selector.register(ctrl, selectors.EVENT_READ, None)
    pool = WorkerPool(selector, ctrl, worker_count())
    while True:
        for key, _ in selector.select():
            if key.data is not None:
                pool.heard_from(key.data)
                continue
            try:
                msg, fds, _, _ = socket.recv_fds(ctrl, 1, 1)
            except InterruptedError:
                continue
            except OSError:
                return
            if not msg:  # EOF: the runner is gone
                for fd in fds:
                    os.close(fd)
                return
            if not fds:
                continue
            if msg == REUSED:
                pool.submit(fds[0])
                continue
            if os.fork() == 0:
                ctrl.close()
                pool.forget()
                _child(fds[0])
            os.close(fds[0])


def worker_count() -> int:
    """How many reused workers the server keeps at most (CLAWGYM_VERIFIER_WORKERS, default two per core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return _setting("CLAWGYM_VERIFIER_WORKERS", 2 * cores)


def _setting(name: str, default: int) -> int:
    """A positive whole number from the environment, or `default`."""
    try:
        return max(1, int(os.environ.get(name) or default))
    except ValueError:
        return default


class _Worker:
    """The server's end of one reused worker."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock


class WorkerPool:
    """Reused workers: connections go to an idle one, or to a new fork while under `size`, or wait."""

    def __init__(self, selector: selectors.BaseSelector, ctrl: socket.socket, size: int):
        self.selector, self.ctrl, self.size = selector, ctrl, size
        self.idle: list[_Worker] = []
        self.workers: set[_Worker] = set()
        self.waiting: deque[int] = deque()

    def submit(self, conn_fd: int) -> None:
        """Hand a connection to a worker (the pool owns `conn_fd` from now on)."""
        while self.idle:
            if self._give(self.idle.pop(), conn_fd):
                return
        if len(self.workers) < self.size:
            worker = self._spawn(conn_fd)
            if worker is not None and self._give(worker, conn_fd):
                return
        self.waiting.append(conn_fd)

    def heard_from(self, worker: _Worker) -> None:
        """A worker said it is free again, or went away (retired, killed, crashed)."""
        try:
            msg = worker.sock.recv(16)
        except OSError:
            msg = b""
        if msg:
            while self.waiting:
                fd = self.waiting.popleft()
                if self._give(worker, fd):
                    return
            self.idle.append(worker)
            return
        self._drop(worker)
        if self.waiting:
            self.submit(self.waiting.popleft())

    def _give(self, worker: _Worker, conn_fd: int) -> bool:
        try:
            socket.send_fds(worker.sock, [b"c"], [conn_fd])
        except OSError:
            self._drop(worker)
            return False
        os.close(conn_fd)  # the worker holds its own copy now
        return True

    def forget(self) -> None:
        """In a fork of the server: close the pool's sockets and waiting connections, which are not
        the fork's (a copy held open would keep a client from seeing its answer end)."""
        self.selector.close()
        for worker in self.workers:
            worker.sock.close()
        for fd in self.waiting:
            os.close(fd)

    def _spawn(self, pending: int) -> _Worker | None:
        """Fork a new worker (`pending` is the connection it will be given: the fork closes its copy)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            ours.close()
            self.ctrl.close()
            self.forget()
            os.close(pending)
            _reused_worker(theirs)
        theirs.close()
        worker = _Worker(pid, ours)
        self.workers.add(worker)
        self.selector.register(ours, selectors.EVENT_READ, worker)
        return worker

    def _drop(self, worker: _Worker) -> None:
        if worker not in self.workers:
            return
        self.workers.discard(worker)
        if worker in self.idle:
            self.idle.remove(worker)
        self.selector.unregister(worker.sock)
        worker.sock.close()


# ----------------------------------------------------------------------------- the answering processes
def memory_budget_mb() -> int:
    """Memory the verifier server and its forks may use together (CLAWGYM_VERIFIER_MEMORY_MB, default 4096);
    each fork may also grow by at most this much address space."""
    try:
        return max(256, int(os.environ.get("CLAWGYM_VERIFIER_MEMORY_MB") or 4096))
    except ValueError:
        return 4096


def _confine() -> None:
    """Put this server (and so every fork) in a memory cgroup of its own, where one can be made.

    Grading sandboxes get their cgroups beside this one, not inside it (the parent is looked up
    before moving), so a grader's memory never counts against other trials' verifications.
    """
    from ..sandbox.host import confine

    confine("verifier", memory_budget_mb() << 20)


def _limit_address_space() -> None:
    """Cap this fork's own address space (soft limit, so sandboxes it starts may set their own):
    a check that reads something huge gets a MemoryError (a failed check), not the host's memory."""
    import resource

    try:
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = vm + (memory_budget_mb() << 20)
        resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (OSError, ValueError, StopIteration):
        pass


def _become_verifier() -> None:
    """What a fresh fork and a reused worker do first: own session, capped memory, quiet stdio."""
    os.setsid()
    _limit_address_space()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _stop_child)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints from checks and their children land on stderr


def _answer(conn_fd: int) -> None:
    """Answer the one request on `conn_fd`: our pid, then the JSON answer once the request is read."""
    from .worker import answer_bytes

    conn = socket.socket(fileno=conn_fd)
    try:
        conn.sendall(f"{os.getpid()}\n".encode())
        request = _read_all(conn)
        conn.sendall(answer_bytes(request))
    finally:
        conn.close()


def _child(conn_fd: int) -> None:
    """A fresh fork: answer one request, then exit."""
    code = 1
    try:
        _become_verifier()
        _answer(conn_fd)
        code = 0
    finally:
        os._exit(code)


def _reused_worker(sock: socket.socket) -> None:
    """A reused worker: answer the connections the server passes, say `i` (free) after each; exit
    after REUSES of them, once memory grew past GROWTH_LIMIT_KB, or when the server is gone."""
    code = 0
    try:
        _become_verifier()
        start = _resident_kb()
        reuses = _setting("CLAWGYM_VERIFIER_REUSES", REUSES)
        for answered in range(1, reuses + 1):
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1, 1)
            except InterruptedError:
                continue
            if not msg or not fds:
                break
            try:
                _answer(fds[0])
            except OSError:
                pass  # the client went away (it timed out): nothing of that request is kept
            if answered == reuses or _resident_kb() - start > GROWTH_LIMIT_KB:
                break  # leave without saying `i`, so the server gives this worker nothing more
            sock.send(b"i")
    except BaseException:  # noqa: BLE001 - a worker in doubt ends; the server forks a new one
        code = 1
    finally:
        os._exit(code)


def _resident_kb() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") >> 10)
    except (OSError, ValueError, IndexError):
        return 0


def _stop_child(signum: int, frame: Any) -> None:
    """SIGTERM from the client (timeout, cancellation): kill what the checks started, then exit."""
    from ..checks.exec import kill_live_groups
    from ..checks.grading import close_live_sandboxes

    kill_live_groups()
    close_live_sandboxes()
    os._exit(1)


def _read_all(conn: socket.socket) -> bytes:
    parts = []
    while chunk := conn.recv(CHUNK):
        parts.append(chunk)
    return b"".join(parts)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
