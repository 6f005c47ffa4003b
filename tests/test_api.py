"""The public API: what `clawgym` exports is listed here (a change to it is deliberate), and the
verbs do in one call what the CLI does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import clawgym

LIB = Path(__file__).parent / "fixtures" / "lib"

PUBLIC = [
    "API_VERSION",
    "__version__",
    "load_task",
    "run_task",
    "run_spec",
    "verify_task",
    "read_records",
    "read_trajectories",
    "load_task_spec",
    "compile_task",
    "register",
    "TaskSpec",
    "Task",
    "Trajectory",
    "TrialRecord",
    "VerifyRequest",
    "Verdict",
    "CheckResult",
    "Check",
    "CheckContext",
    "CheckFailure",
    "Agent",
    "Policy",
    "Completion",
    "Sandbox",
    "SandboxLimits",
    "ExecResult",
    "ClawgymError",
    "InfraError",
    "PrerequisiteError",
]


def test_the_public_api_is_what_it_says():
    assert sorted(clawgym.__all__) == sorted(PUBLIC)
    for name in clawgym.__all__:
        assert getattr(clawgym, name) is not None, name
    assert set(PUBLIC) <= set(dir(clawgym))


def test_importing_clawgym_loads_nothing_heavy():
    code = "import sys, clawgym; print(sorted(m for m in sys.modules if m.startswith('clawgym')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == ["clawgym", "clawgym.moved"]  # stdlib only


def test_every_name_in_docs_api(tmp_path):
    text = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    missing = [n for n in PUBLIC if n not in ("API_VERSION", "__version__") and f"`{n}" not in text]
    assert missing == []


def test_load_run_verify_and_read_in_a_few_calls(tmp_path, bwrap):
    task = clawgym.load_task(LIB / "specs" / "good.yaml", seed=2)
    assert isinstance(task, clawgym.Task) and task.seed == 2
    record = clawgym.run_task(task, out=tmp_path / "one")
    assert record["status"] == "passed" and record["reward"] == 1.0
    assert (tmp_path / "one" / "trials" / record["trial_id"] / "record.json").is_file()
    nop = clawgym.run_task(task, {"type": "nop"})
    assert nop["status"] == "failed" and nop["reward"] < 1.0
    # grading a workspace by hand: the untouched inputs score what doing nothing scores
    from clawgym.compile.workspace import materialize

    materialize(task, tmp_path / "ws")
    verdict = clawgym.verify_task(task, tmp_path / "ws")
    assert isinstance(verdict, clawgym.Verdict) and verdict.reward == nop["reward"]
    records = clawgym.run_spec(LIB / "specs" / "good.yaml", out=tmp_path / "run")
    assert [r["status"] for r in records] == ["passed"]
    assert list(clawgym.read_records(tmp_path / "run")) == [records[0]["trial_id"]]
    trajectories = list(clawgym.read_trajectories(tmp_path / "run", min_reward=1.0))
    assert len(trajectories) == 1 and isinstance(trajectories[0], clawgym.Trajectory)


def test_a_bad_spec_is_a_clawgym_error_with_where(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: clawgym/v1\nkind: Task\nname: x\n")
    try:
        clawgym.load_task(bad)
    except clawgym.ClawgymError as e:
        assert "bad.yaml" in str(e.format() if hasattr(e, "format") else e)
    else:
        raise AssertionError("a task without instruction loaded")


def test_old_module_paths_still_import_with_a_warning():
    """0.1 module paths resolve to the moved modules for one release, each with a DeprecationWarning."""
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "import importlib, clawgym\n"
        "for old, new in [('clawgym.rollout', 'clawgym.run.trial'), ('clawgym.executors.local', 'clawgym.run.executors'),\n"
        "                 ('clawgym.run_cmd', 'clawgym.cli.run'), ('clawgym.trajectory_store', 'clawgym.records.store')]:\n"
        "    try:\n"
        "        importlib.import_module(old)\n"
        "    except DeprecationWarning as w:\n"
        "        assert new in str(w), w\n"
        "    else:\n"
        "        raise SystemExit(old + ' did not warn')\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "import clawgym.rollout, clawgym.run.trial\n"
        "assert clawgym.rollout is clawgym.run.trial\n"
        "from clawgym.compile import compile_task\n"
        "from clawgym.compile.compiler import compile_task as new\n"
        "assert compile_task is new\n"
        "from clawgym.run import execute\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
