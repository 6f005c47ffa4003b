"""A Ctrl-C can land between any two steps of an exec or a close: what it leaves half done must not
stall the next close, and nothing it started may outlive its owner."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest

from clawgym.sandbox.bubblewrap import LocalSandbox
from clawgym.sandbox.fresh import _Run
from clawgym.sandbox.host import _kill_members, kill_init


def _ended_thread() -> threading.Thread:
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    return t


def test_close_does_not_wait_for_an_exec_whose_thread_unwound(tmp_path, bwrap):
    sb = LocalSandbox(tmp_path, keep_namespaces=False)
    assert sb.exec("true").exit_code == 0
    stray = subprocess.Popen(["sleep", "30"])  # stands in for the bwrap of an exec that was interrupted
    run = _Run(stray, None)
    run.owner = _ended_thread()  # its thread unwound without marking it done
    sb._live.add(run)
    started = time.monotonic()
    sb.close()
    assert time.monotonic() - started < 3
    assert stray.poll() is not None and run.done.is_set() and not sb._live


def test_a_close_that_unwound_before_it_began_is_taken_over(tmp_path, bwrap):
    sb = LocalSandbox(tmp_path)
    assert sb.exec("echo hi > f").exit_code == 0
    with sb._lock:  # what an interrupt right after claiming the close leaves behind
        sb._closed, sb._closer = True, threading.current_thread()
    started = time.monotonic()
    sb.close()
    assert time.monotonic() - started < 3
    assert sb._close_done.is_set() and sb._cgroup is None and sb._uid_sock is None
    assert (tmp_path / "f").stat().st_uid == os.geteuid()  # the workspace was given back
    sb.close()  # and a later close is a no-op


def test_close_from_another_thread_waits_for_the_one_in_progress(tmp_path, bwrap):
    sb = LocalSandbox(tmp_path, keep_namespaces=False)
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(r=sb.exec("sleep 30")))
    t.start()
    deadline = time.monotonic() + 10
    while not sb._live and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    sb.close()
    t.join(10)
    assert time.monotonic() - started < 8
    assert out["r"].killed_reason == "closed" and not sb._live


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_kill_init_kills_only_the_init_of_a_pid_namespace():
    if os.geteuid() != 0:
        pytest.skip("needs root to make a pid namespace with unshare")
    plain = subprocess.Popen(["sleep", "30"])
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "30"])
    try:
        deadline, inner = time.monotonic() + 5, None
        while inner is None and time.monotonic() < deadline:
            kids = subprocess.run(["pgrep", "-P", str(outer.pid)], capture_output=True, text=True).stdout.split()
            inner = int(kids[0]) if kids else None
            time.sleep(0.02)
        assert inner is not None
        kill_init(plain.pid)
        time.sleep(0.2)
        assert plain.poll() is None  # an ordinary process is left alone
        kill_init(inner)
        assert outer.wait(5) is not None  # pid 1 died, and unshare with it
    finally:
        plain.kill()
        outer.kill()
        plain.wait()
        outer.wait()


def test_what_a_dead_owner_left_in_its_cgroup_is_killed(tmp_path):
    from clawgym.sandbox.host import cgroup_parent

    found = cgroup_parent()
    if os.geteuid() != 0 or found is None:
        pytest.skip("needs root and a writable memory cgroup")
    group = found[0] / "clawgym-test-999999999"
    group.mkdir()
    leftover = subprocess.Popen(["sleep", "30"])
    try:
        (group / "cgroup.procs").write_text(str(leftover.pid))
        _kill_members(group)
        assert leftover.wait(5) is not None
    finally:
        leftover.kill()
        leftover.wait()
        for _ in range(50):  # the kernel empties a cgroup a little after its last process is reaped
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.02)
