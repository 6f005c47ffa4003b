"""A supervised process: a command and everything it starts, gone when we stop it or when we die.

`Supervised(argv, env=..., log=...)` starts `watchdog.py` (next to this file) as the leader of a
new session, and the watchdog starts the command in that process group, with stdout and stderr
appended to the log file. `stop()` asks the watchdog to stop (SIGTERM: the group gets SIGTERM,
then SIGKILL after `grace` seconds) and SIGKILLs the group itself if the watchdog does not answer.
When this process dies, even by SIGKILL, the watchdog notices at once (PR_SET_PDEATHSIG, and a
check of its parent twice a second) and takes the group down. A new session also keeps the
terminal's Ctrl-C away from the engine: it stops when we stop it, after our own cleanup.

Only the process that started a supervised process stops it: a worker process forked from it
(the local executor's) sees the same object but leaves the process alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

WATCHDOG = Path(__file__).with_name("watchdog.py")
DEFAULT_GRACE_S = 10.0


class Supervised:
    """One supervised command (see the module docstring)."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        log: Path,
        cwd: str | Path | None = None,
        grace: float = DEFAULT_GRACE_S,
    ):
        self.argv, self.log, self.grace = list(argv), Path(log), float(grace)
        self.owner = os.getpid()
        self._lock = threading.Lock()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WATCHDOG), str(self.owner), str(self.grace), "--", *self.argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
            )
        self.pid = self.proc.pid  # the watchdog; also the process group id

    def alive(self) -> bool:
        """Whether the command (its watchdog) still runs; False in a process that did not start it."""
        if os.getpid() != self.owner:
            return False
        return self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if os.getpid() == self.owner else None

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once the command has ended (None when `timeout` passed first)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float | None = None) -> int | None:
        """Stop the command and everything it started; its exit code (None if it had to be killed)."""
        if os.getpid() != self.owner:
            return None
        grace = self.grace if grace is None else grace
        with self._lock:
            if self.proc.poll() is None:
                try:
                    os.kill(self.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                if self.wait(grace + 5.0) is None:
                    self._kill_group()
                    self.wait(5.0)
            else:
                self._kill_group()  # the watchdog is gone: make sure nothing of the group is left
            return self.proc.returncode

    def _kill_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the log file (what the command printed last)."""
        try:
            with open(self.log, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - chars))
                return handle.read().decode(errors="replace")
        except OSError:
            return ""


def group_pids(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group: how tests see that nothing is left."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            data = Path(f"/proc/{name}/stat").read_text(errors="replace")
        except OSError:
            continue
        fields = data[data.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(name))
    return sorted(out)


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive (not zombies) after waiting up to `timeout` seconds for them to end."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if _alive(p)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return False
    return data[data.rfind(")") + 2 :].split()[0] not in ("Z", "X")
