"""`clawgym bench add`: place concrete task specs into the benchmark layout.

Sources are synth dataset folders (their manifest gives each spec's family and provenance) or
concrete task spec files. Each becomes `<bench>/<category>/<family>-<n>/task.yaml`, `n` counting on
from the family's highest instance, so names are stable and never reused: adding later never
renames what is there. The spec is copied as written (its provenance comment kept) with only its
`name` set to the instance name and, for a family with a rubric template, a generated `rubric`
(hybrid grading). The copy must compile to the same task as the source, apart from those two;
a spec whose content is already in the benchmark is skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ClawgymError, SpecError
from ..spec.write import dump_spec, literal
from ..spec.task import Task, thaw
from .layout import TASK_FILE, find_instances
from .rubrics import RUBRIC_WEIGHT, rubric_for

_FAMILY = re.compile(r"from task family ([\w.-]+)")
_NAME_LINE = re.compile(r"^name:.*$", re.M)
SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "task.v1.json"


@dataclass(frozen=True)
class Source:
    """One spec to add: where it is, its family, and how to cite it."""

    path: Path
    family: str
    label: str


@dataclass(frozen=True)
class Added:
    name: str
    category: str
    folder: Path
    hybrid: bool
    skipped: str | None = None  # why it was not added (already in the benchmark)


def _family_of(path: Path, text: str, name: str) -> str:
    m = _FAMILY.search(text.split("\napiVersion:", 1)[0])
    return m.group(1) if m else re.sub(r"-\d+$", "", name)


def _cite(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name  # never write a machine's absolute path into the benchmark


def sources(args: list[str]) -> list[Source]:
    """Specs named by `args`: dataset folders (manifest order by category, family, seed), spec
    folders (every task spec below) or spec files."""
    out: list[Source] = []
    for arg in args:
        p = Path(arg)
        if p.is_dir() and (p / "manifest.jsonl").is_file():
            from ..synth.dataset import read_jsonl

            recs = [r for r in read_jsonl(p / "manifest.jsonl") if (p / r["path"]).is_file()]
            recs.sort(key=lambda r: (r["category"], (r.get("source") or {}).get("family", r["name"]), r.get("seed", 0)))
            for r in recs:
                family = (r.get("source") or {}).get("family") or re.sub(r"-\d+$", "", r["name"])
                out.append(Source(p / r["path"], family, f"synth dataset {p.name}, {r['path']}"))
        elif p.is_dir() or p.is_file():
            for f in sorted(p.rglob("*.yaml")) if p.is_dir() else [p]:
                text = f.read_text(encoding="utf-8")
                if re.search(r"^kind:\s*Task\s*$", text, re.M):
                    m = re.search(r"^name:\s*(\S+)", text, re.M)
                    out.append(Source(f, _family_of(f, text, m.group(1) if m else f.stem), _cite(f)))
        else:
            raise ClawgymError(
                f"nothing to add at {arg}",
                hint="give a synth dataset folder (with manifest.jsonl) or concrete task spec files",
            )
    if not out:
        raise ClawgymError(f"no task specs found in {', '.join(args)}", hint="a task spec has `kind: Task`")
    return out


def content_key(task: Task) -> str:
    """What makes two instances the same work, whatever they are called or however judged."""
    body = {
        "instruction": task.instruction,
        "files": {p: hashlib.sha256(b).hexdigest() for p, b in task.files.items()},
        "checks": thaw(task.checks),
        "solution": thaw(task.solution),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _compile(path: Path) -> tuple[Task, dict[str, Any]]:
    from ..compile.compiler import compile_task, load_task_spec

    spec = load_task_spec(path)
    if "params" in spec.data or "vars" in spec.data:
        raise ClawgymError(
            "benchmark instances must be concrete specs, and this one has params or vars",
            file=str(path),
            line=1,
            key="params",
            hint="synthesize concrete specs with 'clawgym synth' (see specs/synth/bench.yaml)",
        )
    if not spec.data.get("category"):
        raise ClawgymError(
            "a benchmark instance needs a category",
            file=str(path),
            line=1,
            key="category",
            hint="one of productivity, systems, analysis, content, planning, software",
        )
    return compile_task(spec, 0), spec.data


def _next_number(family: str, taken: set[str]) -> int:
    pattern = re.compile(rf"^{re.escape(family)}-(\d+)$")
    return 1 + max((int(m.group(1)) for n in taken if (m := pattern.match(n))), default=0)


def _text(source: Source, name: str, target: Path, rubric: list[dict] | None) -> str:
    import os

    text = source.path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\napiVersion:")
    comments = [line for line in head.splitlines() if line.startswith("#") and "$schema=" not in line]
    out = [f"# Benchmark instance {name}, added by `clawgym bench add` from {source.label}."] + comments
    if target.resolve().is_relative_to(SCHEMA.parents[2]):  # only a path inside this checkout, for editors
        out.insert(0, f"# yaml-language-server: $schema={os.path.relpath(SCHEMA, target.parent.resolve())}")
    body = _NAME_LINE.sub(f"name: {name}", "apiVersion:" + body, count=1)
    if rubric:
        body = body.rstrip("\n") + "\n" + dump_spec({"rubric": literal(rubric), "rubric_weight": RUBRIC_WEIGHT})
    return "\n".join(out) + "\n" + body


def _hybrid_choice(sources_: list[Source], library: Path, room: int) -> set[Path]:
    """The sources that get a rubric when only `room` may: the eligible ones (a rubric template
    fits), taken in turn from each category so that hybrid grading is spread over all of them."""
    by_category: dict[str, list[Path]] = {}
    for src in sources_:
        task, data = _compile(src.path)
        if not data.get("rubric") and rubric_for(src.family, data, library, str(src.path)):
            by_category.setdefault(task.category, []).append(src.path)
    chosen: set[Path] = set()
    queues = [sorted(paths) for _, paths in sorted(by_category.items())]
    while len(chosen) < room and any(queues):
        for queue in queues:
            if queue and len(chosen) < room:
                chosen.add(queue.pop(0))
    return chosen


def add(sources_: list[Source], root: Path, *, rubrics: bool = True, hybrid: int | None = None) -> list[Added]:
    """Copy every source into the benchmark under `root`; returns what was added or skipped.

    With `hybrid`, at most that many instances of the benchmark (those already in it included)
    are hybrid: the rest of the eligible ones are added code-only."""
    from ..compile.compiler import compile_task, load_task_spec
    from ..spec.library import find_root
    from ..synth.make import same_task

    root.mkdir(parents=True, exist_ok=True)
    existing = find_instances(root)
    taken = {i.name for i in existing}
    keys: dict[str, str] = {}
    for inst in existing:
        try:
            keys[content_key(_compile(inst.spec)[0])] = inst.name
        except (ClawgymError, SpecError):
            continue  # a broken instance is calibrate's business, not add's
    library = find_root(root)
    allowed: set[Path] | None = None
    if hybrid is not None:
        already = 0
        for inst in existing:
            try:
                already += bool(_compile(inst.spec)[0].rubric)
            except (ClawgymError, SpecError):
                continue
        allowed = _hybrid_choice(sources_, library, max(0, hybrid - already))
    added: list[Added] = []
    for src in sources_:
        task, data = _compile(src.path)
        key = content_key(task)
        if key in keys:
            added.append(
                Added(keys[key], task.category, root, False, skipped=f"already in the benchmark as {keys[key]}")
            )
            continue
        name = f"{src.family}-{_next_number(src.family, taken)}"
        folder = root / task.category / name
        wanted = rubrics and not data.get("rubric") and (allowed is None or src.path in allowed)
        rubric = rubric_for(src.family, data, library, str(src.path)) if wanted else None
        folder.mkdir(parents=True)
        target = folder / TASK_FILE
        target.write_text(_text(src, name, target, rubric), encoding="utf-8")
        try:
            copy = compile_task(load_task_spec(target), 0)
            differs = [f for f in same_task(task, copy) if f not in ("rubric", "rubric_weight")]
        except (ClawgymError, SpecError) as exc:
            differs = [f"it no longer compiles: {exc}"]
        if differs:
            shutil.rmtree(folder)
            raise ClawgymError(
                f"{src.path} does not survive the copy into {folder} (differs in: {', '.join(differs)})",
                hint="a spec that refers to files next to it cannot be added as it is; "
                "inline them (clawgym synth writes self-contained specs)",
            )
        taken.add(name)
        keys[key] = name
        added.append(Added(name, task.category, folder, bool(copy.rubric)))
    return added
