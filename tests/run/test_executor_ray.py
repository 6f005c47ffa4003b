"""The Ray executor against a local Ray cluster started by the test (`ray start --head`):
same results folder, resume and report as the local executor."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'clawgym[ray]'")
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A one-node Ray cluster, as `ray start --head` makes one on a real head machine."""
    ray_bin = shutil.which("ray")
    if ray_bin is None:
        pytest.skip("the `ray` command is not on PATH")
    port = _free_port()
    temp = tmp_path_factory.mktemp("ray")
    started = subprocess.run(
        [
            ray_bin,
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if started.returncode != 0:
        pytest.skip(f"cannot start a local Ray cluster: {started.stderr.strip()[-500:]}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True, timeout=120)


@pytest.fixture
def lib(lib):
    """The fixture library with a run spec for the ray executor."""
    root = lib
    (root / "specs" / "run.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: on-ray\ntasks: [good.yaml]\nseeds: {count: 4}\n"
        "agents: [{type: oracle}, {type: nop}]\nconcurrency: 4\nexecutor: {type: ray, num_cpus: 0.5}\nout: out\n"
    )
    return root


def records(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


def test_ray_executor_runs_resumes_and_reports(lib, cluster):
    result = CliRunner().invoke(main, ["run", "specs/run.yaml", "--ray-address", cluster, "--quiet"])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    recs = records(lib)
    assert len(recs) == 8
    for tid, rec in recs.items():
        assert rec["status"] == ("passed" if ".oracle." in tid else "failed")
        assert rec["node"]  # the Ray node that ran it
        assert (lib / "out" / "trials" / tid / "trajectory.json").is_file()
        assert (lib / "out" / "trials" / tid / "workspace.diff").is_file()
    manifest = json.loads((lib / "out" / "run.json").read_text())
    assert manifest["executor"]["type"] == "ray"

    shutil.rmtree(lib / "out" / "trials" / "good.s2.oracle.a0")  # lost: resume re-runs just that one
    before = records(lib)
    again = CliRunner().invoke(main, ["run", "--resume", "out", "--ray-address", cluster, "--quiet"])
    assert again.exit_code == 0, again.output + (again.stderr or "")
    assert "resuming: 7 of 8" in again.output
    after = records(lib)
    assert len(after) == 8 and after["good.s2.oracle.a0"]["status"] == "passed"
    assert all(after[t]["finished_at"] == r["finished_at"] for t, r in before.items())

    report = CliRunner().invoke(main, ["report", "out"])
    assert report.exit_code == 0 and "oracle" in report.output and "100.0%" in report.output


def test_no_cluster_is_a_clear_error(lib):
    port = _free_port()  # nothing listens there
    result = CliRunner().invoke(main, ["run", "specs/run.yaml", "--ray-address", f"127.0.0.1:{port}", "--quiet"])
    assert result.exit_code != 0
    assert "cannot connect to a Ray cluster" in result.stderr and "ray start --head" in result.stderr
    assert "Traceback" not in result.stderr
