"""Runs end to end: results folder, resume, kill -9 safety, and hostile agent commands contained."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.files.tempdirs import work_root


def write_run_spec(root: Path, tasks: str = "good.yaml", seeds: str = "[0, 1, 2]", concurrency: int = 2) -> Path:
    spec = root / "specs" / "run.yaml"
    spec.write_text(f"""apiVersion: clawgym/v1
kind: Run
name: t
tasks: [{tasks}]
seeds: {seeds}
agents: [{{type: oracle}}, {{type: nop}}]
concurrency: {concurrency}
out: out
""")
    return spec


def records(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (out / "trials").glob("*/record.json")}


def test_run_spec_writes_results_folder(lib):
    spec = write_run_spec(lib)
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    out = lib / "out"
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["versions"]["clawgym"] and len(manifest["tasks"]) == 3 and len(manifest["trials"]) == 6
    recs = records(out)
    assert len(recs) == 6
    for tid, rec in recs.items():
        expected = 1.0 if ".oracle." in tid else 0.0
        assert rec["reward"] == expected and rec["status"] == ("passed" if expected else "failed")
        assert {"setup_s", "agent_s", "verify_s", "total_s"} <= set(rec["timings"])
        assert rec["task"]["hash"] and rec["verdict"]["results"]
        assert (out / "trials" / tid / "trajectory.json").is_file()
    oracle_diff = (out / "trials" / "good.s0.oracle.a0" / "workspace.diff").read_text()
    assert "+++ b/output/total.txt" in oracle_diff
    assert "oracle" in result.output and "100.0%" in result.output
    again = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert again.exit_code == 2 and "--resume" in again.stderr


def test_resume_reruns_only_missing_and_errored(lib):
    spec = write_run_spec(lib)
    assert CliRunner().invoke(main, ["run", str(spec), "--quiet"]).exit_code == 0
    out = lib / "out"
    before = records(out)
    shutil.rmtree(out / "trials" / "good.s1.nop.a0")
    errored = out / "trials" / "good.s2.oracle.a0" / "record.json"
    rec = json.loads(errored.read_text())
    rec.update(status="error", error="InfraError: simulated")
    errored.write_text(json.dumps(rec))
    result = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    after = records(out)
    assert len(after) == 6
    rerun = {tid for tid in after if after[tid]["finished_at"] != before[tid]["finished_at"]}
    assert rerun == {"good.s1.nop.a0", "good.s2.oracle.a0"}
    assert after["good.s2.oracle.a0"]["status"] == "passed"


def test_kill_9_loses_no_finished_trial(lib):
    slow = (
        (lib / "specs" / "good.yaml")
        .read_text()
        .replace("  - exec: mkdir -p output", "  - exec: sleep 0.7\n  - exec: mkdir -p output")
        .replace("name: good", "name: slow")
    )
    (lib / "specs" / "slow.yaml").write_text(slow)
    spec = write_run_spec(lib, tasks="slow.yaml", seeds="{count: 12}", concurrency=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawgym.cli.main", "run", str(spec), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    out = lib / "out"
    deadline = time.time() + 60
    while time.time() < deadline and len(list((out / "trials").glob("*.oracle.*/record.json"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = records(out)  # every record file parses: none is torn
    assert 3 <= len(finished) < 24
    stamps = {tid: r["finished_at"] for tid, r in finished.items()}
    result = CliRunner().invoke(main, ["run", "--resume", str(out), "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    done = records(out)
    assert len(done) == 24
    assert not list(work_root().glob(f"clawgym-*-{proc.pid}-*")), "the killed run's work folders"
    assert all(done[tid]["finished_at"] == ts for tid, ts in stamps.items() if finished[tid]["status"] != "error"), [
        (t, finished[t], done[t]) for t in stamps if done[t]["finished_at"] != stamps[t]
    ]
    assert all(r["status"] in ("passed", "failed") for r in done.values())


def test_hostile_commands_are_contained_and_the_run_goes_on(lib, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET-HOST-DATA")
    target = tmp_path / "host-dir"
    target.mkdir()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    threading.Thread(target=serve, daemon=True).start()
    (lib / "specs" / "hostile.yaml").write_text(f"""apiVersion: clawgym/v1
kind: Task
name: hostile
category: systems
persona: ada
workspace: plain
instruction: Write output/done.txt.
limits: {{seconds: 60, pids: 64, output_bytes: 100000}}
solution:
  - exec: mkdir -p output; cat {secret} > output/leak.txt 2>&1; cat /root/.bashrc >> output/leak.txt 2>&1; true
  - exec: echo pwned > {target}/pwned.txt 2>/dev/null; touch /usr/pwned 2>/dev/null; true
  - exec: python3 -c "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)" > output/net.txt 2>&1; true
  - exec: "bomb() {{ bomb | bomb & }}; bomb; sleep 2; true"
    timeout: 8
  - exec: echo finished > output/done.txt
  - exec: yes 'flood flood flood' | head -c 3000000000
checks:
  - {{type: file_exists, path: output/done.txt, gate: true}}
  - {{type: text_contains, path: output/leak.txt, not_contains: [TOP-SECRET-HOST-DATA]}}
""")
    try:
        result = CliRunner().invoke(main, ["run", "specs/hostile.yaml", "--agent", "oracle", "--out", "out", "--quiet"])
    finally:
        stop.set()
    assert result.exit_code == 0, result.output + result.stderr
    rec = records(lib / "out")["hostile.s0.oracle.a0"]
    assert rec["status"] in ("passed", "failed"), rec.get("error")
    assert not (target / "pwned.txt").exists() and not Path("/usr/pwned").exists()
    assert not accepted, "the sandbox reached a host socket"
    traj = json.loads((lib / "out" / "trials" / "hostile.s0.oracle.a0" / "trajectory.json").read_text())
    flood = traj["steps"][5]
    assert len(flood["output"]) <= 100_000 and flood["duration_s"] < 30 and flood["exit_code"] is None
    assert traj["outcome"] == "agent_crash"  # the flood was killed at the output cap; the run went on
    assert rec["reward"] == 1.0, rec["verdict"]
    server.close()


def test_two_agents_with_one_label_are_refused_at_their_line(tmp_path):
    """Two OpenClaw versions without names would write the same trial folders."""
    from click.testing import CliRunner

    from clawgym.cli.main import main

    shipped = Path(__file__).resolve().parents[2] / "specs" / "tasks" / "analysis" / "budget-variance.yaml"
    spec = tmp_path / "dup.yaml"
    spec.write_text(f"""apiVersion: clawgym/v1
kind: Run
name: dup
tasks: [{shipped}]
agents:
  - {{type: oracle}}
  - {{type: nop, name: oracle}}
""")
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code != 0
    assert (
        f"{spec}:7: agents[1]: agent 1 has the same label 'oracle' as agent 0: their trials would share "
        "results folders (give each a distinct name, e.g. name: oracle-1)"
    ) in result.output.replace("\n", " ")


def test_an_unknown_policy_type_is_said_once_at_its_line_not_by_every_trial(tmp_path):
    from click.testing import CliRunner

    from clawgym.cli.main import main

    shipped = Path(__file__).resolve().parents[2] / "specs" / "tasks" / "analysis" / "budget-variance.yaml"
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: bad\ntasks: [{shipped}]\nagents:\n"
        "  - {type: claw, policy: {type: embeded}}\n"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code != 0 and not (tmp_path / "out").exists()
    assert f"{spec}:6: agents[0].policy.type: unknown policy type 'embeded'" in result.output.replace("\n", " ")
