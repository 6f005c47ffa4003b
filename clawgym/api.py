"""The verbs a script uses, each one call: load a task, run one trial, run a whole spec, read
results. Everything here is also exported from `clawgym` itself (see `clawgym.__all__` and
docs/api.md); the nouns (Task, Trajectory, Verdict, the plugin base classes) come from the
modules that define them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from .compile.compiler import compile_task, load_task_spec
from .spec.task import Task
from .records.trajectory import Trajectory
from .records.trial_record import TrialRecord


def load_task(path: str | Path, seed: int = 0) -> Task:
    """Load, validate and compile one task spec at `seed` (a ClawgymError says what is wrong, where)."""
    return compile_task(load_task_spec(path), seed)


def run_task(
    task: Task | str | Path,
    agent: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    sandbox: dict[str, Any] | None = None,
    judge: dict[str, Any] | None = None,
    out: str | Path | None = None,
) -> TrialRecord:
    """Run one trial of `task` (a compiled Task, or a spec path compiled at `seed`) with `agent`
    (an agent config, default the reference solution) in a fresh sandbox, verify it and return the
    trial record (`status`, `reward`, `verdict`, ...). With `out`, the trial's files are written
    there too (record.json, trajectory.json, workspace.diff)."""
    from .run.trial import Trial, execute_trial

    if not isinstance(task, Task):
        task = load_task(task, seed)
    trial = Trial(task, dict(agent or {"type": "oracle"}))
    trial_dir = None
    if out is not None:
        trial_dir = Path(out) / "trials" / trial.id
        trial_dir.mkdir(parents=True, exist_ok=True)
    return execute_trial(trial, sandbox_spec=sandbox, judge=judge, trial_dir=trial_dir)


def run_spec(spec: str | Path, *, out: str | Path | None = None, resume: bool = False) -> list[TrialRecord]:
    """Run a Run spec (or a single Task spec with its defaults), as `clawgym run SPEC` does, and
    return every trial record; files land in the spec's `out` (or `out`)."""
    from .run.plan import plan_for_task, plan_from_run_spec
    from .run.runner import execute
    from .spec.load import load_file

    doc = load_file(spec)
    if doc.data.get("kind") == "Task":
        plan = plan_for_task(doc, agents=[{"type": "oracle"}], seeds=[0], out=str(out) if out else None)
    else:
        plan = plan_from_run_spec(doc, out=str(out) if out else None)
    return execute(plan, resume=resume)


def read_records(out: str | Path) -> dict[str, TrialRecord]:
    """The trial records of a results folder, by trial id (files of every record version load)."""
    from .run.runner import load_records

    return load_records(Path(out))


def read_trajectories(path: str | Path, **filters: Any) -> Iterator[Trajectory]:
    """Trajectories from a results folder (`min_reward=`, `status=` filter them) or a JSONL file."""
    from .records.store import collect_run, read_jsonl

    path = Path(path)
    if path.is_dir():
        return collect_run(path, **filters)
    return read_jsonl(path)
