"""`clawgym export clawgym SPECS --out DIR`: task specs → published ClawGym task folders.

A spec imported from that format (its folder keeps `data_entry.json` and `reward/`) goes back
unchanged: the same `data_entry.json` bytes unless the spec's instruction, mount or category was
edited since, the same input files, `reward/` and `solution/`, so `reward.sh` prints the same
score on the same workspace. Any other task is written with a portable grader in `reward/`
(see `portable.py`): `check.py` runs the task's own checks against the workspace and a pristine
copy of its inputs, and prints the task's reward as its last line, which `reward.sh` passes on.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..compile import compile_task, load_task_spec
from ..errors import ClawgymError
from ..task import CATEGORY_LABELS, Task
from .clawgym_format import DATA_ENTRY, DEFAULT_MOUNT, INPUTS, SourceTask, read_task

BOOTSTRAP_NAMES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md", "USER.md",
                   "MEMORY.md")


@dataclass
class Exported:
    spec: str
    folder: str | None
    reason: str = ""


def task_specs(paths: Iterable[Path]) -> list[Path]:
    """Task spec files among `paths` (folders are searched for *.yaml of kind Task)."""
    found: list[Path] = []
    for path in paths:
        candidates = [path] if path.is_file() else sorted(path.rglob("*.yaml"))
        for p in candidates:
            if path.is_dir() and any(part.startswith(".") for part in p.relative_to(path).parts):
                continue
            try:
                head = p.read_text(encoding="utf-8", errors="replace")[:4000]
            except OSError:
                continue
            if path.is_file() or "\nkind: Task" in "\n" + head:
                found.append(p)
    return found


def is_imported(spec_dir: Path) -> bool:
    """A spec folder made by `clawgym import clawgym` (it keeps the source folder's files)."""
    return (spec_dir / DATA_ENTRY).is_file() and (spec_dir / "reward" / "check.py").is_file()


def input_files(task: Task, spec: dict[str, Any]) -> dict[str, bytes]:
    """The workspace files the task ships: all of them but the OpenClaw bootstrap files, which the
    harness writes itself (kept when the spec lists them among its own `files`)."""
    declared = {str(e.get("path", "")) for e in spec.get("files") or []}
    return {rel: data for rel, data in task.files.items() if rel not in BOOTSTRAP_NAMES or rel in declared}


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
    entry["metadata"] = {"category": CATEGORY_LABELS.get(task.category, task.category),
                         "grading_type": "hybrid" if task.rubric else "automated"}
    return entry, None


def export_task(spec_path: Path, out: Path, *, seed: int = 0) -> Exported:
    """Write one spec as a published-format folder under `out`; problems come back as a reason."""
    try:
        spec = load_task_spec(spec_path)
        task = compile_task(spec, seed)
    except ClawgymError as e:
        return Exported(str(spec_path), None, e.format().splitlines()[0])
    spec_dir = spec_path.resolve().parent
    source = read_task(spec_dir) if is_imported(spec_dir) else None
    inputs = input_files(task, spec.doc.data)
    entry, raw = data_entry(task, source, bool(inputs))
    target = out / str(entry["task_id"])
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / DATA_ENTRY).write_bytes(raw if raw is not None else
                                   (json.dumps(entry, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
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
        from .portable import write_clawgym_grader

        try:
            write_clawgym_grader(task, tmp, inputs)
        except ClawgymError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            return Exported(str(spec_path), None, e.format().splitlines()[0])
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    return Exported(str(spec_path), str(target))


def export_command(specs: list[Path], out: Path, *, seed: int = 0, console: Any = None) -> list[Exported]:
    """The CLI: export every task spec found, print refusals and a summary."""
    paths = task_specs(specs)
    if not paths:
        raise ClawgymError("no task specs found", hint="give task spec files or folders holding them")
    out.mkdir(parents=True, exist_ok=True)
    results = [export_task(p, out, seed=seed) for p in paths]
    refused = [r for r in results if r.folder is None]
    if console is not None:
        for r in refused:
            console.print(f"refused {r.spec}: {r.reason}", highlight=False, markup=False)
        console.print(f"exported {len(results) - len(refused)} task(s) to {out}"
                      + (f", refused {len(refused)}" if refused else ""), highlight=False, markup=False)
    return results

