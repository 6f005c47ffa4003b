"""The local sandbox's private network (network=True): one slirp4netns per exec, never left behind."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from clawgym.errors import InfraError, PrerequisiteError
from clawgym.sandbox import conformance, bubblewrap as local, network
from clawgym.sandbox.base import SandboxLimits
from clawgym.sandbox.bubblewrap import LocalSandbox
from clawgym.sandbox.network import Helper, UserNet


def _unusable() -> str | None:
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) is not installed"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            LocalSandbox(Path(tmp), network=True).close()
    except PrerequisiteError as exc:
        return str(exc)
    return None


_WHY = _unusable()
needs_net = pytest.mark.skipif(_WHY is not None, reason=f"networked local sandbox unavailable: {_WHY}")
HOSTS = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n"


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[Helper]:
    """Every network helper started while the test runs."""
    seen: list[Helper] = []
    attach = UserNet.attach

    def recording(self: UserNet, pid: int, *args, **kwargs) -> Helper:
        helper = attach(self, pid, *args, **kwargs)
        seen.append(helper)
        return helper

    monkeypatch.setattr(UserNet, "attach", recording)
    return seen


def _alive(helper: Helper) -> bool:
    try:
        with open(f"/proc/{helper.pid}/cmdline", "rb") as f:
            return b"slirp4netns" in f.read() and not helper.reaped
    except OSError:
        return False


def _expect_gone(found: list[Helper], grace: float = 3.0) -> None:
    deadline = time.monotonic() + grace
    while any(_alive(h) or not h.reaped for h in found) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [h.pid for h in found if _alive(h) or not h.reaped]
    assert not left, f"network helpers left behind: {left}"


@needs_net
def test_helper_killed_at_the_end_of_each_exec(tmp_path: Path, helpers: list[Helper]) -> None:
    with LocalSandbox(tmp_path, network=True) as sb:
        for i in range(3):
            r = sb.exec("ip -4 addr show tap0 2>/dev/null | grep -c 10.0.2.100 || grep -c tap0 /proc/net/dev")
            assert r.exit_code == 0 and r.output.strip() == "1", r
            assert len(helpers) == i + 1
            _expect_gone(helpers)  # gone before the next exec starts, not only at close


@needs_net
def test_helper_killed_on_close_during_an_exec(tmp_path: Path, helpers: list[Helper]) -> None:
    sb = LocalSandbox(tmp_path, network=True)
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", sb.exec("sleep 60")))
    worker.start()
    deadline = time.monotonic() + 10
    while not helpers and time.monotonic() < deadline:
        time.sleep(0.01)
    assert helpers and _alive(helpers[0]), "no network helper while the exec runs"
    sb.close()
    assert all(h.reaped for h in helpers), "close() returned before the network helper was reaped"
    worker.join(15)
    assert box["r"].killed_reason == "closed", box
    _expect_gone(helpers, grace=0)


@needs_net
def test_no_helper_left_after_20_execs(tmp_path: Path, helpers: list[Helper]) -> None:
    with LocalSandbox(tmp_path, network=True) as sb:
        for i in range(20):
            cmd = "sleep 5 & exit 3" if i % 5 == 0 else "true"  # background children die with pid 1 too
            assert sb.exec(cmd, timeout=10).exit_code == (3 if i % 5 == 0 else 0)
        assert sb.exec("sleep 10", timeout=0.3).timed_out
        assert len(helpers) == 21
        _expect_gone(helpers)
    _expect_gone(helpers, grace=0)


@needs_net
def test_resolv_conf_and_hosts(tmp_path: Path) -> None:
    with LocalSandbox(tmp_path, network=True) as sb:
        r = sb.exec("cat /etc/resolv.conf")
        assert r.exit_code == 0 and r.output == f"nameserver {network.GUEST_DNS}\n" == network.RESOLV_CONF, r
        assert sb.exec("cat /etc/hosts").output == HOSTS
        r = sb.exec("getent hosts sandbox; ip route 2>/dev/null || cat /proc/net/route")
        assert "127.0.0.1" in r.output and ("10.0.2.2" in r.output or "0202000A" in r.output), r
    with LocalSandbox(tmp_path) as sb:  # no network: the same hosts file, no resolvers at all
        assert sb.exec("cat /etc/hosts").output == HOSTS
        assert sb.exec("test -e /etc/resolv.conf").exit_code == 1


def test_missing_helper_is_a_prerequisite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "slirp4netns" else which(name, *a, **k))
    with pytest.raises(PrerequisiteError) as info:
        LocalSandbox(tmp_path, network=True)
    assert "slirp4netns is not installed" in str(info.value)
    assert "apt-get install slirp4netns" in str(info.value)
    assert info.value.exit_code == 3
    if _WHY is None:  # a sandbox without network does not need it
        with LocalSandbox(tmp_path) as sb:
            assert sb.exec("true").exit_code == 0


@needs_net
def test_helper_failure_never_runs_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helpers: list[Helper]
) -> None:
    with LocalSandbox(tmp_path, network=True) as sb:
        monkeypatch.setattr(sb._net, "slirp", shutil.which("false"))
        with pytest.raises(InfraError, match="slirp4netns did not bring the sandbox's network up"):
            sb.exec("touch ran")
        assert not (tmp_path / "ran").exists(), "the command ran without its network"
        _expect_gone(helpers)
    monkeypatch.setattr(local, "_probed", set())  # the self-test at construction turns it into a prerequisite
    tool = network._tool
    monkeypatch.setattr(
        network, "_tool", lambda name, *a: shutil.which("false") if name == "slirp4netns" else tool(name, *a)
    )
    with pytest.raises(PrerequisiteError, match="/dev/net/tun"):
        LocalSandbox(tmp_path, network=True)


@needs_net
@pytest.mark.parametrize(
    "check",
    [
        conformance.check_exit_codes,
        conformance.check_stdin,
        conformance.check_process_limit,
        conformance.check_timeout_kills_tree,
        conformance.check_close_kills_everything,
    ],
    ids=conformance.check_name,
)
def test_conformance_with_network(check) -> None:
    """Checks that do not ask for the network hold with it too (limits, kills, stdin)."""
    check(lambda ws, limits, _: LocalSandbox(ws, limits=limits, network=True))


@needs_net
def test_concurrent_execs_each_get_their_own_network(tmp_path: Path, helpers: list[Helper]) -> None:
    code = (
        "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 18080)); s.listen(); "
        "time.sleep(1); print('bound')"
    )
    with LocalSandbox(tmp_path, network=True, limits=SandboxLimits(wall_seconds=30)) as sb:
        results: list = []
        threads = [threading.Thread(target=lambda: results.append(sb.exec(["python3", "-c", code]))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert [r.output.strip() for r in results] == ["bound", "bound"], results
    assert len({h.pid for h in helpers}) == 2
    _expect_gone(helpers, grace=0)
