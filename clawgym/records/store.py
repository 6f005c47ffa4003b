"""Trajectory files: versioned JSONL readers and writers, collection from a run folder, HF export.

One trajectory per line, each a `Trajectory.to_dict()` object whose `format` field names its
version (`clawgym.trajectory/v1`), so files can be concatenated. A trajectory collected from a
run carries its trial outcome in `verdict`: the verifier's verdict plus `trial_id`, `status`
(passed / failed / error), `reward` (None for errors) and `error`; `diff` holds the workspace diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .outcomes import INFRASTRUCTURE, normalize
from ..errors import ClawgymError, PrerequisiteError
from ..files.atomic import write_lines
from ..files.textsafe import printable
from .messages import chat_messages, fixed_columns
from .trajectory import FORMAT, Trajectory
from .trial_record import TrialRecord

FORMATS = (FORMAT,)
STATUSES = ("passed", "failed", "error")


def write_jsonl(path: Path, trajectories: Iterable[Trajectory | dict[str, Any]]) -> int:
    """Write trajectories to `path`, one JSON object a line (atomically); returns how many."""

    def rows() -> Iterator[dict[str, Any]]:
        for t in trajectories:
            data = t.to_dict() if isinstance(t, Trajectory) else dict(t)
            data.setdefault("format", FORMAT)
            yield data

    return write_lines(path, rows())


def read_jsonl(path: Path) -> Iterator[Trajectory]:
    """Trajectories from a JSONL file; ClawgymError at file:line for a bad line or unknown version."""
    path = Path(path)
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise ClawgymError(f"cannot read trajectories: {e.strerror or e}", file=str(path)) from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            yield parse_line(line, str(path), lineno)


def parse_line(line: str, file: str = "<string>", lineno: int | None = None) -> Trajectory:
    """One JSONL line as a Trajectory (errors located at `file`:`lineno`)."""
    where: dict[str, Any] = {"file": file, "line": lineno}
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise ClawgymError(
            f"not a JSON object: {e.msg} (column {e.colno})", hint="each line must hold one whole trajectory", **where
        ) from None
    if not isinstance(data, dict):
        raise ClawgymError(f"expected a JSON object, got {type(data).__name__}", **where)
    fmt = data.get("format")
    if fmt not in FORMATS:
        raise ClawgymError(
            f"unknown trajectory format {fmt!r}",
            hint=f"this clawgym reads {', '.join(FORMATS)}; upgrade clawgym to read newer files",
            **where,
        )
    missing = [k for k in ("task", "agent") if not isinstance(data.get(k), dict)]
    if missing:
        raise ClawgymError(f"trajectory lacks {' and '.join(missing)}", **where)
    return Trajectory.from_dict(data)


# ---------------------------------------------------------------------------------------------
# Collecting from a run folder


def status_of(t: Trajectory) -> str | None:
    return (t.verdict or {}).get("status")


def reward_of(t: Trajectory) -> float | None:
    reward = (t.verdict or {}).get("reward")
    return None if reward is None else float(reward)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ClawgymError(f"cannot read {path.name}: {e}", file=str(path)) from None


def collect_run(
    run_dir: Path,
    *,
    min_reward: float | None = None,
    status: str | Iterable[str] | None = None,
    category: str | Iterable[str] | None = None,
) -> Iterator[Trajectory]:
    """Every finished trial of a results folder as a Trajectory with its verdict, status and diff.

    Filters: `min_reward` (trials without a reward, i.e. errors, are dropped), `status` and
    `category` (one value or several). A trial that failed before its agent ran yields a
    trajectory with outcome `error` and no messages.
    """
    run_dir = Path(run_dir)
    trials = run_dir / "trials"
    if not trials.is_dir():
        raise ClawgymError(
            f"{run_dir} is not a results folder (no trials/ inside)", hint="pass the `out` folder of a `clawgym run`"
        )
    statuses = _choice(status, "status")
    categories = _choice(category, "category")
    for record_path in sorted(trials.glob("*/record.json")):
        try:
            rec = TrialRecord.from_dict(_load(record_path))
        except ValueError as e:
            raise ClawgymError(
                str(e),
                file=str(record_path),
                hint="every trials/*/record.json is written by clawgym run; remove a stray file",
            ) from None
        if statuses is not None and rec.status not in statuses:
            continue
        if categories is not None and rec.category not in categories:
            continue
        if min_reward is not None and (rec.reward is None or rec.reward < min_reward):
            continue
        folder = record_path.parent
        traj_path = folder / "trajectory.json"
        if traj_path.is_file():
            t = Trajectory.from_dict(_load(traj_path))
        else:
            t = Trajectory(task=rec.task, agent=rec.agent, outcome="error", error=rec.error)
        attach_outcome(t, rec)
        diff_path = folder / "workspace.diff"
        t.diff = diff_path.read_text(encoding="utf-8", errors="replace") if diff_path.is_file() else None
        yield t


def attach_outcome(t: Trajectory, rec: TrialRecord | Mapping[str, Any]) -> Trajectory:
    """Put a trial record's outcome on its trajectory: the verdict plus trial_id, status, reward, error."""
    if not isinstance(rec, TrialRecord):
        rec = TrialRecord.from_dict(rec)
    verdict = rec.verdict.to_dict() if rec.verdict is not None else {}
    t.verdict = {**verdict, "trial_id": rec.trial_id, "status": rec.status, "reward": rec.reward, "error": rec.error}
    return t


def _choice(value: str | Iterable[str] | None, what: str) -> set[str] | None:
    if value is None:
        return None
    values = {value} if isinstance(value, str) else set(value)
    if what == "status" and values - set(STATUSES):
        raise ClawgymError(
            f"unknown status {', '.join(sorted(values - set(STATUSES)))}", hint=f"use {', '.join(STATUSES)}"
        )
    return values


# ---------------------------------------------------------------------------------------------
# Hugging Face export


def sft_row(t: Trajectory) -> dict[str, Any]:
    """One dataset row: messages, tools (JSON text), task provenance, reward and status.

    Messages and tools are training data, kept byte for byte; the provenance strings are what people
    read in a dataset viewer, so their controls, escapes and bidi characters are shown escaped."""
    task = t.task or {}
    return {
        "messages": [fixed_columns(m) for m in chat_messages(t.messages)],
        "tools": json.dumps(t.tools, ensure_ascii=False),
        "task_id": printable(str(task.get("id") or task.get("name") or "")),
        "task_hash": printable(str(task.get("hash") or "")),
        "seed": int(task.get("seed") or 0),
        "category": printable(str(task.get("category") or "")),
        "reward": reward_of(t),
        "status": _shown(status_of(t) or ("error" if normalize(t.outcome) in INFRASTRUCTURE else None)),
    }


def _shown(value: Any) -> Any:
    return printable(value) if isinstance(value, str) else value


def to_hf_dataset(trajectories: Iterable[Trajectory]) -> Any:
    """A `datasets.Dataset` with columns messages, tools, task_id, task_hash, seed, category, reward, status."""
    try:
        import datasets
    except ImportError:
        raise PrerequisiteError(
            "exporting to a Hugging Face dataset needs the `datasets` package", hint="pip install datasets"
        ) from None
    s = datasets.Value("string")
    call = {"id": s, "type": s, "function": {"name": s, "arguments": s}}
    features = datasets.Features(
        {
            "messages": [{"role": s, "content": s, "tool_calls": [call], "tool_call_id": s, "name": s}],
            "tools": s,
            "task_id": s,
            "task_hash": s,
            "seed": datasets.Value("int64"),
            "category": s,
            "reward": datasets.Value("float64"),
            "status": s,
        }
    )
    return datasets.Dataset.from_list([sft_row(t) for t in trajectories], features=features)
