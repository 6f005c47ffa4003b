"""`clawgym import clawgym DIR --out OUT`: published ClawGym task folders → task specs.

Each source folder becomes `OUT/<name>/` holding `task.yaml` and the source files unchanged
(`data_entry.json`, `input_files/`, `reward/`, `solution/`), so `clawgym export clawgym` can
write the folder back byte for byte. The spec grades with the task's own `check.py` as a
`python` check: its sub-scores appear one by one in the verdict and average exactly as
`reward.sh` does (`aggregate: mean`); input files the instruction does not ask the agent to
change are restored from the pristine copy before grading (`restore:`, see input_roles.py).

Every folder is checked on the way in, including one run of its grader on the untouched
workspace; a bad folder is rejected or imported with a warning, never stopping the others.
`OUT/import-report.jsonl` records each folder's outcome, reasons and restore decisions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..files import safefs
from ..errors import ClawgymError
from ..sandbox.host import sweep_worker_cgroups, worker_confined
from ..spec.task import Task
from ..spec.write import dump_spec, literal
from .clawgym_format import INPUTS, Rejected, SourceTask, read_task
from .folders import spec_name, staging, swap_in
from .input_roles import Decision, decide
from .library import ensure_library
from .outcomes import finish_import, print_reasons
from .smoke import SMOKE_TIMEOUT, SmokeItem, smoke_batch

REPORT = "import-report.jsonl"
SEEDED_WORKSPACE = "openclaw-2026-4-1"  # a new workspace as the OpenClaw of the published trajectories seeds it
NOP_WARN = 0.1


@dataclass
class Outcome:
    """What happened to one source folder."""

    source: str
    task_id: str | None
    status: str  # imported | warned | rejected
    name: str | None = None  # the spec folder under OUT
    reasons: list[str] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    nop_score: float | None = None


def discover(source: Path) -> list[Path]:
    """The task folders under `source` (or `source` itself when it is one), in name order."""
    if (source / "data_entry.json").is_file():
        return [source]
    return sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


# ---------------------------------------------------------------------------------------------
# One task


def build_spec(
    task: SourceTask, name: str, decisions: list[Decision], extra: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """The task spec and the comment block that records the import and its restore decisions."""
    check: dict[str, Any] = {
        "type": "python",
        "name": "reward",
        "script": "reward/check.py",
        "args": ["${CLAWGYM_WORKSPACE}"],
        "copy_to": "reward",
        "restore": [d.path for d in decisions if d.restore],
        "protocol": "reward.sh",
        "subscores": {"aggregate": "mean"},
    }
    if task.wants_payload():
        check["payload"] = {"task_id": task.task_id, "user_query": task.query, "metadata": task.metadata}
    first = re.split(r"(?<=[.!?])\s|\n", task.query.strip(), maxsplit=1)[0]
    spec: dict[str, Any] = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": name,
        "title": first if len(first) <= 100 else first[:97] + "...",
        "description": f"Imported from the published ClawGym format (task {task.task_id}).",
    }
    if task.category:
        spec["category"] = task.category
    spec["tags"] = ["imported", "clawgym-format"] + (
        [str(task.metadata["grading_type"])] if task.metadata.get("grading_type") else []
    )
    extra = dict(extra or {})
    for key in ("subcategory", "difficulty"):
        if key in extra:
            spec[key] = extra.pop(key)
    spec.update(persona=extra.pop("persona", "workspace-owner"), workspace=SEEDED_WORKSPACE, mount=task.mount)
    files = []
    for rel in task.inputs:
        entry: dict[str, Any] = {"path": rel, "source": f"{INPUTS}/{rel}"}
        if rel in task.executables:
            entry["executable"] = True
        files.append(entry)
    if files:
        spec["files"] = literal(files)
    spec["instruction"] = literal(task.query)
    if task.solution_script:
        spec["solution"] = [{"script": task.solution_script}]
    spec["checks"] = [literal(check)]  # check options are templates: keep any Jinja-like text literal
    if check["restore"]:
        # Changing an input the task does not ask to change zeroes the reward; weight 0 keeps the mean
        # of the sub-scores exactly what reward.sh prints whenever the inputs are intact.
        spec["checks"].append(
            {
                "type": "unchanged",
                "name": "inputs unchanged",
                "paths": literal(list(check["restore"])),
                "gate": True,
                "weight": 0,
            }
        )
    if extra.get("rubric"):  # hybrid: the published 0.7 x code + 0.3 x rubric
        spec["rubric"] = literal([dict(c) for c in extra.pop("rubric")])
        spec["rubric_weight"] = extra.pop("rubric_weight", 0.3)
    lines = [
        f"Imported from the published ClawGym format: task {task.task_id}.",
        "data_entry.json, input_files/, reward/ and solution/ beside this file are the source, unchanged;",
        "'clawgym export clawgym' writes them back. Grading runs reward/check.py and reads its output",
        "exactly as reward.sh does (protocol: reward.sh); each sub-score is shown with weight 0. The",
        f"workspace starts as OpenClaw 2026.4.1 seeds one ({SEEDED_WORKSPACE}). The gate 'inputs unchanged'",
        "(weight 0) gives 0 to an agent that changes an input the instruction does not ask it to change.",
        "",
        "Input files restored from the pristine copy before grading and guarded by that gate",
        "(edit `restore` and the gate's `paths` to override):",
    ]
    lines += [f"  {d.path}: {d.why}" for d in decisions] or ["  (no input files)"]
    return spec, "\n".join(lines)


@dataclass
class _Pending:
    """A task folder read, decided and written to its staging folder, waiting for its grader run."""

    outcome: Outcome
    task: SourceTask
    staging: Path
    target: Path
    persona: str
    warnings: list[str]


def import_one(
    folder: Path, out: Path, name: str | None = None, smoke: bool = True, extra: dict[str, Any] | None = None
) -> Outcome:
    """Import one source folder into `out/<name>/`; never raises for a bad folder.

    The spec is written to a staging folder and, with `smoke`, its grader run once on the untouched
    workspace (see smoke.py) before the folder takes its place. `extra` adds spec keys (a rubric, a
    persona, ...).
    """
    return import_many([(folder, out, name, smoke, extra)])[0]


def import_many(work: list[tuple]) -> list[Outcome]:
    """`import_one` for several folders, their graders run in one grading sandbox (see smoke.py)."""
    prepared = [_prepare(*args) for args in work]
    pending = [p for p in prepared if isinstance(p, _Pending) and work[prepared.index(p)][3]]
    results = {}
    if pending:
        items = [SmokeItem(p.task, *_untouched(p.task, p.staging / "task.yaml", p.persona)) for p in pending]
        results = {id(p): r for p, r in zip(pending, smoke_batch(items, SMOKE_TIMEOUT, worker_confined()))}
    return [p if isinstance(p, Outcome) else _finish(p, results.get(id(p))) for p in prepared]


def _prepare(
    folder: Path, out: Path, name: str | None = None, smoke: bool = True, extra: dict[str, Any] | None = None
) -> _Pending | Outcome:
    outcome = Outcome(source=folder.name, task_id=None, status="rejected")
    try:
        task = read_task(folder)
        outcome.task_id = task.task_id
        if task.portable_grader():
            decisions = [
                Decision(p, False, "kept: the grader compares with its own pristine copy (reward/original/)")
                for p in task.inputs
            ]
        else:
            decisions = decide(task.inputs, task.query, task.grader_text)
        outcome.decisions = [asdict(d) for d in decisions]
        name = name or spec_name(task.task_id)
        spec, comment = build_spec(task, name, decisions, extra)
        target = out / name
        return _Pending(
            outcome,
            task,
            _write_folder(task, target, dump_spec(spec, comment)),
            target,
            spec["persona"],
            list(task.warnings),
        )
    except Rejected as e:
        outcome.reasons.append(str(e))
    except (OSError, UnicodeDecodeError) as e:
        outcome.reasons.append(f"cannot read the task folder: {e}")
    return outcome


def _finish(p: _Pending, smoked: float | Rejected | None) -> Outcome:
    """Put the staged folder in place (or drop it when its grader was rejected); the outcome."""
    outcome, warnings = p.outcome, p.warnings
    try:
        if isinstance(smoked, Rejected):
            outcome.reasons.append(str(smoked))
            return outcome
        if smoked is not None:
            outcome.nop_score = smoked
            if smoked > NOP_WARN:
                warnings.append(f"grader gives {smoked:.3f} to the untouched workspace (expected at most {NOP_WARN})")
        swap_in(p.staging, p.target)
    except OSError as e:
        outcome.reasons.append(f"cannot write {p.target}: {e}")
        return outcome
    finally:
        if p.staging.exists():
            safefs.remove_tree(p.staging)
    outcome.name, outcome.reasons = p.target.name, warnings
    outcome.status = "warned" if warnings else "imported"
    return outcome


_SEEDS: dict[tuple[str, str], tuple[dict[str, bytes], set[str]]] = {}  # (library, persona) -> seed files
_SEED_NAMES = {
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
    "memory",
    "skills",
    ".git",
    ".openclaw",
}


def _untouched(task: SourceTask, spec_file: Path, persona: str) -> tuple[dict[str, bytes], set[str]]:
    """The files an agent that does nothing leaves: the seeded workspace plus the task's inputs.

    The seed (bootstrap files, USER.md, .git, ...) is the same for every task of one library and
    persona, so it is compiled once per process; a task whose inputs overlap it is compiled whole.
    """
    key = (str(spec_file.parent.parent.resolve()), persona)
    seed = _SEEDS.get(key)
    if any(rel.split("/", 1)[0] in _SEED_NAMES for rel in task.inputs):  # the task ships its own: compile it whole
        compiled = _compile(spec_file)
        return dict(compiled.files), set(compiled.executables)
    if seed is None:
        compiled = _compile(spec_file)
        inputs = set(task.inputs)
        seed = (
            {k: v for k, v in compiled.files.items() if k not in inputs},
            {e for e in compiled.executables if e not in inputs},
        )
        _SEEDS.setdefault(key, seed)
    files = dict(seed[0])
    for rel in task.inputs:
        files[rel] = (task.folder / INPUTS / rel).read_bytes()
    return files, set(seed[1]) | set(task.executables)


def _compile(spec_file: Path) -> Task:
    from ..compile.compiler import compile_task, load_task_spec
    from ..errors import SpecError

    try:
        return compile_task(load_task_spec(spec_file), 0)
    except SpecError as e:
        raise Rejected(f"the imported spec does not compile: {e.problems[0].what}") from None


def _write_folder(task: SourceTask, target: Path, spec_text: str) -> Path:
    """Write the spec and copy the source files into a staging folder beside `target`; the folder."""
    tmp = staging(target)
    shutil.copy2(task.folder / "data_entry.json", tmp / "data_entry.json")
    for sub in (INPUTS, "reward", "solution"):
        if (task.folder / sub).is_dir():
            shutil.copytree(task.folder / sub, tmp / sub, symlinks=True)
    (tmp / "task.yaml").write_text(spec_text, encoding="utf-8")
    return tmp


# ---------------------------------------------------------------------------------------------
# Many tasks


BATCH = 8  # graders run in one grading sandbox


def _import_chunk(work: list[tuple]) -> list[Outcome]:
    return import_many(work)


WORKER_MEMORY = 3 << 30


def _confine_worker() -> None:
    """A worker process grades one task at a time: one memory cgroup for it (and the grader it runs)
    bounds the host as a cgroup per grading sandbox would, without a cgroup move per grader."""
    from ..sandbox.host import confine_worker

    confine_worker("import", WORKER_MEMORY)


def run_imports(work: list[tuple], jobs: int | None, smoke: bool) -> Iterator[Outcome]:
    """`import_one(*args)` for every args tuple of `work`, in worker processes, outcomes in order."""
    # a grader run mostly waits on its sandbox (start-up, cgroup moves), so twice the cores keep them busy
    jobs = max(1, jobs or (os.cpu_count() or 1) * (2 if smoke else 1))
    chunks = [work[i : i + BATCH] for i in range(0, len(work), BATCH)]
    if jobs == 1 or len(chunks) < 2:
        for chunk in chunks:
            yield from _import_chunk(chunk)
        return
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_confine_worker if smoke else None) as pool:
            for outcomes in pool.map(_import_chunk, chunks):
                yield from outcomes
    finally:
        sweep_worker_cgroups()


def import_dataset(source: Path, out: Path, *, jobs: int | None = None, smoke: bool = True) -> Iterator[Outcome]:
    """Import every task folder under `source` into `out`, yielding outcomes in source order."""
    folders = discover(source)
    if not folders:
        raise ClawgymError(
            f"{source} holds no task folders",
            hint="give a folder of published ClawGym task folders (each with data_entry.json)",
        )
    out.mkdir(parents=True, exist_ok=True)
    ensure_library(out)
    names = _unique_names(folders)
    yield from run_imports([(f, out, names.get(f), smoke) for f in folders], jobs, smoke)


def _unique_names(folders: list[Path]) -> dict[Path, str]:
    """Spec names from task ids (read cheaply); ids that clash get -2, -3 ..."""
    seen: dict[str, int] = {}
    names: dict[Path, str] = {}
    for folder in folders:
        try:
            task_id = json.loads((folder / "data_entry.json").read_text(encoding="utf-8")).get("task_id")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(task_id, str) or not task_id.strip():
            continue
        base = spec_name(task_id)
        seen[base] = seen.get(base, 0) + 1
        names[folder] = base if seen[base] == 1 else f"{base[:60]}-{seen[base]}"
    return names


def import_command(
    source: Path, out: Path, *, jobs: int | None = None, quiet: bool = False, console: Any = None, smoke: bool = True
) -> list[Outcome]:
    """The CLI: import, print each warning and rejection, write the report, print the summary."""
    outcomes: list[Outcome] = []
    for outcome in import_dataset(source, out, jobs=jobs, smoke=smoke):
        outcomes.append(outcome)
        print_reasons(console, outcome, quiet)
    finish_import(outcomes, out, REPORT, "task folder", console)
    return outcomes
