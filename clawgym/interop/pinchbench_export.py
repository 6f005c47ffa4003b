"""`clawgym export pinchbench SPECS --out DIR`: task specs → PinchBench task files (`tasks/`, `assets/`).

A spec imported from PinchBench and not edited since (its task.yaml has the bytes the import
wrote) goes back as its original task file, byte for byte, with the fixtures it copies. Any other
task is written as a task file of its own: front matter (id, name, category, grading_type,
timeout_seconds, workspace_files, grading_weights), the sections by heading, and in `## Automated
Checks` a generated `grade(transcript, workspace_path)` that runs the task's own checks with our
portable grader (`assets/clawgym/<id>/`: the clawgym package as a zip, the compiled checks, the
pristine workspace) and returns `{"clawgym_reward": reward}`, so PinchBench's mean of the values
is exactly our reward. An edited imported task keeps its own grader.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile.compiler import compile_task, load_task_spec
from ..errors import ClawgymError
from ..files.textsafe import printable
from ..spec.task import Task
from ..spec.write import dump_spec
from .pinchbench_format import ASSETS, BOOTSTRAP_FILES, MANIFEST, TASKS
from .pinchbench_import import IMPORTED, SOURCE, read_suite
from .portable import Refused, find_specs, grading_refusals, write_bundle

BUNDLES = "clawgym"  # under assets/: one portable grader per exported task
NOT_FIXTURES = set(BOOTSTRAP_FILES) | {"AGENTS.md"}


@dataclass
class Exported:
    spec: str
    file: str | None
    reason: str = ""
    verbatim: bool = False


def unedited(spec_file: Path) -> dict[str, Any] | None:
    """What the import recorded, when `spec_file` is an imported spec with the bytes the import wrote."""
    try:
        meta = json.loads((spec_file.parent / SOURCE / IMPORTED).read_text(encoding="utf-8"))
        text = spec_file.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or hashlib.sha256(text).hexdigest() != meta.get("spec_sha256"):
        return None
    return meta if (spec_file.parent / SOURCE / str(meta.get("file"))).is_file() else None


def _copy_assets(spec_dir: Path, out: Path) -> None:
    src = spec_dir / ASSETS
    if src.is_dir():
        shutil.copytree(src, out / ASSETS, dirs_exist_ok=True, symlinks=True)


GRADE = '''def grade(transcript: list, workspace_path: str) -> dict:
    """
    Grade with the task's own ClawGym checks (exported by ClawGym).

    The portable grader lies in assets/clawgym/{task_id}/ (set CLAWGYM_PINCHBENCH_ASSETS to the
    assets folder when the runner's working directory is not the repository). The result's one
    value is the task's reward, so the mean of the values is exactly ClawGym's score.

    Args:
        transcript: Parsed JSONL transcript as list of dicts
        workspace_path: Path to the task's isolated workspace directory

    Returns:
        Dict mapping criterion names to scores (0.0 to 1.0)
    """
    import os
    import sys
    from pathlib import Path

    task_id = {task_id!r}
    roots = [os.environ.get("CLAWGYM_PINCHBENCH_ASSETS", ""), str(Path.cwd() / "assets")]
    roots += [str(p / "assets") for p in Path.cwd().parents]
    bundle = next((Path(r) / "clawgym" / task_id for r in roots
                   if r and (Path(r) / "clawgym" / task_id / "clawgym.zip").is_file()), None)
    if bundle is None:
        raise FileNotFoundError("the ClawGym grader of " + task_id + " is not in assets/clawgym/" + task_id)
    final = ""
    for event in transcript:
        msg = event.get("message", {{}}) if event.get("type") == "message" else {{}}
        if msg.get("role") == "assistant":
            for item in msg.get("content", []):
                if item.get("type") == "text" and item.get("text"):
                    final = item["text"]
    sys.path.insert(0, str(bundle / "clawgym.zip"))
    try:
        from clawgym.interop.portable_grade import grade as clawgym_grade
        verdict = clawgym_grade(bundle, Path(workspace_path), {{"final_message": final, "messages": []}})
    finally:
        sys.path.remove(str(bundle / "clawgym.zip"))
    return {{"clawgym_reward": float(verdict["reward"])}}
'''


def _grading_type(task: Task) -> tuple[str, str | None]:
    """(grading_type, the imported grader's path or None)."""
    graders = [c for c in task.checks if c.get("type") == "pinchbench_grade"]
    grader = next((str(c["grader"]) for c in graders if c.get("grader")), None)
    judged_only = bool(graders) and grader is None
    if task.rubric:
        return ("llm_judge" if judged_only or task.rubric_weight >= 1 else "hybrid"), grader
    return "automated", grader


def _fixtures(task: Task, spec: dict[str, Any], task_id: str, out: Path) -> list[dict[str, Any]]:
    declared = [str(e.get("path", "")) for e in spec.get("files") or []] if spec.get("files") else None
    entries = []
    for rel, data in sorted(task.files.items()):
        if rel in NOT_FIXTURES or (
            declared is not None and not any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in declared)
        ):
            continue
        try:
            text = data.decode("utf-8")
            if "\x00" in text:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "binary")
            entries.append({"path": rel, "content": text})
        except UnicodeDecodeError:
            source = f"{BUNDLES}/{task_id}/fixtures/{rel}"
            (out / ASSETS / source).parent.mkdir(parents=True, exist_ok=True)
            (out / ASSETS / source).write_bytes(data)
            entries.append({"source": source, "dest": rel})
    return entries


def task_file(task: Task, spec: dict[str, Any], spec_dir: Path, task_id: str, out: Path) -> str:
    """The PinchBench task file of `task` (writes its portable grader and binary fixtures under out/assets/)."""
    kind, grader = _grading_type(task)
    front: dict[str, Any] = {
        "id": task_id,
        "name": task.title or task.name,
        "category": spec.get("subcategory") or task.category or "productivity",
        "grading_type": kind,
        "timeout_seconds": int(task.limits.get("seconds", 120)),
        "workspace_files": _fixtures(task, spec, task_id, out),
    }
    if kind == "hybrid":
        front["grading_weights"] = {
            "automated": round(1 - task.rubric_weight, 6),
            "llm_judge": round(task.rubric_weight, 6),
        }
    parts = [
        "---\n" + dump_spec(front) + "---\n",
        "## Prompt\n\n" + task.instruction.strip() + "\n",
        "## Expected Behavior\n\n"
        + (str(spec.get("description") or "").strip() or "The task's checks describe what counts as done.")
        + "\n",
    ]
    bullets = [f"- [ ] {c.get('name') or c.get('type')}" for c in task.checks if float(c.get("weight", 1) or 0) > 0]
    bullets += [f"- [ ] {str(c['criterion']).splitlines()[0]}" for c in task.rubric]
    parts.append("## Grading Criteria\n\n" + "\n".join(bullets) + "\n")
    if kind != "llm_judge":
        if grader is not None:
            code = (spec_dir / grader).read_text(encoding="utf-8")
        else:
            refusals = grading_refusals(task, payload_ok=True)
            if refusals:
                raise Refused("; ".join(refusals))
            write_bundle(task, out / ASSETS / BUNDLES / task_id)
            code = GRADE.format(task_id=task_id)
        parts.append("## Automated Checks\n\n```python\n" + code.rstrip("\n") + "\n```\n")
    if task.rubric:
        total = sum(float(c.get("weight", 1)) for c in task.rubric) or 1.0
        crits = []
        for i, c in enumerate(task.rubric, 1):
            head, _, body = str(c["criterion"]).strip().partition("\n")
            if "(weight:" not in head.lower():
                head = f"Criterion {i}: {head} (Weight: {round(100 * float(c.get('weight', 1)) / total):d}%)"
            crits.append(f"### {head}\n" + (f"\n{body.strip()}\n" if body.strip() else ""))
        parts.append("## LLM Judge Rubric\n\n" + "\n".join(crits))
    return "\n".join(parts)


def export_one(spec_file: Path, out: Path) -> Exported:
    """Export one spec into `out/tasks/`; a task that cannot be exported is refused with the reason."""
    meta = unedited(spec_file)
    if meta is not None:
        target = out / TASKS / str(meta["file"])
        shutil.copy2(spec_file.parent / SOURCE / str(meta["file"]), target)
        _copy_assets(spec_file.parent, out)
        return Exported(str(spec_file), str(target.relative_to(out)), verbatim=True)
    try:
        spec = load_task_spec(spec_file)
        task = compile_task(spec, 0)
    except ClawgymError as e:
        return Exported(str(spec_file), None, f"does not compile: {e.format() if hasattr(e, 'format') else e}")
    try:
        recorded = json.loads((spec_file.parent / SOURCE / IMPORTED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    task_id = str(recorded.get("id") or ("task_" + task.name.replace("-", "_").removeprefix("task_")))
    name = str(recorded.get("file") or f"{task_id}.md")
    try:
        text = task_file(task, dict(spec.data), spec_file.parent, task_id, out)
    except Refused as e:
        return Exported(str(spec_file), None, str(e))
    _copy_assets(spec_file.parent, out)
    (out / TASKS / name).write_text(text, encoding="utf-8")
    return Exported(str(spec_file), f"{TASKS}/{name}")


def export_command(paths: list[Path], out: Path, console: Any = None) -> list[Exported]:
    """The CLI: export every task spec found under `paths`; the original manifest when a whole import goes out."""
    specs = find_specs(paths)
    if not specs:
        raise ClawgymError(
            "no task specs found in " + ", ".join(map(str, paths)), hint="give task spec files or folders holding them"
        )
    (out / TASKS).mkdir(parents=True, exist_ok=True)
    results = [export_one(s, out) for s in specs]
    for folder in {Path(p).resolve() for p in paths if Path(p).is_dir()}:
        suite = read_suite(folder)
        manifest = folder / f"pinchbench-{MANIFEST}"
        names = {t.get("spec") for t in (suite or {}).get("tasks", []) if t.get("spec")}
        done = {Path(r.spec).parent.name for r in results if r.file}
        if suite and manifest.is_file() and names <= done:
            shutil.copy2(manifest, out / TASKS / MANIFEST)
    if console is not None:
        for r in results:
            if not r.file:
                console.print(printable(f"refused  {r.spec}: {r.reason}"), highlight=False, markup=False)
        ok = sum(1 for r in results if r.file)
        same = sum(1 for r in results if r.verbatim)
        console.print(
            f"{len(results)} spec(s): {ok} exported ({same} unchanged from their import), "
            f"{len(results) - ok} refused; task files in {out / TASKS}",
            highlight=False,
            markup=False,
        )
    return results
