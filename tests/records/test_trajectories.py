"""Trajectory JSONL files, collection from a results folder, and the Hugging Face export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clawgym.errors import ClawgymError, PrerequisiteError
from clawgym.policy.scripted import tool_call
from clawgym.records.store import collect_run, read_jsonl, reward_of, status_of, to_hf_dataset, write_jsonl
from clawgym.records.trajectory import Trajectory

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lib"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def traj(name="t", seed=0, category="productivity", final="done") -> Trajectory:
    t = Trajectory(
        task={
            "name": name,
            "id": f"{name}@{seed}",
            "hash": f"h-{name}-{seed}",
            "seed": seed,
            "category": category,
            "spec_file": f"specs/{name}.yaml",
        },
        agent={"type": "claw", "name": "claw"},
    )
    t.tools = TOOLS
    t.messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("write", "c1", path="a.txt")]},
        {"role": "tool", "tool_call_id": "c1", "content": "wrote 3 bytes"},
        {"role": "assistant", "content": final},
    ]
    t.turns = [{"index": 0, "token_ids": [1, 2], "logprobs": [-0.1, -0.2]}]
    t.side_effects = {"outbox": [{"channel": "email", "target": "b", "message": "m", "turn": 1}]}
    return t.finish("completed")


def test_round_trip(tmp_path):
    items = [traj("a"), traj("b", 3)]
    path = tmp_path / "sub" / "t.jsonl"
    assert write_jsonl(path, items) == 2
    assert len(path.read_text().splitlines()) == 2
    back = list(read_jsonl(path))
    assert [b.to_dict() for b in back] == [t.to_dict() for t in items]
    assert back[1].turns[0]["logprobs"] == [-0.1, -0.2]
    write_jsonl(path, [items[0].to_dict()])  # dicts too, overwriting atomically
    assert len(list(read_jsonl(path))) == 1 and not list(path.parent.glob(".*tmp"))


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{not json", "t.jsonl:3: not a JSON object"),
        ("[1]", "t.jsonl:3: expected a JSON object, got list"),
        (
            '{"format": "clawgym.trajectory/v9", "task": {}, "agent": {}}',
            "t.jsonl:3: unknown trajectory format 'clawgym.trajectory/v9' (this clawgym reads clawgym.trajectory/v1",
        ),
        ('{"task": {}, "agent": {}}', "t.jsonl:3: unknown trajectory format None"),
        ('{"format": "clawgym.trajectory/v1", "agent": {}}', "t.jsonl:3: trajectory lacks task"),
    ],
)
def test_bad_line_error_names_file_and_line(tmp_path, line, problem):
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [traj()])
    path.write_text(path.read_text() + "\n" + line + "\n")  # line 2 blank, line 3 bad
    reader = read_jsonl(path)
    assert next(reader).task["name"] == "t"
    with pytest.raises(ClawgymError) as err:
        next(reader)
    assert problem in err.value.format() and str(path) in err.value.format()


def test_missing_file(tmp_path):
    with pytest.raises(ClawgymError, match="cannot read trajectories"):
        list(read_jsonl(tmp_path / "nope.jsonl"))


def fake_run(root: Path) -> Path:
    """A results folder with a passed, a failed and an error trial (the last without trajectory)."""
    trials = root / "trials"
    cases = [
        ("a.s0.claw.a0", "passed", 1.0, "productivity", True),
        ("b.s0.claw.a0", "failed", 0.25, "systems", True),
        ("c.s0.claw.a0", "error", None, "systems", False),
    ]
    for tid, status, reward, cat, has_traj in cases:
        d = trials / tid
        d.mkdir(parents=True)
        t = traj(tid.split(".")[0], category=cat)
        rec = {
            "format": "clawgym.trial/v1",
            "trial_id": tid,
            "task": t.task,
            "agent": t.agent,
            "status": status,
            "reward": reward,
            "error": "PolicyError: down" if status == "error" else None,
            "verdict": None
            if status == "error"
            else {"reward": reward, "passed": status == "passed", "results": [], "gate_failed": None, "error": None},
        }
        (d / "record.json").write_text(json.dumps(rec))
        if has_traj:
            (d / "trajectory.json").write_text(json.dumps(t.to_dict()))
            (d / "workspace.diff").write_text(f"+++ b/{tid}.txt\n")
    (trials / "unfinished").mkdir()  # no record.json: not collected
    return root


def test_collect_run_attaches_outcomes_and_filters(tmp_path):
    run = fake_run(tmp_path / "run")
    got = {t.task["name"]: t for t in collect_run(run)}
    assert set(got) == {"a", "b", "c"}
    a, c = got["a"], got["c"]
    assert status_of(a) == "passed" and reward_of(a) == 1.0 and a.verdict["trial_id"] == "a.s0.claw.a0"
    assert a.diff == "+++ b/a.s0.claw.a0.txt\n" and a.messages[-1]["content"] == "done"
    assert status_of(c) == "error" and reward_of(c) is None and c.outcome == "error"
    assert c.verdict["error"] == "PolicyError: down" and c.messages == [] and c.diff is None
    names = lambda **kw: sorted(t.task["name"] for t in collect_run(run, **kw))  # noqa: E731
    assert names(min_reward=0.5) == ["a"]
    assert names(min_reward=0) == ["a", "b"]
    assert names(status="error") == ["c"] and names(status=["passed", "failed"]) == ["a", "b"]
    assert names(category="systems") == ["b", "c"]
    assert names(category="systems", min_reward=0.1) == ["b"]
    out = tmp_path / "all.jsonl"
    assert write_jsonl(out, collect_run(run)) == 3
    assert [status_of(t) for t in read_jsonl(out)] == ["passed", "failed", "error"]


def test_collect_run_errors(tmp_path):
    with pytest.raises(ClawgymError, match="not a results folder"):
        list(collect_run(tmp_path))
    run = fake_run(tmp_path / "run")
    with pytest.raises(ClawgymError, match="unknown status won"):
        list(collect_run(run, status="won"))
    (run / "trials" / "a.s0.claw.a0" / "record.json").write_text("{torn")
    with pytest.raises(ClawgymError, match="record.json"):
        list(collect_run(run))


def test_collect_from_a_real_run(tmp_path, monkeypatch, bwrap):
    from click.testing import CliRunner

    from clawgym.cli.main import main

    root = tmp_path / "lib"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("bad"))
    monkeypatch.chdir(root)
    (root / "run.yaml").write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: t\ntasks: [specs/good.yaml]\n"
        "seeds: [0]\nagents: [{type: oracle}, {type: nop}]\nout: out\n"
    )
    result = CliRunner().invoke(main, ["run", "run.yaml", "--quiet"])
    assert result.exit_code == 0, result.output
    got = {t.agent["type"]: t for t in collect_run(root / "out")}
    assert status_of(got["oracle"]) == "passed" and "+++ b/output/total.txt" in got["oracle"].diff
    assert status_of(got["nop"]) == "failed" and got["nop"].verdict["gate_failed"]
    assert [t.agent["type"] for t in collect_run(root / "out", min_reward=1)] == ["oracle"]


def test_hf_dataset_columns(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the `datasets` package is not installed")
    run = fake_run(tmp_path / "run")
    ds = to_hf_dataset(collect_run(run))
    assert isinstance(ds, datasets.Dataset) and len(ds) == 3
    assert set(ds.column_names) == {"messages", "tools", "task_id", "task_hash", "seed", "category", "reward", "status"}
    row = ds[0]
    assert row["task_id"] == "a@0" and row["task_hash"] == "h-a-0" and row["seed"] == 0
    assert row["category"] == "productivity" and row["reward"] == 1.0 and row["status"] == "passed"
    assert json.loads(row["tools"]) == TOOLS
    call = row["messages"][2]["tool_calls"][0]
    assert call["function"] == {"name": "write", "arguments": '{"path": "a.txt"}'}
    assert row["messages"][3]["tool_call_id"] == "c1" and row["messages"][0]["tool_calls"] is None
    assert ds[2]["reward"] is None and ds[2]["status"] == "error" and ds[2]["messages"] == []


def test_hf_export_without_datasets_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_datasets(name, *a, **k):
        if name == "datasets":
            raise ImportError("no datasets")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(PrerequisiteError, match="pip install datasets"):
        to_hf_dataset([traj()])
