"""The shared sandbox conformance suite run against the docker backend, plus backend specifics.

Needs a reachable Docker daemon and the image clawgym/base:bookworm (scripts/build-image.sh).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from clawgym import registry
from clawgym.errors import ClawgymError, PrerequisiteError
from clawgym.sandbox.docker import docker_problem
from clawgym.sandbox import conformance, create_sandbox
from clawgym.sandbox.base import SandboxLimits

pytestmark = pytest.mark.docker


_WHY = docker_problem()
needs_docker = pytest.mark.skipif(_WHY is not None, reason=f"docker sandbox unavailable: {_WHY}")


def _make(workspace: Path, limits: SandboxLimits, network: bool):
    from clawgym.sandbox.docker import DockerSandbox

    return DockerSandbox(workspace, limits=limits, network=network)


def _ours() -> list:
    from clawgym.sandbox.docker import LABEL, docker_client

    return docker_client().containers.list(all=True, filters={"label": f"{LABEL}=1"})


@needs_docker
@pytest.mark.parametrize("check", conformance.ALL_CHECKS, ids=conformance.check_name)
def test_conformance(check) -> None:
    try:
        check(_make)
    except conformance.CheckSkipped as exc:
        pytest.skip(str(exc))


@needs_docker
def test_round_trip_and_nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_loaded", True)
    before = {c.id for c in _ours()}
    (tmp_path / "in.txt").write_text("from host\n")
    with pytest.raises(ClawgymError, match="unknown option 'colour'"):
        create_sandbox({"type": "docker", "colour": "red"}, tmp_path)
    sb = create_sandbox({"type": "docker", "sync": "close"}, tmp_path, mount="/workspace")
    with sb:
        r = sb.exec(
            'pwd; echo "$HOME"; cat in.txt; mkdir -p d && echo made > d/out.txt; ln -s /etc/passwd esc; '
            "ln -s d/out.txt rel; mkfifo pipe"
        )
        assert r.exit_code == 0 and r.output.split()[:4] == ["/workspace", "/root", "from", "host"], r
        assert not (tmp_path / "d").exists()  # sync="close": copied out only at the end
        assert {c.id for c in _ours()} - before
    assert (tmp_path / "d/out.txt").read_text() == "made\n"
    assert (tmp_path / "rel").is_symlink() and (tmp_path / "rel").read_text() == "made\n"
    assert not (tmp_path / "esc").is_symlink() and not (tmp_path / "esc").exists()  # leads outside: dropped
    assert not (tmp_path / "pipe").exists()
    sb.close()  # idempotent
    with pytest.raises(ClawgymError, match="closed"):
        sb.exec("true")
    assert {c.id for c in _ours()} == before, "a container was left behind"


@needs_docker
def test_missing_image_is_a_prerequisite_error(tmp_path: Path) -> None:
    from clawgym.sandbox.docker import DockerSandbox

    with pytest.raises(PrerequisiteError, match="build-image.sh"):
        DockerSandbox(tmp_path, image="clawgym/no-such-image:none")


def test_registered_without_importing_the_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, clawgym.sandbox; from clawgym import registry; "
        "registry.get('sandbox', 'docker'); assert 'docker' not in sys.modules, 'docker SDK imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_docker
def test_start_to_teardown_time(tmp_path: Path) -> None:
    times = []
    for _ in range(3):
        t = time.monotonic()
        with _make(tmp_path, SandboxLimits(), False) as sb:
            assert sb.exec("true").exit_code == 0
        times.append(time.monotonic() - t)
    assert sorted(times)[1] < 15, times
