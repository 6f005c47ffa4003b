"""A verifier fork server: one process per runner that has the checks imported and forks a fresh
child for every verification, so grading costs a fork instead of an interpreter start.

Protocol (Unix sockets): the client creates a socket pair per request and sends one end to the
server over the control socket (SCM_RIGHTS). The server forks; the child starts its own session,
writes `<pid>\\n` on that socket, reads the JSON request until EOF, writes the JSON answer and
exits. The client kills the child's process group on timeout or cancellation. The server exits
when its control socket closes (the runner ended, even by kill -9).

Run as `python -m clawgym.verify.server FD` (started by `VerifierServer`, never by hand).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import InfraError

CHUNK = 1 << 16
STOP_GRACE_S = 2.0


# ----------------------------------------------------------------------------- server side
def serve(ctrl_fd: int) -> None:
    """Fork one verifier per file descriptor received on `ctrl_fd`, until the socket closes."""
    from .. import checks  # noqa: F401
    from . import grade, worker  # noqa: F401 - import the checks once, before any fork

    worker.warm_up()  # what every verification needs, loaded once here rather than in each child
    _confine()

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    ctrl = socket.socket(fileno=ctrl_fd)
    while True:
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
        conn_fd = fds[0]
        if os.fork() == 0:
            ctrl.close()
            _child(conn_fd)
        os.close(conn_fd)


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


def _child(conn_fd: int) -> None:
    code = 1
    try:
        os.setsid()
        _limit_address_space()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, _stop_child)
        conn = socket.socket(fileno=conn_fd)
        conn.sendall(f"{os.getpid()}\n".encode())
        request = _read_all(conn)
        from .worker import answer_bytes
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # stray prints from checks and their children land on stderr
        conn.sendall(answer_bytes(request))
        conn.close()
        code = 0
    finally:
        os._exit(code)


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


# ----------------------------------------------------------------------------- client side
class VerifierServer:
    """The client end: starts the server on first use (and again if it died)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ctrl: socket.socket | None = None
        self.active = 0  # verifications in flight
        self.count_lock = threading.Lock()

    def _ensure(self) -> socket.socket:
        if self._proc is not None and self._proc.poll() is None and self._ctrl is not None:
            return self._ctrl
        self._stop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "clawgym.verify.server", str(theirs.fileno())],
                                          pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env,
                                          cwd=pkg_root, start_new_session=True)
        except OSError as e:
            ours.close()
            raise InfraError(f"cannot start the verifier server: {e}") from None
        finally:
            theirs.close()
        self._ctrl = ours
        return ours

    def open(self) -> socket.socket:
        """A connection to a freshly forked verifier."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            for attempt in range(2):
                with self._lock:
                    ctrl = self._ensure()
                try:  # one datagram per request: safe from many threads at once
                    socket.send_fds(ctrl, [b"v"], [theirs.fileno()])
                    break
                except OSError:
                    if attempt:
                        raise
                    with self._lock:  # the server died: start another
                        if self._ctrl is ctrl:
                            self._stop()
        except OSError as e:
            mine.close()
            raise InfraError(f"cannot reach the verifier server: {e}") from None
        finally:
            theirs.close()
        return mine

    def _stop(self) -> None:
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def close_if_idle(self) -> None:
        """Stop the server unless a verification is in flight (it restarts on the next one)."""
        with self._lock, self.count_lock:
            if self.active == 0:
                self._stop()


def shutdown() -> None:
    """Stop this process's verifier server if it is idle (the end of a run)."""
    _server.close_if_idle()


_server = VerifierServer()


def ask(payload: bytes, timeout: float, token: Any) -> Any:
    """Send one request to a fresh verifier; return its decoded JSON answer.

    Raises InfraError on timeout, a verifier that dies without answering, or garbage; raises
    TrialCancelled when `token` is cancelled meanwhile. The verifier's group is killed either way.
    """
    with _server.count_lock:
        _server.active += 1
    try:
        return _exchange(_server.open(), payload, timeout, token)
    finally:
        with _server.count_lock:
            _server.active -= 1


def _exchange(conn: socket.socket, payload: bytes, timeout: float, token: Any) -> Any:
    from ..trial_controls import TrialCancelled

    pid: int | None = None
    buffer = b""
    finished = False
    deadline = time.monotonic() + timeout
    try:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(0.1)
        while True:
            if token.cancelled:
                raise TrialCancelled(token.reason or "the trial was cancelled")
            if time.monotonic() > deadline:
                raise InfraError(f"the verifier timed out after {timeout:g}s")
            try:
                chunk = conn.recv(CHUNK)
            except TimeoutError:
                continue
            if not chunk:
                finished = True
                break
            buffer += chunk
            if pid is None and b"\n" in buffer:
                head, buffer = buffer.split(b"\n", 1)
                pid = int(head)
    except (OSError, ValueError) as e:
        raise InfraError(f"lost the verifier: {e}") from None
    finally:
        if pid is not None and not finished:
            _stop(pid, conn)
        conn.close()
    if pid is None or not buffer:
        raise InfraError("the verifier exited without a result")
    try:
        return json.loads(buffer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InfraError("the verifier sent an unreadable answer") from None


def _stop(pid: int, conn: socket.socket) -> None:
    """Ask the verifier to stop (it kills the grading processes it started), then kill its group."""
    try:
        os.kill(pid, signal.SIGTERM)
        conn.settimeout(STOP_GRACE_S)
        while conn.recv(CHUNK):  # EOF once it exited
            pass
    except OSError:
        pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


if __name__ == "__main__":
    serve(int(sys.argv[1]))
