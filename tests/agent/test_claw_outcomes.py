"""How the claw and oracle agents end, in the contract's words (clawgym.records.outcomes); the
claw agent's budgets and a failing policy are in test_claw_agent.py."""

from __future__ import annotations

import dataclasses

import pytest

import tiny_models
from clawgym.agent.claw import ClawAgent
from clawgym.agent.oracle import OracleAgent
from clawgym.compile.workspace import materialize
from clawgym.records.outcomes import OUTCOMES
from clawgym.sandbox.bubblewrap import LocalSandbox

from test_claw_tools import calls, make_task, run

tiny_model = tiny_models.tiny_model  # the fixture: a tiny random Llama built offline


def test_a_prompt_past_the_context_window_ends_as_context_overflow(tmp_path, bwrap):
    traj, _ = run(tmp_path, [calls(("session_status", {})), {"context_overflow": "9000 tokens > 8192"}])
    assert traj.outcome == "context_overflow" and "9000 tokens" in traj.error and len(traj.turns) == 1


def test_a_conversation_the_endpoint_refuses_is_the_agents_failure_not_a_model_error(tmp_path, bwrap):
    traj, _ = run(tmp_path, [calls(("session_status", {})), {"rejected": "HTTP 400: invalid tool_calls"}])
    assert traj.outcome == "agent_crash" and "refused turn 2" in traj.error, traj.error


def test_an_hf_model_with_a_small_window_overflows_before_generating(tmp_path, bwrap, tiny_model):
    task = make_task()
    materialize(task, tmp_path / "ws")
    policy = {"type": "hf", "model": tiny_model, "device": "cpu", "context_window": 64, "max_tokens": 8}
    agent = ClawAgent({"type": "claw", "policy": policy})
    with LocalSandbox(tmp_path / "ws", mount=task.mount) as box:
        traj = agent.run(task, box)
    assert traj.outcome == "context_overflow" and "context window" in traj.error and not traj.turns


@pytest.mark.parametrize(
    "solution, outcome, words",
    [
        ([{"exec": "mkdir -p output && echo hi > output/a.txt"}], "completed", None),
        ([{"exec": "echo nope >&2; exit 3"}], "agent_crash", "exited with code 3: nope"),
        ([{"exec": "sleep 30", "timeout": 1}], "agent_timeout", "timed out"),
        ([], "agent_crash", "no reference solution"),
    ],
)
def test_oracle_endings(tmp_path, bwrap, solution, outcome, words):
    task = dataclasses.replace(make_task(), solution=tuple(solution))
    materialize(task, tmp_path / "ws")
    with LocalSandbox(tmp_path / "ws", mount=task.mount) as box:
        traj = OracleAgent({"type": "oracle"}).run(task, box)
    assert traj.outcome == outcome and traj.outcome in OUTCOMES
    assert words is None or words in traj.error, traj.error
