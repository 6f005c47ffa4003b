"""The claw agent's loop: recording, budgets, policy errors, the system prompt, and an end-to-end trial."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from clawgym.agent import make_agent
from clawgym.agent.claw import ClawAgent
from clawgym.agent.claw.paths import Workspace
from clawgym.agent.claw.prompt import FILE_CAP, build_system_prompt
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.policy import Completion, Policy
from clawgym.policy.scripted import tool_call
from clawgym.registry import _REGISTRY
from clawgym.run.trial import Trial, execute_trial
from clawgym.sandbox.bubblewrap import LocalSandbox
from clawgym.compile.workspace import materialize

from test_claw_tools import calls, make_task, results, run

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lib"


def test_registered_schema_and_recording(tmp_path, bwrap):
    agent = make_agent({"type": "claw", "policy": {"type": "scripted"}})
    assert isinstance(agent, ClawAgent)
    jsonschema.Draft202012Validator.check_schema(ClawAgent.schema)
    jsonschema.validate(
        {
            "type": "claw",
            "policy": {"type": "scripted"},
            "max_turns": 5,
            "parallel_tool_calls": False,
            "tools": {"enable": ["cron"]},
        },
        ClawAgent.schema,
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "claw", "policy": {"type": "scripted"}, "bogus": 1}, ClawAgent.schema)
    traj, _ = run(
        tmp_path, [calls(("write", {"path": "a.txt", "content": "x"})), "finished"], files={"AGENTS.md": "be nice"}
    )
    assert [m["role"] for m in traj.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert traj.messages[1] == {"role": "user", "content": "Do the thing."}
    assert traj.messages[3]["tool_call_id"] == "c0"
    assert len(traj.turns) == 2 and traj.turns[0]["finish_reason"] == "tool_calls" and traj.turns[0]["index"] == 0
    assert traj.usage["turns"] == 2 and traj.usage["tool_calls"] == 1 and traj.usage["total_tokens"] > 0
    step = traj.steps[0]
    assert step["name"] == "write" and step["ok"] and step["turn"] == 0 and step["duration_s"] >= 0
    assert traj.policy["type"] == "scripted" and traj.side_effects == {"outbox": [], "cron": [], "web": []}
    assert json.loads(json.dumps(traj.to_dict()))["final_message"] == "finished"


def test_policy_built_once_per_agent():
    agent = ClawAgent({"type": "claw", "policy": {"type": "scripted"}})
    assert agent.policy is agent.policy


def test_token_ids_and_logprobs_recorded(tmp_path, monkeypatch, bwrap):
    class WithIds(Policy):
        type = "test-logprobs"

        def complete(self, messages, tools=None, **sampling):
            return Completion(
                message={"role": "assistant", "content": "hi"},
                usage={"prompt_tokens": 3, "completion_tokens": 1},
                prompt_token_ids=[1, 2, 3],
                token_ids=[7],
                logprobs=[-0.5],
                latency_s=0.01,
            )

    monkeypatch.setitem(_REGISTRY.setdefault("policy", {}), "test-logprobs", WithIds)
    task = make_task()
    ws = tmp_path / "ws"
    materialize(task, ws)
    with LocalSandbox(ws, mount=task.mount) as sb:
        traj = ClawAgent({"type": "claw", "policy": {"type": "test-logprobs"}}).run(task, sb)
    assert traj.turns[0]["token_ids"] == [7] and traj.turns[0]["logprobs"] == [-0.5]
    assert traj.turns[0]["prompt_token_ids"] == [1, 2, 3] and traj.usage["total_tokens"] == 4


def test_parallel_tool_calls_off(tmp_path, bwrap):
    turn = calls(("write", {"path": "a.txt", "content": "1"}), ("write", {"path": "b.txt", "content": "2"}))
    traj, ws = run(tmp_path, [turn, "ok"], parallel_tool_calls=False)
    first, second = results(traj)
    assert "Successfully" in first and "only the first tool call" in json.loads(second)["error"]
    assert (ws / "a.txt").exists() and not (ws / "b.txt").exists()
    assert traj.steps[1]["skipped"] is True
    traj, ws = run(tmp_path / "p", [turn, "ok"])
    assert (ws / "b.txt").exists()


def test_turn_budget(tmp_path, bwrap):
    loop = [calls(("session_status", {}))] * 10
    traj, _ = run(tmp_path, loop, max_turns=3)
    assert traj.outcome == "budget_exhausted" and "turn budget of 3" in traj.error and len(traj.turns) == 3
    traj, _ = run(tmp_path / "t", loop, task=make_task(limits={"turns": 2}), max_turns=50)
    assert traj.outcome == "budget_exhausted" and len(traj.turns) == 2


def test_token_budget(tmp_path, bwrap):
    traj, _ = run(tmp_path, [calls(("session_status", {}))] * 5, max_tokens_total=10)
    assert traj.outcome == "budget_exhausted" and "token budget of 10" in traj.error and len(traj.turns) == 1


def test_wall_budget(tmp_path, bwrap):
    traj, _ = run(tmp_path, [calls(("exec", {"command": "sleep 10"}))] * 3, task=make_task(limits={"seconds": 1}))
    assert traj.outcome == "agent_timeout" and "wall-time budget" in traj.error
    assert "timed out" in results(traj)[0] and len(traj.turns) == 1
    assert traj.ended_at - traj.started_at < 5


def test_policy_error_is_a_model_error(tmp_path, bwrap):
    traj, _ = run(tmp_path, [calls(("session_status", {})), {"error": "endpoint down"}])
    assert traj.outcome == "model_error" and "endpoint down" in traj.error and len(traj.turns) == 1


# ------------------------------------------------------------------ system prompt
def write_ws(root: Path, files: dict[str, str]) -> Workspace:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Workspace(root, "/root/.openclaw/workspace")


def test_system_prompt_order_caps_missing_and_skills(tmp_path):
    long = "HEAD" + "a" * 30_000 + "TAIL"
    ws = write_ws(
        tmp_path,
        {
            "AGENTS.md": "agents rules",
            "SOUL.md": "soul text",
            "USER.md": long,
            "IDENTITY.md": "I am Claw",
            "HEARTBEAT.md": "beat",
            "MEMORY.md": "remember this",
            "memory/2026-01-01.md": "not injected",
            "skills/csv/SKILL.md": "---\nname: csv\ndescription: Work with CSV files.\n---\n# body not injected",
            "skills/broken/SKILL.md": "no front matter",
            "skills/notes/README.md": "x",
        },
    )
    text = build_system_prompt(ws, "2026-03-02T09:00:00Z", ["read", "exec"], extra="EXTRA NOTE")
    order = [
        text.index(f"### {n}")
        for n in ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "MEMORY.md")
    ]
    assert order == sorted(order)
    assert "### BOOTSTRAP.md" not in text and "not injected" not in text
    assert "[MISSING]" in text.split("### TOOLS.md")[1].split("###")[0]
    user = text.split("### USER.md")[1].split("### HEARTBEAT.md")[0]
    assert "HEAD" in user and "TAIL" in user and "left out" in user and len(user) < FILE_CAP + 300
    assert "- csv: Work with CSV files. (skills/csv/SKILL.md)" in text and "broken" not in text
    assert "read its SKILL.md" in text.replace("\n", " ")
    assert "2026-03-02T09:00:00Z" in text and text.rstrip().endswith("EXTRA NOTE")


def test_system_prompt_total_cap(tmp_path):
    ws = write_ws(
        tmp_path,
        {
            n: "z" * 19_000
            for n in (
                "AGENTS.md",
                "SOUL.md",
                "TOOLS.md",
                "IDENTITY.md",
                "USER.md",
                "HEARTBEAT.md",
                "BOOTSTRAP.md",
                "MEMORY.md",
            )
        },
    )
    text = build_system_prompt(ws, "2026-03-02T09:00:00Z", ["read"])
    assert text.count("z") <= 150_000 and "### BOOTSTRAP.md" in text and "### MEMORY.md" in text


def test_system_prompt_in_messages(tmp_path, bwrap):
    traj, _ = run(tmp_path, ["bye"], files={"SOUL.md": "You love puns."})
    assert "You love puns." in traj.messages[0]["content"] and traj.outcome == "completed"


# ------------------------------------------------------------------ end to end
def test_execute_trial_scores_one(tmp_path, monkeypatch, bwrap):
    root = tmp_path / "lib"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("bad"))
    monkeypatch.chdir(root)
    task = compile_task(load_task_spec(root / "specs" / "good.yaml"), 3)
    script = [
        calls(("read", {"path": "input/numbers.txt"})),
        calls(("exec", {"command": "mkdir -p output && awk '{s+=$1} END {print s}' input/numbers.txt"})),
        {
            "content": "Writing it.",
            "tool_calls": [
                tool_call(
                    "write",
                    call_id="w",
                    path="output/total.txt",
                    content=str(task.params["n"] * (task.params["n"] - 1) // 2) + "\n",
                )
            ],
        },
        "The total is in output/total.txt.",
    ]
    agent = {"type": "claw", "policy": {"type": "scripted", "turns": script}}
    record = execute_trial(Trial(task, agent), trial_dir=tmp_path / "trial")
    assert record["status"] == "passed" and record["reward"] == 1.0, record
    saved = json.loads((tmp_path / "trial" / "trajectory.json").read_text())
    assert saved["outcome"] == "completed" and saved["tools"] and saved["messages"][0]["role"] == "system"
    bad = execute_trial(Trial(task, {"type": "claw", "policy": {"type": "scripted", "turns": [{"error": "down"}]}}))
    assert bad["status"] == "error" and bad["reward"] is None


def test_followups_are_the_users_next_messages_and_a_new_session_starts_fresh(tmp_path, bwrap):
    """A multi-session task: each follow-up arrives when the model answers without a tool call;
    `new_session` gives the model a fresh conversation while the trajectory keeps every message."""
    from dataclasses import replace

    task = replace(
        make_task(instruction="Remember: the code word is heron."),
        followups=(
            {"message": "Write the code word to word.txt.", "new_session": False},
            {"message": "What did you write?", "new_session": True},
        ),
    )
    ws = tmp_path / "ws"
    materialize(task, ws)
    agent = ClawAgent(
        {
            "type": "claw",
            "policy": {
                "type": "scripted",
                "turns": [
                    "Noted.",
                    calls(("write", {"path": "word.txt", "content": "heron"})),
                    "Done.",
                    "I wrote heron.",
                ],
            },
        }
    )
    with LocalSandbox(ws, mount=task.mount) as sb:
        traj = agent.run(task, sb)
    seen = [c["messages"] for c in agent.policy.calls]
    assert [m["role"] for m in seen[1]] == ["system", "user", "assistant", "user"]  # continued
    assert seen[1][-1]["content"] == "Write the code word to word.txt."
    assert [m["role"] for m in seen[3]] == ["system", "user"] and seen[3][1]["content"] == "What did you write?"
    assert (ws / "word.txt").read_text() == "heron" and traj.outcome == "completed"
    assert [m["role"] for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    (marker,) = [s for s in traj.steps if s.get("kind") == "new_session"]
    assert marker["message_index"] == 7 and traj.final_message == "I wrote heron."


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("spec_file", sorted((ROOT / "specs" / "tasks").glob("*/*.yaml"))[::4], ids=lambda p: p.stem)
def test_the_prompt_from_the_task_files_in_memory_is_the_prompt_from_the_disk(spec_file, tmp_path):
    """The runner hands the claw agent the files it just wrote (`Sandbox.initial_files`); the system
    prompt built from them is byte for byte the one built by reading the workspace."""
    for seed in (0, 1):
        task = compile_task(load_task_spec(spec_file), seed)
        folder = tmp_path / f"s{seed}"
        materialize(task, folder)
        ws = Workspace(folder, task.mount)
        tools = ["read", "write", "exec"]
        from_disk = build_system_prompt(ws, task.clock, tools, extra="x")
        assert build_system_prompt(ws, task.clock, tools, extra="x", files=task.files) == from_disk
        assert "## Skills" in from_disk or not any(p.startswith("skills/") for p in task.files)
