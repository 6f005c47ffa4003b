"""Supervised processes (what every engine runs under): a dummy command that starts a grandchild
and a grandchild in a session of its own is gone, all of it, when we stop it, when the process
that started it gets Ctrl-C or is killed with SIGKILL, and when the command itself exits; it
survives the end of the thread that started it, and a forked process cannot stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from clawgym.engines.process import Supervised, group_pids, wait_gone

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# a command that starts `sleep` as a child and a grandchild in a new session, and prints their pids
FAMILY = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sleeper = subprocess.Popen(["sleep", "300"])
    escapee = subprocess.Popen([sys.executable, "-c",
        "import os, subprocess, time; os.setsid(); p = subprocess.Popen(['sleep', '301']); "
        "print('escaped', p.pid, flush=True); time.sleep(300)"])
    print("family", os.getpid(), sleeper.pid, escapee.pid, flush=True)
    code = int(sys.argv[1]) if len(sys.argv) > 1 else None
    if code is not None:
        time.sleep(1.0)
        sys.exit(code)
    time.sleep(300)
    """
)


def _family(log: Path, timeout: float = 15.0) -> list[int]:
    """Every pid the command printed (itself, its sleeper, the escapee and the escapee's sleeper)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        family = [ln for ln in text.splitlines() if ln.startswith("family ")]
        escaped = [ln for ln in text.splitlines() if ln.startswith("escaped ")]
        if family and escaped:
            return [int(p) for p in family[0].split()[1:]] + [int(escaped[0].split()[1])]
        time.sleep(0.05)
    raise AssertionError(f"the command did not start its family: {log.read_text() if log.exists() else ''}")


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "family.py"
    path.write_text(FAMILY)
    return path


def test_stop_takes_down_the_command_and_everything_it_started(tmp_path):
    log = tmp_path / "log.txt"
    proc = Supervised([sys.executable, str(_script(tmp_path))], log=log, grace=5)
    pids = _family(log)
    assert proc.alive()
    start = time.monotonic()
    proc.stop()
    assert time.monotonic() - start < 5, "SIGTERM was enough: no wait for the grace period"
    assert wait_gone(pids, 5) == []
    assert not proc.alive() and group_pids(proc.pid) == []


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    log = tmp_path / "log.txt"
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"
    proc = Supervised([sys.executable, "-c", stubborn], log=log, grace=1)
    deadline = time.monotonic() + 10
    while "ready" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group_pids(proc.pid)
    start = time.monotonic()
    proc.stop()
    assert 0.9 < time.monotonic() - start < 8
    assert wait_gone(members, 5) == []


def _parent_script(tmp_path: Path) -> Path:
    """A process that starts the family supervised, prints the watchdog's pid, and waits (stopping it
    on Ctrl-C, as `clawgym serve` does)."""
    path = tmp_path / "parent.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import signal, sys, time
            # Ctrl-C raises here even when the tests run in the background, whose children start with SIGINT ignored
            signal.signal(signal.SIGINT, signal.default_int_handler)
            sys.path.insert(0, {str(ROOT)!r})
            from pathlib import Path
            from clawgym.engines.process import Supervised
            proc = Supervised([sys.executable, {str(_script(tmp_path))!r}], log=Path({str(tmp_path / "log.txt")!r}))
            print(proc.pid, flush=True)
            try:
                time.sleep(300)
            except KeyboardInterrupt:
                proc.stop()
            """
        )
    )
    return path


@pytest.mark.parametrize("how", ["SIGKILL", "Ctrl-C"])
def test_nothing_is_left_when_the_parent_dies_or_is_interrupted(tmp_path, how):
    parent = subprocess.Popen([sys.executable, str(_parent_script(tmp_path))], stdout=subprocess.PIPE, text=True)
    try:
        watchdog = int(parent.stdout.readline())
        pids = [watchdog, *_family(tmp_path / "log.txt")]
        parent.send_signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGINT)
        parent.wait(60)  # Ctrl-C: the parent stops the family first (seconds; more on a loaded machine)
        assert wait_gone(pids, 10) == [], f"left after the parent's {how}"
        assert group_pids(watchdog) == []
    finally:
        if parent.poll() is None:
            parent.kill()


def test_when_the_command_exits_what_it_left_goes_and_its_code_is_kept(tmp_path):
    log = tmp_path / "log.txt"
    proc = Supervised([sys.executable, str(_script(tmp_path)), "3"], log=log, grace=5)
    pids = _family(log)
    assert proc.wait(20) == 3
    assert wait_gone(pids, 5) == []


def test_the_thread_that_started_it_may_end(tmp_path):
    """PR_SET_PDEATHSIG fires when the starting thread ends: that alone must not stop the command."""
    holder: list[Supervised] = []
    thread = threading.Thread(target=lambda: holder.append(Supervised(["sleep", "300"], log=tmp_path / "log.txt")))
    thread.start()
    thread.join()
    time.sleep(1.5)
    (proc,) = holder
    try:
        assert proc.alive()
    finally:
        proc.stop()
    assert not proc.alive()


def test_a_forked_process_cannot_stop_it(tmp_path):
    proc = Supervised(["sleep", "300"], log=tmp_path / "log.txt")
    try:
        child = os.fork()
        if child == 0:  # the local executor's worker processes are forked like this
            os._exit(0 if proc.stop() is None and not proc.alive() else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert proc.alive()
    finally:
        proc.stop()


def test_a_command_that_cannot_start_says_so_in_its_log(tmp_path):
    log = tmp_path / "log.txt"
    proc = Supervised([str(tmp_path / "no-such-program")], log=log)
    assert proc.wait(10) == 127
    assert "cannot start" in proc.log_tail()
