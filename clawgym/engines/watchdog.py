"""The watchdog between ClawGym and an engine process: `python watchdog.py PARENT_PID GRACE -- CMD...`.

It runs as the leader of a new session (its caller starts it so), starts CMD as its child in the
same process group, and takes down everything CMD started when any of these happens:

- it gets SIGTERM, SIGINT or SIGHUP (the orderly stop);
- PARENT_PID is no longer its parent (the caller died, even by SIGKILL): the kernel signals it at
  once through PR_SET_PDEATHSIG, and it also checks its parent twice a second;
- CMD exits (whatever CMD left behind goes with it).

Teardown sends SIGTERM to the process group and to every descendant (it is a child subreaper, so
orphaned grandchildren stay its descendants even when they start sessions of their own), waits
GRACE seconds for them to go, then sends SIGKILL. It exits with CMD's exit code.

PR_SET_PDEATHSIG fires when the *thread* that started this process ends, not only the process:
it is set to SIGUSR2, which only starts a teardown when the parent really is gone.

Standard library only, and run as a file (not imported from the package), so it starts in tens
of milliseconds and never sees the engine's or ClawGym's environment of modules.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.2
PARENT_CHECK_S = 0.5


def _prctl(option: int, value: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent check below still works
        pass


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = data[data.rfind(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _others(me: int) -> list[int]:
    """Live processes in this process group or descending from this process (zombies excluded)."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            stat = _proc_stat(int(name))
            if stat is not None and stat[0] not in ("Z", "X"):
                stats[int(name)] = stat
    found = {pid for pid, (_, _, pgid) in stats.items() if pgid == me}
    frontier = [me, *found]
    while frontier:
        parent = frontier.pop()
        for pid, (_, ppid, _) in stats.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return sorted(found)


def _reap(child: int) -> int | None:
    """Reap every exited child (orphans come to us as a subreaper); CMD's exit code if it ended."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == child:
            code = os.waitstatus_to_exitcode(status)


def _signal_all(me: int, sig: int) -> list[int]:
    pids = _others(me)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    return pids


def _teardown(me: int, child: int, grace: float) -> int | None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    code = _reap(child)
    _signal_all(me, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        got = _reap(child)
        code = got if got is not None else code
        if not _others(me):
            return code
        time.sleep(0.1)
    for _ in range(3):  # SIGKILL, a few rounds: something may have forked meanwhile
        if not _signal_all(me, signal.SIGKILL):
            break
        time.sleep(0.1)
        got = _reap(child)
        code = got if got is not None else code
    return code


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: watchdog.py PARENT_PID GRACE_S -- CMD...", file=sys.stderr)
        return 2
    parent, grace, cmd = int(argv[1]), float(argv[2]), argv[4:]
    me = os.getpid()
    stop: list[int] = []

    def on_stop(signum: int, _frame: object) -> None:
        stop.append(signum)

    def on_parent_signal(signum: int, _frame: object) -> None:
        if os.getppid() != parent:  # only the starting thread may have ended: then keep going
            stop.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGUSR2, on_parent_signal)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGUSR2)
    if os.getppid() != parent:  # the caller died before the signal was armed
        return 1
    child = os.fork()
    if child == 0:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(cmd[0], cmd)
        except OSError as exc:
            print(f"watchdog: cannot start {cmd[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    code = None
    checked = time.monotonic()
    while code is None and not stop:
        code = _reap(child)
        if time.monotonic() - checked >= PARENT_CHECK_S:
            checked = time.monotonic()
            if os.getppid() != parent:
                break
        time.sleep(POLL_S)
    ended = _teardown(me, child, grace)
    code = code if code is not None else ended
    if code is None:
        return 143
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    sys.exit(main(sys.argv))
