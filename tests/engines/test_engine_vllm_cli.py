"""The engine through the command line, for real: `clawgym serve --engine vllm` answers, keeps its
log, and leaves no engine process when it is killed with SIGKILL; `clawgym run` of a shipped task
with `--agent claw --model vllm:embedded` starts one engine for the run, records each sampled
token's id and log-probability, and stops the engine when the run ends. Slow: each starts an engine."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.engines.process import group_pids, wait_gone
from clawgym.engines.vllm import free_port, http_json
from clawgym.records.store import collect_run

from engine_tests import engine_pids, needs_engine

pytestmark = [pytest.mark.slow, needs_engine]
ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "specs/tasks/productivity/invoice-followup.yaml"


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_serve_answers_keeps_its_log_and_dies_with_its_parent(tmp_path):
    port, log = free_port(), tmp_path / "engine.log"
    argv = [sys.executable, "-c", "from clawgym.cli.main import main; main()", "serve", "--engine", "vllm"]
    argv += ["--model", "embedded", "--port", str(port), "--kv-cache-gb", "1", "--log", str(log)]
    serve = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        lines = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = serve.stdout.readline()
            assert line or serve.poll() is None, "".join(lines)
            lines.append(line)
            if line.startswith("serving "):
                break
        assert f"at http://127.0.0.1:{port}/v1" in lines[-1], "".join(lines)
        status, body = http_json(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            {"model": "embedded", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
            timeout=120,
        )
        assert status == 200 and body["choices"][0]["message"]["content"] is not None
        assert "Application startup complete" in log.read_text()
        (watchdog,) = _children(serve.pid)
        family = group_pids(watchdog)
        assert len(family) >= 3, "the watchdog, the API server and the engine core"
        serve.send_signal(signal.SIGKILL)
        serve.wait(10)
        assert wait_gone(family, 30) == [], "engine processes outlived their parent"
        assert group_pids(watchdog) == []
    finally:
        if serve.poll() is None:
            serve.kill()


def test_run_a_shipped_task_with_claw_on_vllm_embedded(tmp_path, bwrap):
    before = engine_pids()
    start = time.monotonic()
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(TASK),
            "--agent",
            "claw",
            "--model",
            "vllm:embedded",
            "--max-turns",
            "2",
            "--max-tokens",
            "48",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output + (result.stderr or "")
    seconds = time.monotonic() - start
    record = json.loads(next((tmp_path / "out" / "trials").glob("*/record.json")).read_text())
    assert record["status"] in ("passed", "failed"), record.get("error")
    (traj,) = list(collect_run(tmp_path / "out"))
    assert traj.policy["type"] == "vllm" and traj.policy["engine_build"]["engine"] == "vllm"
    assert 1 <= len(traj.turns) <= 2
    for turn in traj.turns:
        assert turn["prompt_token_ids"] and turn["token_ids"]
        assert len(turn["token_ids"]) == len(turn["logprobs"]) <= 48
    assert wait_gone(sorted(engine_pids() - before), 30) == [], "the run's engine outlived the run"
    print(f"clawgym run with the engine: {seconds:.0f} s, engine start included")


def _openclaw_missing() -> str | None:
    from clawgym.agent.openclaw.install import find

    try:
        find()
    except Exception as exc:  # noqa: BLE001 - any reason to skip, said
        return f"OpenClaw is not installed ({exc}): clawgym agents install openclaw"
    return None


@pytest.mark.heavy
@pytest.mark.skipif(_openclaw_missing() is not None, reason=_openclaw_missing() or "")
def test_openclaw_reaches_the_engine_through_the_recording_proxy(tmp_path, bwrap):
    """`clawgym run TASK --agent openclaw --model vllm:embedded`: the real OpenClaw's model calls go
    through the recording proxy to the run's engine and are answered, with token ids and
    log-probabilities. OpenClaw's full first prompt (about 9,800 tokens) is past SmolLM2's 8,192;
    for a model under 16K OpenClaw runs with its lean tool set, whose first prompt fits."""
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(TASK),
            "--agent",
            "openclaw",
            "--model",
            "vllm:embedded",
            "--max-turns",
            "2",
            "--max-tokens",
            "32",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output + (result.stderr or "")
    (traj,) = list(collect_run(tmp_path / "out"))
    assert traj.outcome not in ("model_error", "context_overflow"), (traj.outcome, traj.error)
    answered = [t for t in traj.turns if t.get("token_ids")]
    assert answered and all(len(t["token_ids"]) == len(t["logprobs"]) <= 32 for t in answered), traj.turns
    assert all(len(t["prompt_token_ids"]) + 32 <= 8192 for t in answered)
    assert "cron" in traj.agent["deny_tools"] and traj.agent["lean_tools"]
