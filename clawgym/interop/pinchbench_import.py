"""`clawgym import pinchbench REPO --out OUT`: a clone of PinchBench → ordinary task specs.

Every `tasks/task_*.md` becomes `OUT/<id>/task.yaml` beside `pinchbench/<file>.md` (the task file,
unchanged, so `clawgym export pinchbench` writes it back byte for byte), `pinchbench/grade.py`
(the first python block of `## Automated Checks`, verbatim) and `assets/...` (the fixtures its
`workspace_files` copy). The spec keeps the whole Prompt section as the instruction, the fixtures
(`{source, dest}` from assets/, `{path, content}` inline), the category (the manifest's override
first; PinchBench's own name in `subcategory`), `timeout_seconds` as the trial's time budget, the
grader as a `pinchbench_grade` check (run in a grading sandbox, see checks/pinchbench.py), and
the LLM judge rubric as our rubric with the task's automated / judge weights. Fixtures the prompt
does not ask the agent to change are restored before grading and guarded by a weight-0 gate.

Nothing of the task runs on the host: graders are only compiled (to reject a syntax error).
`OUT/import-report.jsonl` records each task's outcome; `OUT/pinchbench-suite.json` the suite (run
order, run_first, core, which spec each id became) for the run score and the export.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks.pinchbench_score import judge_share
from ..errors import ClawgymError
from ..files import safefs
from ..files.textsafe import printable
from ..spec.write import dump_spec, literal
from .clawgym_format import Rejected
from .folders import spec_name, staging, swap_in
from .input_roles import decide
from .library import ensure_library
from .outcomes import finish_import, print_reasons
from .pinchbench_format import (
    ASSETS,
    MANIFEST,
    Manifest,
    PinchTask,
    find_tasks_dir,
    read_manifest,
    read_task_file,
    task_files,
)

REPORT = "import-report.jsonl"
SUITE = "pinchbench-suite.json"
SUITE_FORMAT = "clawgym.pinchbench-suite/v1"
SOURCE = "pinchbench"  # in each spec folder: the task file and grade.py
IMPORTED = "imported.json"  # in SOURCE: what the import wrote (to tell an unedited spec from an edited one)
WORKSPACE = "blank"
CLOCK = "2026-03-02T09:00:00Z"
OFFLINE = ("npm:", "pip:", "cli:", "brew:", "apt:", "env:", "api:")

# PinchBench's categories -> ours (the six); PinchBench's own name is kept as the subcategory
CATEGORIES = {
    "productivity": "productivity",
    "meeting_analysis": "productivity",
    "calendar": "productivity",
    "email": "productivity",
    "research": "planning",
    "memory": "planning",
    "writing": "content",
    "creative": "content",
    "coding": "software",
    "analysis": "analysis",
    "csv_analysis": "analysis",
    "data_analysis": "analysis",
    "comprehension": "analysis",
    "log_analysis": "systems",
    "skills": "systems",
    "integrations": "systems",
    "file_ops": "systems",
}


@dataclass
class Outcome:
    """What happened to one task file."""

    source: str  # the file, relative to the repository
    task_id: str | None
    status: str  # imported | warned | rejected
    name: str | None = None  # the spec folder under OUT
    grading_type: str | None = None
    reasons: list[str] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Checks on the way in


def check_grader(task: PinchTask, where: str) -> None:
    """Reject a task whose automated grading cannot work: no python block, a syntax error, no grade()."""
    if task.grading_type == "llm_judge":
        return
    if task.grader is None:
        raise Rejected(
            f"{where}: grading_type is {task.grading_type} but `## Automated Checks` holds no ```python "
            "block defining grade(transcript, workspace_path); add one or set grading_type: llm_judge"
        )
    try:
        tree = ast.parse(task.grader, filename=where)
    except SyntaxError as e:
        line = (task.grader_line or 1) + (e.lineno or 1) - 1
        raise Rejected(
            f"{where}:{line}: the grader does not compile ({e.msg}); every run would score 0, fix the python block"
        ) from None
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "grade" for n in tree.body):
        raise Rejected(
            f"{where}:{task.grader_line}: the python block of `## Automated Checks` defines no "
            "grade(transcript, workspace_path) function"
        )


def _warnings(task: PinchTask, where: str) -> list[str]:
    out = []
    prompt = task.sections.get("prompt")
    if prompt is not None and prompt.inner_headings:
        out.append(
            f"{where}:{prompt.line}: the prompt holds '## ' headings ({', '.join(prompt.inner_headings[:3])}); "
            "imported whole, while the original runner's parser cuts the prompt at the first one"
        )
    for p in task.prerequisites:
        if p.startswith(OFFLINE) or ":" in p:
            out.append(
                f"prerequisite {p!r} cannot be met offline (no network or installs in the sandbox): "
                "imported and tagged 'prerequisite-unmet'; expect low scores"
            )
    if (
        task.grader
        and "params" in task.grader
        and '"arguments"' not in task.grader
        and "'arguments'" not in task.grader
    ):
        out.append(
            "the grader reads tool-call `params`, which OpenClaw transcripts do not carry (they use "
            "`arguments`): those criteria score as they would under OpenClaw"
        )
    if task.grading_type != "automated" and not task.rubric and not task.criteria_bullets:
        out.append("no LLM Judge Rubric and no Grading Criteria: the judge has nothing to score against")
    return out


def instruction(task: PinchTask) -> str:
    """The user's first message: the whole Prompt section, or the first session's prompt."""
    return task.sessions[0].prompt if task.sessions else task.prompt


def followups(task: PinchTask) -> list[dict[str, Any]]:
    """A multi-session task's later prompts, each sent when the agent ends its previous turn; a
    session marked `new_session` starts a fresh conversation, as in the original runner."""
    return [
        {"message": literal(s.prompt), **({"new_session": True} if s.new_session else {})} for s in task.sessions[1:]
    ]


def rubric(task: PinchTask) -> list[dict[str, Any]]:
    """Our rubric: one criterion per `###` heading of the rubric (the Grading Criteria bullets when
    there is none), equal weights: the runner does not apply the headings' `(Weight: X%)`."""
    if task.rubric:
        return [{"criterion": (c.title + ("\n" + c.text if c.text else "")).strip(), "weight": 1} for c in task.rubric]
    return [{"criterion": b, "weight": 1} for b in task.criteria_bullets]


# ---------------------------------------------------------------------------------------------
# One task


def build_spec(
    task: PinchTask, name: str, category: str, tags: list[str], restore: list[str], where: str
) -> dict[str, Any]:
    """The task spec of one PinchBench task."""
    ours = CATEGORIES.get(category.lower())
    spec: dict[str, Any] = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": name,
        "title": task.name[:100],
        "description": f"Imported from PinchBench: {where} (id {task.id}, {task.grading_type}).",
    }
    if ours:
        spec["category"] = ours
    if category:
        spec["subcategory"] = category
    spec.update(tags=tags, persona="workspace-owner", workspace=WORKSPACE)
    files = []
    for f in task.files:
        files.append(
            {"path": f.dest, "source": f"{ASSETS}/{f.source}"}
            if f.source is not None
            else {"path": f.dest, "content": f.content}
        )
    if files:
        spec["files"] = files
    text = instruction(task)
    spec["instruction"] = literal(text)
    if len(task.sessions) > 1:
        spec["followups"] = followups(task)
    check: dict[str, Any] = {"type": "pinchbench_grade", "name": "automated"}
    if task.grader is not None and task.grading_type != "llm_judge":
        check.update(
            grader=f"{SOURCE}/grade.py",
            clock=CLOCK,
            prompt=[s.prompt for s in task.sessions] or [task.prompt],
            restore=restore,
            timeout=max(60.0, task.timeout),
        )
    spec["checks"] = [check]
    if restore and "grader" in check:
        spec["checks"].append(
            {"type": "unchanged", "name": "fixtures unchanged", "paths": list(restore), "gate": True, "weight": 0}
        )
    if task.grading_type != "automated":
        spec["rubric"] = literal(rubric(task))
        spec["rubric_weight"] = 1.0 if task.grading_type == "llm_judge" else round(judge_share(task.weights), 6)
    spec["limits"] = {"seconds": task.timeout}
    spec["clock"] = CLOCK
    return spec


def _comment(task: PinchTask, where: str, restore: list[str]) -> str:
    lines = [
        f"Imported from PinchBench: {where} (id {task.id}, grading_type {task.grading_type}).",
        f"{SOURCE}/ beside this file holds the task file unchanged and its grader (grade.py);",
        "'clawgym export pinchbench' writes the task file back byte for byte while this spec is unedited.",
        "The check 'automated' calls grade(transcript, workspace_path) in a grading sandbox with the",
        "transcript in OpenClaw's session-JSONL shape and the clock frozen at `clock`; its score is the",
        "mean of the values grade() returns (an exception or {} scores 0).",
    ]
    if task.grading_type == "hybrid":
        w_a, w_j = task.weights
        lines.append(f"Hybrid: reward = ({w_a:g} x automated + {w_j:g} x judge) / {w_a + w_j:g} (rubric_weight).")
    if restore:
        lines.append("Fixtures restored from the pristine copy before grading, and guarded by the weight-0 gate")
        lines.append("'fixtures unchanged': " + ", ".join(restore))
    return "\n".join(lines)


def _asset_files(repo: Path, task: PinchTask, where: str) -> list[tuple[str, Path]]:
    """(source, path) of every fixture the task copies from assets/; Rejected when one is missing."""
    out = []
    root = (repo / ASSETS).resolve()
    for i, f in enumerate(task.files):
        if f.source is None:
            continue
        path = repo / ASSETS / f.source
        resolved = path.resolve()
        if path.is_symlink() or not resolved.is_relative_to(root):
            raise Rejected(f"{where}: workspace_files[{i}]: {ASSETS}/{f.source} is a link or leaves {ASSETS}/")
        if not path.exists():
            raise Rejected(
                f"{where}: workspace_files[{i}]: {ASSETS}/{f.source} not found (the fixture the task "
                "copies to " + f.dest + "); add it to the clone"
            )
        out.append((f.source, path))
    return out


def _inputs(task: PinchTask, assets: list[tuple[str, Path]]) -> list[str]:
    """The workspace paths of the task's fixtures (a folder source gives each file in it)."""
    folders = {src: p for src, p in assets if p.is_dir()}
    out = []
    for f in task.files:
        if f.source in folders:
            base = folders[f.source]
            out += [f"{f.dest}/{e.rel}" for e in safefs.walk(base, limits=None) if e.kind == "file"]
        else:
            out.append(f.dest)
    return out


def import_one(path: Path, repo: Path, out: Path, manifest: Manifest, name: str | None = None) -> Outcome:
    """Import one task file into `out/<name>/`; never raises for a bad task."""
    where = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else path.name
    outcome = Outcome(source=where, task_id=None, status="rejected")
    try:
        task = read_task_file(path, repo)
        outcome.task_id, outcome.grading_type = task.id, task.grading_type
        if not (task.prompt or task.sessions):
            raise Rejected(f"{where}: no `## Prompt` section (the message the agent is sent)")
        check_grader(task, where)
        if task.grading_type == "llm_judge" and not (task.rubric or task.criteria_bullets):
            raise Rejected(f"{where}: an llm_judge task needs `## LLM Judge Rubric` or `## Grading Criteria` bullets")
        assets = _asset_files(repo, task, where)
        warnings = _warnings(task, where)
        category = manifest.categories.get(task.id) or task.category
        decisions = decide(_inputs(task, assets), instruction(task), task.grader or "")
        outcome.decisions = [{"path": d.path, "restore": d.restore, "why": d.why} for d in decisions]
        restore = [d.path for d in decisions if d.restore]
        tags = ["imported", "pinchbench", task.grading_type]
        tags += [
            t
            for t, on in (
                ("run-first", task.id in manifest.run_first),
                ("core", task.id in manifest.core),
                ("multi-session", bool(task.sessions)),
                ("prerequisite-unmet", bool(task.prerequisites)),
            )
            if on
        ]
        name = name or spec_name(task.id)
        spec = build_spec(task, name, category, tags, restore, where)
        text = dump_spec(spec, _comment(task, where, restore))
        target = out / name
        tmp = staging(target)
        try:
            (tmp / SOURCE).mkdir()
            (tmp / SOURCE / path.name).write_bytes(task.raw)
            if task.grader is not None:
                (tmp / SOURCE / "grade.py").write_text(task.grader, encoding="utf-8")
            for src, p in assets:
                dest = tmp / ASSETS / src
                dest.parent.mkdir(parents=True, exist_ok=True)
                if p.is_dir():
                    shutil.copytree(p, dest, symlinks=True)
                else:
                    shutil.copy2(p, dest)
            (tmp / "task.yaml").write_text(text, encoding="utf-8")
            (tmp / SOURCE / IMPORTED).write_text(
                json.dumps(
                    {"file": path.name, "id": task.id, "spec_sha256": hashlib.sha256(text.encode()).hexdigest()},
                    indent=1,
                )
                + "\n",
                encoding="utf-8",
            )
            swap_in(tmp, target)
        finally:
            if tmp.exists():
                safefs.remove_tree(tmp)
        outcome.name, outcome.reasons = name, warnings
        outcome.status = "warned" if warnings else "imported"
    except Rejected as e:
        reason = str(e)
        outcome.reasons.append(reason[len(where) + 2 :] if reason.startswith(where + ": ") else reason)
    except (OSError, UnicodeDecodeError) as e:
        outcome.reasons.append(f"cannot read or write the task: {e}")
    return outcome


# ---------------------------------------------------------------------------------------------
# The suite


def _ordered(files: list[Path], manifest: Manifest, ids: dict[Path, str]) -> list[Path]:
    """run_first, then the manifest's order, then the rest by file name."""
    rank = {tid: i for i, tid in enumerate(dict.fromkeys([*manifest.run_first, *manifest.order]))}
    return sorted(files, key=lambda p: (rank.get(ids.get(p, ""), len(rank)), p.name))


def _peek_id(path: Path) -> str:
    """The front matter's id, read cheaply (the file name's stem when it cannot be read)."""
    try:
        head = path.read_text(encoding="utf-8-sig", errors="replace").split("\n", 40)
    except OSError:
        return path.stem
    if head and head[0].strip() == "---":
        for line in head[1:]:
            if line.strip() == "---":
                break
            if line.startswith("id:"):
                return line[3:].strip().strip("'\"") or path.stem
    return path.stem


def import_repo(repo: Path, out: Path, *, console: Any = None, quiet: bool = False) -> list[Outcome]:
    """Import every task file of the clone at `repo` into `out`; the outcomes in run order."""
    tasks_dir = find_tasks_dir(repo)
    root = tasks_dir.parent if tasks_dir.name == "tasks" else repo
    files = task_files(tasks_dir)
    if not files:
        raise ClawgymError(
            f"{repo} holds no PinchBench task files (tasks/task_*.md)",
            hint="give the root of a PinchBench clone (with tasks/ and assets/) or its tasks/ folder",
        )
    manifest, notes = read_manifest(tasks_dir)
    out.mkdir(parents=True, exist_ok=True)
    ensure_library(out)
    ids = {p: _peek_id(p) for p in files}
    files = _ordered(files, manifest, ids)
    seen: dict[str, int] = {}
    outcomes: list[Outcome] = []
    for path in files:
        base = spec_name(ids[path])
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base[:60]}-{seen[base]}"
        outcome = import_one(path, root, out, manifest, name)
        if seen[base] > 1 and outcome.status != "rejected":
            outcome.status = "warned"
            outcome.reasons.append(f"id {ids[path]!r} is declared by an earlier file too: imported as {name}")
        outcomes.append(outcome)
        print_reasons(console, outcome, quiet)
    if console is not None and not quiet:
        for note in notes:
            console.print(printable(f"warning  {note}"), highlight=False, markup=False)
    _write_suite(out, outcomes, manifest)
    finish_import(outcomes, out, REPORT, "PinchBench task", console)
    return outcomes


def _write_suite(out: Path, outcomes: list[Outcome], manifest: Manifest) -> None:
    if manifest.raw is not None:
        (out / f"pinchbench-{MANIFEST}").write_bytes(manifest.raw)
    suite = {
        "format": SUITE_FORMAT,
        "size": len(outcomes),
        "run_first": manifest.run_first,
        "core": manifest.core,
        "order": [o.task_id for o in outcomes if o.task_id],
        "tasks": [
            {"id": o.task_id, "spec": o.name, "file": o.source, "grading_type": o.grading_type, "status": o.status}
            for o in outcomes
        ],
    }
    (out / SUITE).write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")


def read_suite(folder: Path) -> dict[str, Any] | None:
    """The suite file of an import folder (None when `folder` holds none)."""
    try:
        data = json.loads((folder / SUITE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == SUITE_FORMAT else None
