"""Exec in a fresh bwrap: the way every exec of a networked sandbox runs (and any exec of a kept
sandbox that overlaps another, or all of them with `keep_namespaces=False`).

Each exec starts bwrap with the sandbox's command line; pid 1 (a small ``sh``) waits on
``--block-fd`` until the host has moved it into the sandbox's memory cgroup and, with a network,
given its net namespace a user-mode network (slirp4netns, `network.py`); when the command exits the
pid namespace ends, so nothing it started outlives it. Output, stdin, the time limit, the output
cap and kills are handled here. A mixin of `LocalSandbox` (`bubblewrap.py`), which holds the state.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import threading
import time
from typing import Any

from ..errors import InfraError
from .base import ExecResult, LiveExec
from .host import kill_init, kill_pid1, wait_exit
from .network import Helper, NetworkStartError

KILL_GRACE = 5.0  # seconds a killed tree may take to disappear
INIT = ["/bin/sh", "-c", 'cd -- "$1" || exit 1; shift; "$@"; exit $?', "sh"]  # pid 1: cd, run, report
log = logging.getLogger(__name__)


class _Run(LiveExec):
    """One running bwrap: the host-side process, once known the sandbox's pid 1, its network helper."""

    def __init__(self, proc: subprocess.Popen, block_w: int | None) -> None:
        super().__init__()
        self.proc, self.block_w, self.child_pid, self.reason = proc, block_w, None, None
        self.helper: Helper | None = None
        self.net_error: NetworkStartError | None = None
        self.blind = False  # killed before pid 1 was known

    def kill(self, reason: str) -> None:
        self.reason = self.reason or reason
        if self.child_pid is None or not kill_pid1(self.child_pid, self.proc.pid):
            self.blind = self.child_pid is None
            try:
                self.proc.kill()  # pid 1 not started yet: --die-with-parent takes it down, mostly
            except OSError:
                pass

    def reap(self) -> None:
        """Wait for the killed or ending bwrap, killing it if it lingers past the grace."""
        try:
            wait_exit(self.proc, KILL_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill_orphan(self, status: bytes) -> None:
        """After a kill that came before bwrap reported pid 1: a pid 1 cloned just before bwrap died
        may wait for a uid map that never comes (no parent-death signal yet), so kill it by pid."""
        pid = parse_status(status).get("child-pid")
        if pid is not None:
            kill_init(int(pid))


class FreshExecs:
    """The fresh-bwrap exec path of `LocalSandbox` (its attributes are set up there)."""

    _lock: threading.Lock
    _live: set
    _closed: bool
    _cgroup: Any
    _cgroup_joined: bool
    _net: Any

    def _exec_fresh(
        self, argv: list[str], run_env: dict[str, str], workdir: str | None, data: bytes | None, limit: float
    ) -> ExecResult:
        """Run one command in a bwrap of its own (its namespaces end with it)."""
        fds = [*os.pipe(), *os.pipe()]  # output r/w, status r/w
        passed, data_args, block_w = [fds[3]], [], None
        try:
            if self._net is not None or (self._cgroup is not None and not self._cgroup_joined):
                # pid 1 waits for its network, and for its memory cgroup unless the launcher joined it
                r, block_w = os.pipe()
                passed.append(r)
                data_args += ["--block-fd", str(r)]
            data_args += data_binds(self._data, self._perms, passed)
            args = [
                *self._launch,
                *self._head,
                *data_args,
                *self._tail,
                "--json-status-fd",
                str(fds[3]),
                "--",
                *INIT,
                self.resolve_workdir(workdir),
                *self._inner,
                *argv,
            ]
            start = time.monotonic()
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                stdout=fds[1],
                stderr=fds[1],
                env=run_env,
                cwd="/",
                pass_fds=passed,
                preexec_fn=self._preexec_fn,
                start_new_session=True,  # a Ctrl-C reaches the caller, which kills this cleanly
            )
        except (OSError, subprocess.SubprocessError) as exc:
            for fd in (fds[0], fds[2]) + ((block_w,) if block_w is not None else ()):
                os.close(fd)
            raise InfraError(f"cannot start bubblewrap: {exc}") from None
        finally:
            for fd in (fds[1], *passed):
                os.close(fd)
        run = _Run(proc, block_w)
        try:
            with self._lock:
                self._live.add(run)
                if self._closed:
                    run.kill("closed")
            result = self._collect(run, fds[0], fds[2], data, start, limit)
            if run.net_error is not None and run.reason == "network":
                raise run.net_error
            return result
        finally:
            try:
                self._stop_helper(run)
            finally:  # even when an interrupt lands in the step above
                with self._lock:
                    self._live.discard(run)
                run.done.set()
                os.close(fds[0])
                os.close(fds[2])

    def _collect(self, run: _Run, out_r: int, st_r: int, data: bytes | None, start: float, limit: float) -> ExecResult:
        cap = self.limits.output_bytes
        flood = cap + max(cap, 4 << 20)  # past this much output the command is killed
        buf, status, seen, hard_deadline, paused = bytearray(), bytearray(), 0, None, False
        deadline, reads, pending = start + max(limit, 0.0), {out_r, st_r}, memoryview(data or b"")
        sel = selectors.DefaultSelector()
        for fd in reads:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        stdin = run.proc.stdin
        if stdin is not None and pending:
            os.set_blocking(stdin.fileno(), False)
            sel.register(stdin.fileno(), selectors.EVENT_WRITE)
        elif stdin is not None:
            stdin.close()

        def kill(reason: str) -> None:
            if run.child_pid is None:  # pick pid 1 up if bwrap already reported it
                try:
                    status.extend(os.read(st_r, 65536))
                except OSError:
                    pass
                run.child_pid = parse_status(status).get("child-pid")
            run.kill(reason)

        try:
            while reads:
                now = time.monotonic()
                if run.reason is None and now >= deadline:
                    kill("timeout")
                if run.reason is not None and hard_deadline is None:
                    hard_deadline = now + KILL_GRACE
                if hard_deadline is not None and now >= hard_deadline:
                    break
                for key, _ in sel.select(max((hard_deadline or deadline) - now, 0.0)):
                    if key.fd not in reads:  # stdin is writable
                        try:
                            pending = pending[os.write(key.fd, pending[:65536]) :]
                        except BlockingIOError:
                            continue
                        except OSError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(key.fd)
                            stdin.close()
                        continue
                    try:
                        chunk = os.read(key.fd, 1 << 18)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        sel.unregister(key.fd)
                        reads.discard(key.fd)
                        self._release(run)
                        if key.fd == out_r and st_r in reads and paused:
                            sel.register(st_r, selectors.EVENT_READ)  # now read the exit status
                            paused = False
                    elif key.fd == st_r:
                        status += chunk
                        run.child_pid = run.child_pid or parse_status(status).get("child-pid")
                        if run.child_pid is not None:
                            self._release(run)
                            if run.block_w is None and out_r in reads:
                                # the rest (namespace ids, then the exit code) is read once the
                                # output ends: one wake-up instead of one per line bwrap writes
                                sel.unregister(st_r)
                                paused = True
                    else:
                        seen += len(chunk)
                        buf += chunk[: max(cap - len(buf), 0)]
                        if seen > flood and run.reason is None:
                            kill("output limit")
        except BaseException:
            kill("interrupted")
            raise
        finally:
            sel.close()
            self._release(run)
            if stdin is not None and not stdin.closed:
                try:
                    stdin.close()
                except OSError:
                    pass
            run.reap()
            if run.blind:
                try:
                    status.extend(os.read(st_r, 65536))
                except OSError:
                    pass
                run.kill_orphan(bytes(status))
        info, output = parse_status(status), bytes(buf).decode("utf-8", errors="replace")
        if run.reason is None and "exit-code" not in info:
            code = run.proc.returncode
            if code is not None and code < 0:  # we did not signal it: something outside did
                raise InfraError(f"the sandbox was killed from outside (bubblewrap ended by signal {-code})")
            raise InfraError(f"sandbox failed to start: {output.strip() or f'bwrap exited {code}'}")
        return ExecResult(
            exit_code=None if run.reason else int(info["exit-code"]),
            output=output,
            timed_out=run.reason == "timeout",
            truncated=seen > cap,
            duration_s=time.monotonic() - start,
            killed_reason=run.reason,
        )

    def _release(self, run: _Run) -> None:
        """Give the waiting pid 1 its network, move it (and the helper) into the memory cgroup, then
        let it go on (EOF on --block-fd). If the network cannot start, pid 1 is killed still waiting."""
        if run.block_w is None or run.net_error is not None:
            return
        ready = run.child_pid is not None and run.reason is None
        if ready and self._net is not None and run.helper is None:
            try:
                run.helper = self._net.attach(run.child_pid)
            except NetworkStartError as exc:
                run.net_error = exc
                run.kill("network")
                return  # the fd is closed once bwrap is gone (_stop_helper)
        try:
            if ready and self._cgroup is not None:
                moved = [] if self._cgroup_joined else [run.child_pid]
                for pid in (*moved, *((run.helper.pid,) if run.helper else ())):
                    (self._cgroup / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            log.warning("cannot move sandbox pid %s into %s: %s", run.child_pid, self._cgroup, exc)
        finally:
            os.close(run.block_w)
            run.block_w = None

    def _abandoned(self, run: _Run) -> None:
        """Finish, from `close()`, an exec whose thread unwound without doing so: reap its bwrap."""
        run.reap()
        if run.block_w is not None:
            os.close(run.block_w)
            run.block_w = None
        with self._lock:
            self._live.discard(run)
        run.done.set()

    def _stop_helper(self, run: _Run) -> None:
        """At the end of an exec: kill its network helper and close a --block-fd left open."""
        if run.helper is not None and self._net is not None:
            self._net.retire(run.helper)
        if run.block_w is not None:
            os.close(run.block_w)
            run.block_w = None


def data_binds(files: Any, perms: list[str], passed: list[int]) -> list[str]:
    """bwrap arguments that show each (path, text) read-only inside, each fed through a pipe whose
    read end is appended to `passed` (the descriptors the child inherits)."""
    args: list[str] = []
    for path, content in files:
        r, w = os.pipe()
        os.write(w, content.encode())
        os.close(w)
        passed.append(r)
        args += [*perms, "--ro-bind-data", str(r), path]
    return args


def parse_status(raw: bytes | bytearray) -> dict:
    info: dict = {}
    for line in bytes(raw).splitlines():
        try:
            info.update(json.loads(line))
        except ValueError:
            continue
    return info
