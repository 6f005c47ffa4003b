"""Expert trajectories: reference solutions replayed as claw tool calls score 1.0 and export as JSONL."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from clawgym.agent.claw.tools import ALL_TOOLS
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.spec.task import Task
from clawgym.train.expert import expert_command, expert_trajectories, expert_turns, named_inputs, step_turn
from clawgym.records.store import read_jsonl

from conftest import BWRAP_PROBLEM

ROOT = Path(__file__).resolve().parents[2]
TASK_SPECS = sorted((ROOT / "specs" / "tasks").rglob("*.yaml"))


def compile_seed0(path: Path) -> Task:
    return compile_task(load_task_spec(path), 0)


def names(turn: dict) -> list[str]:
    return [c["function"]["name"] for c in turn.get("tool_calls") or []]


def args(call: dict) -> dict:
    return json.loads(call["function"]["arguments"])


@pytest.fixture(scope="module")
def shipped() -> list[tuple[Task, dict]]:
    """Every shipped task on seed 0, replayed once for the module."""
    if BWRAP_PROBLEM:
        pytest.skip(BWRAP_PROBLEM)
    return list(expert_trajectories([compile_seed0(p) for p in TASK_SPECS], jobs=4))


def test_every_shipped_task_replays_to_one(shipped):
    assert len(shipped) == len(TASK_SPECS) >= 24
    low = {
        task.id: (rec["reward"], rec["error"], (rec.get("verdict") or {}).get("results"))
        for task, rec in shipped
        if rec["reward"] != 1.0
    }
    assert not low, low
    for task, rec in shipped:
        traj = rec["trajectory"]
        assert rec["status"] == "passed" and traj["outcome"] == "completed", task.id
        assistant = [m for m in traj["messages"] if m["role"] == "assistant"]
        with_tools = [m for m in assistant if m.get("tool_calls")]
        assert len(with_tools) >= 2, task.id
        assert all(n in ALL_TOOLS for m in with_tools for n in names(m)), task.id
        assert traj["messages"][0]["role"] == "system" and traj["messages"][1]["content"] == task.instruction
        # every tool call worked, and the final answer is plain text
        assert all(s["ok"] for s in traj["steps"] if s["kind"] == "tool"), task.id
        assert not assistant[-1].get("tool_calls") and traj["final_message"].startswith("Done")


def test_turn_shape_and_determinism():
    for path in TASK_SPECS:
        task = compile_seed0(path)
        turns = expert_turns(task)
        assert turns == expert_turns(compile_seed0(path)), path.stem
        assert len(turns) == len(task.solution) + 2
        ids = [c["id"] for t in turns for c in t.get("tool_calls") or []]
        assert len(ids) == len(set(ids))
        assert all(c["id"].startswith(f"call_{i}_") for i, t in enumerate(turns) for c in t.get("tool_calls") or [])
        reads = [args(c)["path"] for c in turns[0]["tool_calls"] if c["function"]["name"] == "read"]
        assert 1 <= len(reads) <= 4 and all(p in task.files for p in reads), path.stem
        assert turns[0]["content"] and all(t["content"] for t in turns)
        assert "tool_calls" not in turns[-1]
        # outputs named in the answer: every file_exists check path
        for check in task.checks:
            if check["type"] == "file_exists":
                assert check["path"] in turns[-1]["content"], path.stem


def test_reads_named_inputs_and_lists_named_folders():
    task = compile_seed0(ROOT / "specs/tasks/productivity/inbox-triage.yaml")
    reads, folders = named_inputs(task)
    assert reads[0] == "notes/triage-rules.md" and folders == ["inbox"]
    assert all(p.startswith("inbox/") for p in reads[1:]) and len(reads) == 4
    first = expert_turns(task)[0]
    assert names(first)[0] == "exec" and args(first["tool_calls"][0]) == {"command": "ls inbox/"}


def test_step_kinds_become_tool_calls():
    py = step_turn({"python": "print('PY')\nx = 1", "timeout": 30}, 3)
    call = py["tool_calls"][0]
    assert call["id"] == "call_3_0" and call["function"]["name"] == "exec"
    command = args(call)["command"]
    assert command == "python3 - <<'PY_1'\nprint('PY')\nx = 1\nPY_1" and args(call)["timeout"] == 30.0
    sh = args(step_turn({"script": "run.sh", "source": "echo hi\n", "interpreter": "bash"}, 1)["tool_calls"][0])
    assert sh == {"command": "bash -s <<'SH'\necho hi\nSH"}
    w = step_turn({"write": {"path": "a/b.txt", "content": "x"}}, 2)["tool_calls"][0]
    assert w["function"]["name"] == "write" and args(w) == {"path": "a/b.txt", "content": "x"}
    ex = step_turn({"exec": "make test", "name": "tests"}, 4)
    assert args(ex["tool_calls"][0]) == {"command": "make test"} and "(tests)" in ex["content"]


def test_message_and_cron_steps(lib):
    task = compile_seed0(lib / "specs" / "effects.yaml")
    turns = expert_turns(task)
    calls = [c for t in turns for c in t.get("tool_calls") or []]
    by_name = {c["function"]["name"]: args(c) for c in calls}
    assert by_name["message"] == {
        "action": "send",
        "channel": "slack",
        "target": "bob",
        "message": "The report is ready.",
    }
    assert by_name["cron"] == {
        "action": "add",
        "job": {"name": "file-report", "schedule": "0 9 * * 1", "text": "File the weekly report"},
    }
    assert "bob on slack" in turns[-1]["content"] and "file-report" in turns[-1]["content"]
    [(_, rec)] = expert_trajectories([task], jobs=1)
    assert rec["reward"] == 1.0, rec
    effects = rec["trajectory"]["side_effects"]
    assert effects["outbox"][0]["target"] == "bob" and effects["cron"][0]["schedule"] == "0 9 * * 1"


WRONG = """\
apiVersion: clawgym/v1
kind: Task
name: wrong
category: productivity
persona: ada
workspace: plain
files:
  - {path: input/numbers.txt, content: "1\\n2\\n3\\n"}
instruction: Sum the numbers in input/numbers.txt and write the total to output/total.txt.
solution:
  - exec: mkdir -p output && echo 7 > output/total.txt
checks:
  - {type: file_exists, path: output/total.txt, gate: true}
  - {type: numeric_close, path: output/total.txt, expected: 6}
"""


def test_command_keeps_passing_and_reports_failing(lib, tmp_path):
    (lib / "specs" / "wrong.yaml").write_text(WRONG)
    out = tmp_path / "experts.jsonl"
    buf = io.StringIO()
    summary = expert_command(
        [Path("specs/good.yaml"), Path("specs/wrong.yaml")],
        seeds="0-1",
        out=out,
        jobs=2,
        console=Console(file=buf, width=200),
    )
    assert summary["tasks"] == 4 and summary["kept"] == 2
    assert [f["task"] for f in summary["failed"]] == ["wrong@0", "wrong@1"]
    assert all("numeric_close" in f["reason"] and f["reward"] < 1 for f in summary["failed"])
    text = buf.getvalue()
    assert "4 task instance(s), 2 kept, 2 failed" in text and "failed wrong@0" in text and "numeric_close" in text
    back = list(read_jsonl(out))
    assert [t.task["id"] for t in back] == ["good@0", "good@1"]
    for t in back:
        assert t.verdict["status"] == "passed" and t.verdict["reward"] == 1.0 and t.verdict["trial_id"]
        assert t.messages[0]["role"] == "system" and t.tools and t.diff
        assert t.agent["type"] == "claw" and t.policy["type"] == "scripted"
