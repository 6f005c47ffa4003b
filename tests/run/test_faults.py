"""Faults during a run: a sandbox killed from outside, a hanging verifier, a flaky model endpoint,
a full disk. Each time the run completes, the affected trials are `error` with a reason, the
others are unaffected, and `clawgym run --resume` finishes the affected ones."""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main

GOOD_SOLUTION = "  - exec: mkdir -p output && awk '{s+=$1} END {print s}' input/numbers.txt > output/total.txt\n"


def variant(root: Path, name: str, *, before: str = "", checks_extra: str = "", limits: str = "") -> None:
    """A copy of the fixture's `good` task named `name`, with extra solution steps / checks / limits."""
    text = (root / "specs" / "good.yaml").read_text().replace("name: good", f"name: {name}")
    if before:
        text = text.replace("solution:\n", f"solution:\n{before}")
    text += checks_extra
    if limits:
        text += f"limits: {limits}\n"
    (root / "specs" / f"{name}.yaml").write_text(text)


def run_spec(root: Path, tasks: str, concurrency: int = 4) -> None:
    (root / "specs" / "run.yaml").write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: faults\ntasks: {tasks}\nseeds: [0, 1]\n"
        f"agents: [{{type: oracle}}]\nconcurrency: {concurrency}\nretries: {{max: 0}}\nout: out\n"
    )


def invoke(*args: str):
    result = CliRunner().invoke(main, ["run", *args, "--quiet"])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return result


def records(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


def assert_resume_finishes(root: Path, affected: set[str]) -> None:
    before = records(root)
    invoke("--resume", "out")
    after = records(root)
    assert all(after[t]["status"] == "passed" for t in after), {t: r["error"] for t, r in after.items()}
    assert {t for t in after if after[t]["finished_at"] != before[t]["finished_at"]} == affected


def _bwrap_pids(marker: str) -> list[int]:
    """The bubblewraps running a command with `marker` in it: in its own command line (a fresh bwrap
    per exec) or in one of its descendants' (a kept sandbox, whose pid 1 is an exec server)."""
    argvs, parents = {}, {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argvs[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
            parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    pids = set()
    for pid, argv in argvs.items():
        if marker.encode() not in b" ".join(argv):
            continue
        while pid in argvs and not argvs[pid][0].endswith(b"bwrap"):
            pid = parents.get(pid, 0)
        if pid in argvs:
            pids.add(pid)
    return sorted(pids)


def test_sandbox_killed_from_outside(lib):
    variant(lib, "doomed", before="  - exec: sleep 2.5\n")
    run_spec(lib, "[good.yaml, doomed.yaml]")
    killed: set[int] = set()
    stop = threading.Event()

    def killer() -> None:  # like an OOM killer or an operator: SIGKILL the sandbox's bubblewrap
        while not stop.is_set():
            for pid in _bwrap_pids("sleep 2.5"):
                if pid not in killed:
                    os.kill(pid, 9)
                    killed.add(pid)
            time.sleep(0.02)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        invoke("specs/run.yaml")
    finally:
        stop.set()
        thread.join()
    recs = records(lib)
    assert len(killed) >= 2
    for seed in (0, 1):
        doomed, good = recs[f"doomed.s{seed}.oracle.a0"], recs[f"good.s{seed}.oracle.a0"]
        assert doomed["status"] == "error", doomed
        assert "the sandbox was killed from outside (bubblewrap ended by signal 9)" in doomed["error"]
        assert good["status"] == "passed"
    assert_resume_finishes(lib, {"doomed.s0.oracle.a0", "doomed.s1.oracle.a0"})


def test_hanging_grader_is_a_failed_grade_within_the_verify_budget(lib, tmp_path):
    """A grader that never ends (the agent can make one: graders run its programs) scores 0 once the
    verifier's budget runs out; it is not an infrastructure error an agent could hide behind."""
    (lib / "specs" / "grade.py").write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    variant(
        lib, "stuck", checks_extra="  - {type: python, script: grade.py, timeout: 600}\n", limits="{verify_seconds: 4}"
    )
    run_spec(lib, "[good.yaml, stuck.yaml]")
    t0 = time.monotonic()
    invoke("specs/run.yaml")
    assert time.monotonic() - t0 < 30
    recs = records(lib)
    for seed in (0, 1):
        stuck = recs[f"stuck.s{seed}.oracle.a0"]
        assert stuck["status"] == "failed" and stuck["reward"] < 1, stuck.get("error")
        (result,) = [r for r in stuck["verdict"]["results"] if r["type"] == "python"]
        assert result["score"] == 0 and result["reason"].startswith("grading script timed out after "), result
        assert recs[f"good.s{seed}.oracle.a0"]["status"] == "passed"
    leftover = subprocess.run(
        ["pgrep", "-f", "launch.py /run/clawgym/task/grade.py"], capture_output=True, text=True
    ).stdout
    assert not leftover.strip(), "the hung grading script was not killed"


class FlakyEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that fails `failure_rate` of requests with HTTP 500.

    Its answers: first turn writes the right total with the write tool, the second ends."""

    failure_rate = 0.3
    rng = random.Random(7)
    lock = threading.Lock()
    served = {"ok": 0, "failed": 0}

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            fail = self.rng.random() < self.failure_rate
            self.served["failed" if fail else "ok"] += 1
        if fail:
            self._send(500, {"error": {"message": "simulated overload", "type": "server_error"}})
            return
        if not any(m["role"] == "tool" for m in body["messages"]):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "exec",
                            "arguments": json.dumps({"command": GOOD_SOLUTION.split("exec: ", 1)[1].strip()}),
                        },
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": "Done."}
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "flaky",
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def _send(self, code: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_endpoint_failing_30_percent_of_requests(lib):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        agent = f"[{{type: claw, policy: {{type: openai, model: flaky, base_url: '{url}', max_retries: 0}}}}]"
        (lib / "specs" / "run.yaml").write_text(
            f"apiVersion: clawgym/v1\nkind: Run\nname: flaky\ntasks: [good.yaml]\nseeds: {{count: 20}}\n"
            f"agents: {agent}\nconcurrency: 8\nretries: {{max: 0}}\nout: out\n"
        )
        invoke("specs/run.yaml")
        recs = records(lib)
        assert len(recs) == 20 and FlakyEndpoint.served["failed"] > 0
        errors = {t for t, r in recs.items() if r["status"] == "error"}
        assert errors and len(errors) < 20
        for tid, rec in recs.items():
            if tid in errors:
                assert "500" in rec["error"] and "simulated overload" in rec["error"], rec["error"]
            else:
                assert rec["status"] == "passed" and rec["reward"] == 1.0
        FlakyEndpoint.failure_rate = 0.0
        assert_resume_finishes(lib, errors)
    finally:
        FlakyEndpoint.failure_rate = 0.3
        server.shutdown()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs to fill needs root")
def test_full_disk_in_one_workspace(lib, tmp_path, monkeypatch):
    """One task's workspace does not fit on the disk where trials work; the others do."""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        big = (
            (lib / "specs" / "good.yaml")
            .read_text()
            .replace("name: good", "name: big")
            .replace("files:\n", "files:\n  - path: input/big.bin\n    template: \"{{ 'x' * 3000000 }}\"\n")
        )
        (lib / "specs" / "big.yaml").write_text(big)
        run_spec(lib, "[good.yaml, big.yaml]", concurrency=1)
        monkeypatch.setenv("CLAWGYM_WORKDIR", str(disk))  # where trials keep their workspaces
        invoke("specs/run.yaml")
        recs = records(lib)
        for seed in (0, 1):
            assert recs[f"big.s{seed}.oracle.a0"]["status"] == "error"
            assert "No space left on device" in recs[f"big.s{seed}.oracle.a0"]["error"]
            assert recs[f"good.s{seed}.oracle.a0"]["status"] == "passed"
        assert not list(disk.iterdir()), "the failed trials' work folders were not removed"
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space freed
        assert_resume_finishes(lib, {"big.s0.oracle.a0", "big.s1.oracle.a0"})
    finally:
        subprocess.run(["umount", "-l", str(disk)])
