"""The runner's end of the verifier server (`server.py`): start it (`start()` as a run begins, else
on first use), hand it one connection per verification, send the request, read the answer, stop
the verifier on timeout.

`ask(payload, timeout, token, reuse=...)` is all a caller needs. With `reuse` (every check only
reads files) a reused worker of the server answers; if that worker is lost before it answered (it
was replaced, or killed while the answer was on its way), the request is asked once more of a
fresh fork, so a lost worker never turns into an `error` trial.
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
FRESH, REUSED = b"v", b"r"  # the one-byte datagram that asks for a fresh fork or a reused worker


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
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "clawgym.verify.server", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=pkg_root,
                start_new_session=True,
            )
        except OSError as e:
            ours.close()
            raise InfraError(f"cannot start the verifier server: {e}") from None
        finally:
            theirs.close()
        self._ctrl = ours
        return ours

    def open(self, kind: bytes = FRESH) -> socket.socket:
        """A connection to a verifier: a fresh fork (FRESH) or one of the server's reused workers (REUSED)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            for attempt in range(2):
                with self._lock:
                    ctrl = self._ensure()
                try:  # one datagram per request: safe from many threads at once
                    socket.send_fds(ctrl, [kind], [theirs.fileno()])
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


def start() -> None:
    """Start this process's verifier server now, so that it imports the checks and warms up while
    a run's first trials work, rather than when the first of them wants a grade."""
    try:
        with _server._lock:
            _server._ensure()
    except InfraError:
        pass  # the first verification reports it


def shutdown() -> None:
    """Stop this process's verifier server if it is idle (the end of a run)."""
    _server.close_if_idle()


_server = VerifierServer()


class VerifierLost(InfraError):
    """The verifier ended without an answer (it was killed, crashed or was never reached)."""


def ask(payload: bytes, timeout: float, token: Any, *, reuse: bool = False, pids: list | None = None) -> Any:
    """Send one request to a verifier; return its decoded JSON answer.

    `reuse` lets one of the server's reused workers answer (for requests whose checks only read
    files); otherwise a fresh fork does. `pids`, if given, gets the pid of every verifier that took
    the request (two when a lost reused worker was replaced by a fresh fork). Raises InfraError on
    timeout, a verifier that dies without answering, or garbage; raises TrialCancelled when `token`
    is cancelled meanwhile. The verifier's process group is killed either way.
    """
    with _server.count_lock:
        _server.active += 1
    try:
        deadline = time.monotonic() + timeout
        if reuse:
            try:
                return _exchange(_server.open(REUSED), payload, deadline, timeout, token, pids)
            except VerifierLost:
                pass  # a reused worker went away before answering: a fresh fork answers instead
        return _exchange(_server.open(FRESH), payload, deadline, timeout, token, pids)
    finally:
        with _server.count_lock:
            _server.active -= 1


def _exchange(
    conn: socket.socket, payload: bytes, deadline: float, timeout: float, token: Any, pids: list | None = None
) -> Any:
    """Send `payload` and read `<pid>\\n<answer>` until EOF. The wait sleeps in `recv` until data,
    the deadline or a cancellation (which shuts the socket to wake it): no polling, so thousands
    of waiting verifications cost nothing."""
    from ..trial_controls import TrialCancelled

    pid: int | None = None
    buffer = b""
    finished = False
    unregister = token.on_cancel(lambda: _wake(conn))
    try:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        while True:
            if token.cancelled:
                raise TrialCancelled(token.reason or "the trial was cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                raise InfraError(f"the verifier timed out after {timeout:g}s")
            conn.settimeout(left)
            try:
                chunk = conn.recv(CHUNK)
            except TimeoutError:
                continue
            if not chunk:
                if token.cancelled:
                    raise TrialCancelled(token.reason or "the trial was cancelled")
                finished = True
                break
            buffer += chunk
            if pid is None and b"\n" in buffer:
                head, buffer = buffer.split(b"\n", 1)
                pid = int(head)
                if pids is not None:
                    pids.append(pid)
    except (BrokenPipeError, ConnectionResetError):  # it ended before reading the whole request
        if token.cancelled:
            raise TrialCancelled(token.reason or "the trial was cancelled") from None
        raise VerifierLost("the verifier exited without a result") from None
    except (OSError, ValueError) as e:
        if token.cancelled:
            raise TrialCancelled(token.reason or "the trial was cancelled") from None
        raise InfraError(f"lost the verifier: {e}") from None
    finally:
        unregister()
        if pid is not None and not finished:
            _stop(pid, conn)
        conn.close()
    if pid is None or not buffer:
        raise VerifierLost("the verifier exited without a result")
    try:
        return json.loads(buffer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InfraError("the verifier sent an unreadable answer") from None


def _wake(conn: socket.socket) -> None:
    """Wake a `recv` waiting on `conn` (from the thread that cancels the trial)."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


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
