"""`clawgym export clawgym SPECS --out DIR`: task specs → published ClawGym task folders.

A spec imported from that format (its folder keeps `data_entry.json` and `reward/`) goes back
unchanged: the same `data_entry.json` bytes unless the spec's instruction, mount or category was
edited since, the same input files, `reward/` and `solution/`, so `reward.sh` prints the same
score on the same workspace. Any other task is written with a portable grader in `reward/`
(see `portable.py`): `check.py` runs the task's own checks against the workspace and a pristine
copy of its inputs, and prints the task's reward as its only output, which `reward.sh` reads as one number.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile.compiler import compile_task, load_task_spec
from ..errors import ClawgymError
from ..files.textsafe import printable
from ..spec.task import CATEGORY_LABELS, Task
from .clawgym_format import DATA_ENTRY, DEFAULT_MOUNT, INPUTS, REWARD_SH, SourceTask, read_task
from .folders import staging, swap_in
from .harbor_export import solve_script
from .portable import Refused, find_specs, grading_refusals, write_bundle


@dataclass
class Exported:
    spec: str
    folder: str | None
    reason: str = ""


def is_imported(spec_dir: Path) -> bool:
    """A spec folder made by `clawgym import clawgym` (it keeps the source folder's files)."""
    return (spec_dir / DATA_ENTRY).is_file() and (spec_dir / "reward" / "check.py").is_file()


def input_files(task: Task, spec: dict[str, Any], imported: bool) -> dict[str, bytes]:
    """The files that go to input_files/: for an imported spec, what its `files` entries list (the
    source's inputs, without the bootstrap files the harness writes); otherwise the whole workspace,
    bootstrap and memory files included, so the task grades the same anywhere."""
    if not imported:
        return dict(task.files)
    declared = [str(e.get("path", "")) for e in spec.get("files") or []]
    return {
        rel: data
        for rel, data in task.files.items()
        if any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in declared)
    }


def data_entry(task: Task, source: SourceTask | None, has_inputs: bool) -> tuple[dict[str, Any], bytes | None]:
    """The data_entry.json object for `task`, and the source's bytes when nothing changed."""
    if source is not None:
        entry = dict(source.entry)
        entry["user_query"] = task.instruction
        if has_inputs and (task.mount != DEFAULT_MOUNT or "input_mount_dir" in entry):
            entry["input_mount_dir"] = task.mount
        if task.category != (source.category or ""):
            entry["metadata"] = {**source.metadata, "category": CATEGORY_LABELS.get(task.category, task.category)}
        return entry, (source.entry_bytes if entry == source.entry else None)
    entry = {"task_id": task.name, "user_query": task.instruction}
    if has_inputs:
        entry["input_mount_dir"] = task.mount
    entry["metadata"] = {
        "category": CATEGORY_LABELS.get(task.category, task.category),
        "grading_type": "hybrid" if task.rubric else "automated",
    }
    return entry, None


CHECK_PY = '''#!/usr/bin/env python3
"""Grader of {task_id}, exported by ClawGym: runs the task's own checks against the workspace.

Beside this file: clawgym.zip (the clawgym package), task.json (the checks with their expected
values), original/ (the pristine workspace) and task_files/ (grading scripts). As a script it
prints the task's reward (checks weighted, gates applied) as its only output, which reward.sh
reads as one number; the checks' scores go to stderr. Reads the agent's final message from
OPENCLAW_REWARD_PAYLOAD when the harness provides it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "clawgym.zip"))


def verdict(transcript, workspace_path):
    from pathlib import Path

    from clawgym.interop.portable_grade import grade as run_checks

    trajectory = None
    payload = os.environ.get("OPENCLAW_REWARD_PAYLOAD")
    if payload and os.path.isfile(payload):
        with open(payload, encoding="utf-8") as fh:
            data = json.load(fh)
        trajectory = {{"final_message": data.get("final_message"), "messages": data.get("transcript") or []}}
    elif transcript is not None:
        trajectory = {{"messages": list(transcript)}}
    return run_checks(Path(HERE), Path(workspace_path), trajectory)


def grade(transcript, workspace_path):
    """Named scores of the task's checks (their weighted mean, gates applied, is the reward)."""
    return {{r["name"]: r["score"] for r in verdict(transcript, workspace_path)["results"]}}


if __name__ == "__main__":
    result = verdict(None, sys.argv[1] if len(sys.argv) > 1 else {mount!r})
    print(json.dumps({{r["name"]: r["score"] for r in result["results"]}}, ensure_ascii=False), file=sys.stderr)
    print(result["reward"])
'''


def write_grader(task: Task, folder: Path) -> None:
    """reward/ (check.py, reward.sh and the grader bundle) and, when the task has a reference
    solution, solution/solve.sh; Refused when the exported grader cannot grade the task."""
    reasons = grading_refusals(task, payload_ok=True)
    if reasons:
        raise Refused("; ".join(reasons))
    reward = folder / "reward"
    write_bundle(task, reward)
    (reward / "check.py").write_text(CHECK_PY.format(task_id=task.id, mount=task.mount), encoding="utf-8")
    (reward / "reward.sh").write_text(REWARD_SH, encoding="utf-8")
    (reward / "reward.sh").chmod(0o755)
    if task.solution and not any("message" in step or "cron" in step for step in task.solution):
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text(solve_script(task), encoding="utf-8")
        (folder / "solution" / "solve.sh").chmod(0o755)


def export_task(spec_path: Path, out: Path, *, seed: int = 0) -> Exported:
    """Write one spec as a published-format folder under `out`; problems come back as a reason."""
    try:
        spec = load_task_spec(spec_path)
        task = compile_task(spec, seed)
    except ClawgymError as e:
        return Exported(str(spec_path), None, e.format().splitlines()[0])
    spec_dir = spec_path.resolve().parent
    source = read_task(spec_dir) if is_imported(spec_dir) else None
    inputs = input_files(task, spec.doc.data, imported=source is not None)
    entry, raw = data_entry(task, source, bool(inputs))
    target = out / str(entry["task_id"])
    tmp = staging(target)
    (tmp / DATA_ENTRY).write_bytes(
        raw if raw is not None else (json.dumps(entry, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    )
    for rel, data in inputs.items():
        path = tmp / INPUTS / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if rel in task.executables:
            path.chmod(0o755)
    if source is not None:
        for sub in ("reward", "solution"):
            if (spec_dir / sub).is_dir():
                shutil.copytree(spec_dir / sub, tmp / sub, symlinks=True)
    else:
        try:
            write_grader(task, tmp)
        except Refused as e:
            shutil.rmtree(tmp, ignore_errors=True)
            return Exported(str(spec_path), None, str(e))
    swap_in(tmp, target)
    return Exported(str(spec_path), str(target))


def export_command(specs: list[Path], out: Path, *, seed: int = 0, console: Any = None) -> list[Exported]:
    """The CLI: export every task spec found, print refusals and a summary."""
    paths = find_specs(specs)
    if not paths:
        raise ClawgymError("no task specs found", hint="give task spec files or folders holding them")
    out.mkdir(parents=True, exist_ok=True)
    results = [export_task(p, out, seed=seed) for p in paths]
    refused = [r for r in results if r.folder is None]
    if console is not None:
        for r in refused:
            console.print(printable(f"refused {r.spec}: {r.reason}"), highlight=False, markup=False)
        console.print(
            f"exported {len(results) - len(refused)} task(s) to {out}"
            + (f", refused {len(refused)}" if refused else ""),
            highlight=False,
            markup=False,
        )
    return results
