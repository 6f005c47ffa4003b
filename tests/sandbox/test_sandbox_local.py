"""The shared sandbox conformance suite run against the bubblewrap backend, plus backend specifics."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from clawgym import registry
from clawgym.errors import ClawgymError, PrerequisiteError
from clawgym.sandbox import conformance, create_sandbox
from clawgym.sandbox.base import SandboxLimits
from clawgym.sandbox.bubblewrap import LocalSandbox


def _make(workspace: Path, limits: SandboxLimits, network: bool) -> LocalSandbox:
    return LocalSandbox(workspace, limits=limits, network=network)


def _unusable() -> str | None:
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) is not installed"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            LocalSandbox(Path(tmp)).close()
    except PrerequisiteError as exc:
        return str(exc)
    return None


_WHY = _unusable()
needs_bwrap = pytest.mark.skipif(_WHY is not None, reason=f"local sandbox unavailable: {_WHY}")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="exercises the dedicated-uid mode used as root")


@needs_bwrap
@pytest.mark.parametrize("check", conformance.ALL_CHECKS, ids=conformance.check_name)
def test_conformance(check) -> None:
    try:
        check(_make)
    except conformance.CheckSkipped as exc:
        pytest.skip(str(exc))


def test_missing_bwrap_is_a_prerequisite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(PrerequisiteError) as info:
        LocalSandbox(tmp_path)
    assert "bubblewrap (bwrap) is not installed" in str(info.value)
    assert "apt-get install bubblewrap" in str(info.value)
    assert info.value.exit_code == 3


def test_bad_bwrap_path_is_a_prerequisite_error(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError):
        LocalSandbox(tmp_path, bwrap=str(tmp_path / "no-such-bwrap"))


@needs_bwrap
def test_create_sandbox_spec_and_custom_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_loaded", True)  # do not import the other built-in plugins
    with pytest.raises(ClawgymError, match="unknown option 'colour'"):
        create_sandbox({"type": "local", "colour": "red"}, tmp_path)
    (tmp_path / "f.txt").write_text("hi")
    with create_sandbox(None, tmp_path, mount="/workspace") as sb:
        assert isinstance(sb, LocalSandbox)
        r = sb.exec('pwd; echo "$HOME"; cat f.txt')
        assert r.output.split() == ["/workspace", "/root", "hi"]
    with pytest.raises(ClawgymError, match="closed"):
        sb.exec("true")
    with pytest.raises(ClawgymError):
        LocalSandbox(tmp_path, mount="/usr/ws")


@needs_bwrap
@root_only
def test_workspace_below_private_folder_and_owners_restored(tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / "ws").mkdir(parents=True)
    private.chmod(0o700)  # the sandbox uid cannot walk through here: the bridge mount is used
    ws = private / "ws"
    (ws / "theirs.txt").write_text("x\n")
    os.chown(ws / "theirs.txt", 1234, 4321)
    with LocalSandbox(ws) as sb:
        r = sb.exec("echo new > new.txt && cat theirs.txt && id -u")
        assert r.exit_code == 0 and r.output.split() == ["x", "0"], r
        assert (ws / "new.txt").stat().st_uid == sb._uid != 0
    assert (ws / "new.txt").stat().st_uid == os.getuid()
    assert ((ws / "theirs.txt").stat().st_uid, (ws / "theirs.txt").stat().st_gid) == (1234, 4321)


def test_blocked_user_namespaces_is_a_prerequisite_error(tmp_path: Path) -> None:
    tools = Path(tempfile.mkdtemp(prefix="clawgym-fake-bwrap-"))
    try:
        tools.chmod(0o755)  # runnable by the sandbox uid too
        fake = tools / "bwrap"
        fake.write_text(
            '#!/bin/sh\n[ "$1" = --help ] && { echo "--json-status-fd --as-pid-1 --size"; exit 0; }\n'
            'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n'
        )
        fake.chmod(0o755)
        with pytest.raises(PrerequisiteError) as info:
            LocalSandbox(tmp_path, bwrap=str(fake))
        assert "No permissions to create new namespace" in str(info.value)
        assert "user namespaces" in str(info.value)
    finally:
        shutil.rmtree(tools)


@needs_bwrap
def test_kept_namespaces_keep_only_the_workspace_between_execs(tmp_path: Path) -> None:
    """One bwrap serves all the execs of a sandbox, yet each exec starts as if fresh: private
    folders emptied, no process of an earlier exec left, the workspace kept."""
    with LocalSandbox(tmp_path) as sb:
        assert sb.exec("true").exit_code == 0 and sb._session is None  # the first exec: a fresh bwrap
        r = sb.exec(
            "echo t > /tmp/t; echo h > ~/h; echo s > /dev/shm/s; mkdir -p /tmp/d/e; chmod 000 /tmp/d; "
            "(exec -a clawgym-left-behind sleep 60) & setsid sleep 60 & echo w > kept.txt; echo $$"
        )
        assert r.exit_code == 0, r
        first_pid1 = sb._session.child_pid
        r = sb.exec("ls -A /tmp ~ /dev/shm; ps -e -o comm= 2>/dev/null || ls /proc | grep -c '^[0-9]'; cat kept.txt")
        assert sb._session.child_pid == first_pid1, "the second exec started a new bwrap"
        assert "t" not in r.output.split() and "h" not in r.output.split() and "clawgym-left-behind" not in r.output
        assert ".openclaw" in r.output and r.output.split()[-1] == "w"
        procs = sb.exec("ls /proc | grep -c '^[0-9]'")
        assert int(procs.output.strip()) <= 4, procs  # the server, bash, ls, grep
        busy = sb.exec("sleep 0.01; echo ok", timeout=5)
        assert busy.output.strip() == "ok"
        timed = sb.exec("sleep 30", timeout=0.5)
        assert timed.timed_out and sb._session is None  # a timeout ends the kept namespace ...
        assert sb.exec("cat kept.txt").output.strip() == "w"  # ... and the next exec gets a new one


@needs_bwrap
def test_pooled_sandboxes_are_started_ahead_and_used_once(tmp_path: Path) -> None:
    from clawgym.sandbox.pool import SandboxPool

    with SandboxPool(2) as pool:
        assert pool.wait_ready(30)
        sb = pool.take()
        assert sb._session is not None and not sb._session.dead  # already running
        (sb.workspace / "in.txt").write_text("from host\n")
        sb.adopt()
        r = sb.exec("cat in.txt && echo more >> in.txt && echo out > out.txt && id -u")
        assert r.exit_code == 0 and r.output.split() == ["from", "host", "0"], r
        folder = sb.workspace.parent
        other = pool.take()
        assert other.workspace != sb.workspace and other._uid != sb._uid or os.geteuid() != 0
        sb.close()
        assert (sb.workspace / "in.txt").read_text() == "from host\nmore\n" or not folder.exists()
        other.close()
    from clawgym.sandbox.host import drain_later

    drain_later()
    assert not folder.exists(), "the pool's folder outlived its sandbox"
