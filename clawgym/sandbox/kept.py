"""The host side of a kept sandbox: one bwrap for all the execs of a network-less local sandbox,
its pid 1 the exec server of `session.py`. A mixin of `LocalSandbox` (`bubblewrap.py`), which holds
the state; the pool (`pool.py`) starts them ahead of time (`start`) and hands files written after
that to the sandbox (`adopt`).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import InfraError
from .base import ExecResult, home_for
from .fresh import KILL_GRACE, data_binds, parse_status
from .host import release_cgroup
from . import session

log = logging.getLogger(__name__)


class KeptNamespaces:
    """The kept-namespace exec path of `LocalSandbox` (its attributes are set up there)."""

    _lock: threading.Lock
    _closed: bool
    _keep: bool
    _fresh_left: int  # execs still run in a fresh bwrap before the kept one starts (FRESH_FIRST)
    _session: "session.Session | None"
    _on_close: list
    _cgroup: Any
    _cgroup_joined: bool

    def start(self) -> None:
        """Claim the host resources and start the kept bwrap now rather than at the first exec (a
        pool does this ahead of time). Files the host writes into the workspace afterwards are given
        to the sandbox by `adopt`."""
        self._prepare()
        self._fresh_left = 0
        kept = self._take_session()
        if kept is not None:
            kept.busy = False

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the sandbox has closed and given back its host resources."""
        self._on_close.append(callback)

    def adopt(self) -> None:
        """As root: hand what the host wrote into the workspace since the sandbox was prepared to
        the sandbox's uid (owners are restored on close like the rest). Otherwise nothing to do."""
        if self._prepared and self._root and self._owners is not None:
            self._hand_over()

    def _take_session(self) -> session.Session | None:
        """The sandbox's kept bwrap for this exec (started on first use), or None when it is busy
        with another exec (that one then runs in a fresh bwrap of its own) or not kept at all."""
        with self._lock:
            if not self._keep or self._closed:
                return None
            if self._fresh_left > 0:  # a sandbox that runs one command (a grader) never starts a server
                self._fresh_left -= 1
                return None
            current = self._session
            if current is not None and not current.dead:
                if current.busy:
                    return None
                current.busy = True
                return current
            self._keep = False  # no second start while this one starts
        try:
            started = self._start_session()
        except (OSError, InfraError, subprocess.SubprocessError) as exc:
            log.warning("cannot keep a sandbox's namespaces (each exec gets a fresh bwrap): %s", exc)
            return None
        with self._lock:
            self._keep = True
            if self._closed:
                started.kill()
                started.reap(KILL_GRACE)
                return None
            started.busy, self._session = True, started
            return started

    def _start_session(self) -> session.Session:
        """One bwrap whose pid 1 is the exec server, in the sandbox's memory cgroup (moved once)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        st_r, st_w = os.pipe()
        passed, data_args, block_w = [st_w, theirs.fileno()], [], None
        try:
            code_r = session.server_code_pipe()
            passed.append(code_r)
            if self._cgroup is not None and not self._cgroup_joined:
                r, block_w = os.pipe()
                passed.append(r)
                data_args += ["--block-fd", str(r)]
            data_args += data_binds(self._data, self._perms, passed)
            home = home_for(self.mount)
            wipe = ["/tmp", "/dev/shm"] + ([home] if home not in ("/", "/tmp") else [])
            args = [
                *self._launch,
                *self._head,
                *data_args,
                *self._tail,
                "--json-status-fd",
                str(st_w),
                "--",
                *session.server_command(code_r, theirs.fileno(), wipe),
            ]
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self.default_env(),
                cwd="/",
                pass_fds=passed,
                preexec_fn=self._preexec_fn,
                start_new_session=True,  # a Ctrl-C reaches the caller, which kills this cleanly
            )
        except BaseException:
            for fd in (st_r, *((block_w,) if block_w is not None else ())):
                os.close(fd)
            ours.close()
            raise
        finally:
            theirs.close()
            for fd in passed[:1] + passed[2:]:
                os.close(fd)
        kept = session.Session(proc, ours, 0)
        try:
            status, deadline = bytearray(), time.monotonic() + 30
            while "child-pid" not in parse_status(status):
                ready, _, _ = select.select([st_r], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(st_r, 65536) if ready else b""
                if not chunk:
                    raise InfraError("the kept sandbox did not start")
                status += chunk
            kept.child_pid = int(parse_status(status)["child-pid"])
            if self._cgroup is not None and not self._cgroup_joined:
                (self._cgroup / "cgroup.procs").write_text(str(kept.child_pid))
        except BaseException:
            kept.kill()
            kept.reap(KILL_GRACE)
            raise
        finally:
            if block_w is not None:
                os.close(block_w)
            os.close(st_r)
        return kept

    def _exec_kept(
        self,
        kept: session.Session,
        argv: list[str],
        env: dict[str, str],
        workdir: str | None,
        data: bytes | None,
        limit: float,
    ) -> ExecResult:
        start, cap = time.monotonic(), self.limits.output_bytes
        code, out, seen, reason = kept.run(
            [*self._inner, *argv],
            env,
            self.resolve_workdir(workdir),
            data,
            limit,
            cap,
            cap + max(cap, 4 << 20),
            lambda: "closed" if self._closed else None,
        )
        if reason is not None:
            kept.reap(KILL_GRACE)
            with self._lock:
                if self._session is kept:
                    self._session = None
        if reason == "lost":
            code = kept.proc.returncode
            how = f"bubblewrap ended by signal {-code}" if code is not None and code < 0 else "its exec server ended"
            raise InfraError(f"the sandbox was killed from outside ({how})")
        return ExecResult(
            exit_code=code,
            output=out.decode("utf-8", errors="replace"),
            timed_out=reason == "timeout",
            truncated=seen > cap,
            duration_s=time.monotonic() - start,
            killed_reason=reason,
        )


def finish_teardown(
    kept: session.Session, cgroup: Path | None, uid_sock: socket.socket | None, callbacks: list[Callable[[], None]]
) -> None:
    kept.reap(KILL_GRACE)
    release_cgroup(cgroup, uid_sock)
    for callback in callbacks:
        callback()
