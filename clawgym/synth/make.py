"""Make one synthesized task: compile a family instance, write it as a concrete spec, check the
spec compiles back to the same task, run the filters, and compute its dedup signature.

Runs in worker processes; everything it returns is plain data.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..compile.compiler import compile_task, load_task_spec
from ..errors import ClawgymError, SpecError
from ..spec.load import load_text
from ..spec.task import Task
from .dedup import DedupSettings, signature
from ..spec.write import dump_spec
from .emit import bare_spec, concrete_spec
from .families import Family, load_family
from .filters import FilterSettings, run_filters
from .sample import Candidate

_RAW = re.compile(r"^\{% raw %\}(.*)\{% endraw %\}$", re.S)
_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+\S", re.M)
COMPARED = (
    "instruction",
    "files",
    "executables",
    "solution",
    "checks",
    "rubric",
    "rubric_weight",
    "limits",
    "network",
    "mount",
    "tools",
    "clock",
    "persona",
    "skills",
    "workspace",
    "category",
)


@dataclass
class Made:
    """What a worker returns for one candidate."""

    candidate: Candidate
    name: str
    path: str  # where the spec goes, relative to the dataset folder
    text: str | None = None  # the spec's YAML, when it got that far
    meta: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    signature: Any = None
    error: str | None = None  # why it was rejected before or by a filter
    task: Task | None = None  # the compiled spec, between the two phases (see `graded_filters`)
    graded: bool = False  # whether the graded filters ran

    @property
    def ok(self) -> bool:
        return self.error is None


def task_name(c: Candidate) -> str:
    return f"{c.family}-{c.seed:05d}"


def spec_dedup_text(spec: dict) -> str:
    """The text dedup compares: the instruction and the task's own input files, in path order."""
    m = _RAW.match(spec["instruction"])
    parts = [m.group(1) if m else spec["instruction"]]
    for entry in sorted(spec.get("files", []), key=lambda e: e["path"]):
        parts.append(entry["path"] + "\n" + str(entry.get("content", ""))[:4096])
    return "\n".join(parts)


def expected_steps(instruction: str) -> int:
    """Steps the request spells out: its numbered or bulleted items (at least 1)."""
    return max(1, len(_STEP.findall(instruction)))


def task_meta(task: Task, spec: dict) -> dict[str, Any]:
    return {
        "category": task.category,
        "subcategory": task.subcategory,
        "persona": task.persona,
        "skills": list(task.skills),
        "operations": list(spec.get("operations", [])),
        "files": len(spec.get("files", [])),
        "checks": len(task.checks),
        "expected_steps": expected_steps(task.instruction),
        "difficulty": task.difficulty,
        "hash": task.hash,
    }


@lru_cache(maxsize=64)
def baseline_references(root: str, key: str) -> tuple[dict[str, bytes], frozenset[str]]:
    """Files the workspace, persona, skills and bootstrap give on their own (cached per combination)."""
    import json

    bare = json.loads(key)
    doc = load_text(dump_spec(bare), str(Path(root) / "baseline.yaml"))
    task = compile_task(load_task_spec(doc.file, doc), 0)
    return dict(task.files), task.executables


def same_task(a: Task, b: Task) -> list[str]:
    """The fields in which two compiled tasks differ (empty if they are the same task)."""
    return [f for f in COMPARED if getattr(a, f) != getattr(b, f)]


def make_from_family(
    c: Candidate,
    family_path: str,
    out: Path,
    rel_dir: str,
    settings: FilterSettings,
    dedup: DedupSettings,
    sandbox: dict | None = None,
) -> Made:
    """The whole pipeline for one candidate of the embedded routes."""
    name = task_name(c)
    made = Made(c, name, f"{rel_dir}/{name}.yaml")
    try:
        family: Family = load_family(family_path)
        task = family.instance(c.persona, c.seed)
    except SpecError as exc:
        made.error = f"the family does not compile on this seed: {exc.problems[0].format()}"
        return made
    import json

    family_sha = hashlib.sha256(Path(family_path).read_bytes()).hexdigest()
    comment = (
        f"Synthesized by clawgym synth ({c.route} route) from task family {family.name}\n"
        f"(template sha256 {family_sha[:16]}), persona {c.persona}, seed {c.seed}."
    )
    base_files, base_exec = baseline_references(str(out), json.dumps(bare_spec(family.data, task), sort_keys=True))
    spec = concrete_spec(family.data, task, name=name, baseline=base_files, baseline_executables=base_exec)
    made.text = dump_spec(spec, comment)
    made.meta = {**task_meta(task, spec), "source": {"family": family.name, "template_sha256": family_sha}}
    return finish(made, spec, task, out, settings, dedup, sandbox)


def finish(
    made: Made,
    spec: dict,
    reference: Task | None,
    out: Path,
    settings: FilterSettings,
    dedup: DedupSettings,
    sandbox: dict | None,
) -> Made:
    """Validity (the text loads and compiles, to `reference` when given), filters, signature."""
    try:
        doc = load_text(made.text or "", str(out / made.path))
        task = compile_task(load_task_spec(doc.file, doc), 0)
    except SpecError as exc:
        made.filters = {"passed": False, "valid": False, "failed": "valid"}
        made.error = "the written spec is not valid: " + "; ".join(p.format() for p in exc.problems[:3])
        return made
    if reference is not None:
        differs = same_task(reference, task)
        if differs:
            made.filters = {"passed": False, "valid": False, "failed": "valid"}
            made.error = f"the written spec compiles to a different task (fields: {', '.join(differs)})"
            return made
    made.meta.setdefault("hash", task.hash)
    try:
        report = run_filters(task, settings, sandbox=sandbox)
    except ClawgymError as exc:
        made.error = f"the filters could not run: {exc}"
        return made
    made.filters = {"valid": True, **report.to_dict()}
    made.graded = settings.trials
    if not report.passed:
        made.error = f"{report.failed}: {report.reason}"
        return made
    made.signature = signature(spec_dedup_text(spec), dedup)
    if not settings.trials:
        made.task = task
    return made


def graded_filters(made: Made, settings: FilterSettings, sandbox: dict | None = None) -> Made:
    """Second phase for a candidate made with `settings.trials` off and found no duplicate: the
    trials (oracle, determinism, nop, tamper) on its compiled task."""
    assert made.task is not None
    try:
        report = run_filters(
            made.task, FilterSettings(**{**settings.__dict__, "paths_mentioned": False}), sandbox=sandbox
        )
    except ClawgymError as exc:
        made.error = f"the filters could not run: {exc}"
        report = None
    made.task, made.graded = None, True
    if report is not None:
        made.filters = {**made.filters, **report.to_dict()}
        if not report.passed:
            made.error = f"{report.failed}: {report.reason}"
    return made
