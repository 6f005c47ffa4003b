"""Run a Python script in a fork of this process: no interpreter start, standard modules already loaded.

Importing a large dataset runs every task's grader once; a fresh interpreter costs more than most
graders do (site start-up alone is tens of milliseconds). A fork starts in about a millisecond.
The child leads its own process group (killed as a whole on timeout), gets a clean environment,
the script's folder first on sys.path, and the script run as `__main__`, as `python3 script`.
"""

from __future__ import annotations

import os
import runpy
import select
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path


def run_script(script: Path, args: list[str], *, cwd: Path, env: dict[str, str],
               timeout: float) -> tuple[int | None, str, str]:
    """(exit status or None on timeout, stdout, stderr) of `python3 script *args` run in a fork."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            _child(script, args, cwd, env, out.fileno(), err.fileno())
        code = _wait(pid, timeout)
        out.seek(0)
        err.seek(0)
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def _child(script: Path, args: list[str], cwd: Path, env: dict[str, str], out_fd: int, err_fd: int) -> None:
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        # the parent's sys.stdout may be anything (a test runner's capture): bind fresh streams to the fds
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [str(script), *args]
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(script), run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - report like the interpreter would
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    """Exit status of `pid`, or None after killing its group at the timeout (pidfd where available)."""
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            fd = None
        if fd is not None:
            try:
                ready, _, _ = select.select([fd], [], [], timeout)
            finally:
                os.close(fd)
            if not ready:
                _kill_group(pid)
                os.waitpid(pid, 0)
                return None
            _, status = os.waitpid(pid, 0)
            _kill_group(pid)
            return os.waitstatus_to_exitcode(status)
    deadline, pause = time.monotonic() + timeout, 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _kill_group(pid)
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            _kill_group(pid)
            os.waitpid(pid, 0)
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
