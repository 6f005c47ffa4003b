"""How a local sandbox starts: the small launcher and the prepared /etc, and the util-linux path
(setpriv/prlimit, /etc bound entry by entry) that stands in where the launcher cannot be built."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clawgym.sandbox import bwrap_command, conformance, etc_view
from clawgym.sandbox.base import SandboxLimits
from clawgym.sandbox.bubblewrap import LocalSandbox
from clawgym.sandbox.launcher import launch_args, launcher

from test_sandbox_local import _make, needs_bwrap, root_only


@pytest.fixture
def util_linux_path(monkeypatch):
    """Sandboxes built now start through setpriv/prlimit and bind /etc entry by entry."""
    monkeypatch.setattr(bwrap_command, "launcher", lambda: None)
    monkeypatch.setattr(bwrap_command, "etc_folder", lambda names, generated: None)


@needs_bwrap
@pytest.mark.parametrize("check", conformance.ALL_CHECKS, ids=conformance.check_name)
def test_conformance_without_the_launcher(check, util_linux_path) -> None:
    try:
        check(_make)
    except conformance.CheckSkipped as exc:
        pytest.skip(str(exc))


def _inside(tmp_path: Path, command: str, **options) -> str:
    with LocalSandbox(tmp_path, limits=SandboxLimits(memory_mb=512, file_size_mb=8, pids=40), **options) as sandbox:
        result = sandbox.exec(command)
    assert result.exit_code == 0, result.output
    return result.output


@needs_bwrap
@pytest.mark.parametrize("path", ["launcher", "util-linux"])
def test_both_paths_give_a_sandbox_the_same_limits_and_etc(tmp_path, request, path) -> None:
    if path == "util-linux":
        request.getfixturevalue("util_linux_path")
    elif launcher() is None:
        pytest.skip("no C compiler here to build the launcher")
    out = _inside(tmp_path, "ulimit -v; ulimit -f; ulimit -c; cat /etc/hostname; head -1 /etc/passwd; ls /etc")
    lines = out.splitlines()
    assert lines[:3] == [str(512 * 1024), str(8 * 1024), "0"]  # bash counts KiB
    assert lines[3] == "sandbox" and lines[4].startswith("root:x:0:0:root:")
    listed = set(lines[5:])
    assert {"passwd", "group", "hosts", "hostname"} <= listed
    assert {name.split("/")[0] for name in bwrap_command.etc_entries()} <= listed
    assert "shadow" not in listed and "resolv.conf" not in listed


@needs_bwrap
def test_the_prepared_etc_shows_the_hosts_entries_as_they_are(tmp_path) -> None:
    names = bwrap_command.etc_entries()
    folder = etc_view.etc_folder(names, [("/etc/hostname", "sandbox\n")])
    assert folder is not None and folder.name.startswith(etc_view.PREFIX)
    st = folder.stat()
    assert st.st_uid == os.geteuid() and not st.st_mode & 0o022
    for name in names:
        host, copy = Path("/etc", name), folder / name
        if host.is_dir():
            assert sorted(os.listdir(copy)) == sorted(os.listdir(host))
            links = [e for e in os.scandir(host) if e.is_symlink()]
            for entry in links[:20]:  # links stay links, pointing where they did
                assert os.readlink(copy / entry.name) == os.readlink(entry.path)
        else:
            assert copy.read_bytes() == host.read_bytes()
    assert (folder / "hostname").read_text() == "sandbox\n"
    # the same content gives the same folder; other content another one
    assert etc_view.etc_folder(names, [("/etc/hostname", "sandbox\n")]) == folder
    assert etc_view.etc_folder(names, [("/etc/hostname", "other\n")]) != folder


@root_only
def test_a_prepared_etc_made_by_someone_else_is_not_used(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(etc_view, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(etc_view, "_made", {})
    generated = [("/etc/hostname", "planted\n")]
    target = tmp_path / f"{etc_view.PREFIX}{etc_view._fingerprint(['hostname'], generated)}"
    target.mkdir()
    (target / "hostname").write_text("evil\n")
    os.chown(target, 65534, 65534)
    assert etc_view.etc_folder(["hostname"], generated) is None
    assert (target / "hostname").read_text() == "evil\n"  # left alone


@root_only
def test_the_launcher_drops_to_the_uid_after_applying_limits_and_joining_a_cgroup(tmp_path) -> None:
    program = launcher()
    if program is None:
        pytest.skip("no C compiler here to build the launcher")
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    args = launch_args(program, [(4, 0), (1, 4096 * 512)], 65534, tmp_path)
    done = subprocess.run(
        [*args, "/bin/sh", "-c", "id -u; id -G; ulimit -c; ulimit -f"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["65534", "65534", "0", "4096"]
    assert procs.read_text() == "0\n"  # "join me": the kernel reads it as the writer's pid


@root_only
def test_the_launcher_refuses_bad_use_and_a_cgroup_it_cannot_join(tmp_path) -> None:
    program = launcher()
    if program is None:
        pytest.skip("no C compiler here to build the launcher")
    for bad in (["-r", "4"], ["-r", "4=x"], ["-u", "0"], ["-u", "abc"], ["-x", "1"], []):
        assert subprocess.run([program, *bad, "--", "/bin/true"][: None if bad else 2]).returncode == 125
    missing = launch_args(program, [], 65534, tmp_path / "no-such-cgroup")
    done = subprocess.run([*missing, "/bin/true"], capture_output=True, text=True)
    assert done.returncode == 125 and "cannot join the sandbox's memory cgroup" in done.stderr
