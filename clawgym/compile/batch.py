"""Compile many (spec, seed) pairs, in parallel processes when there is enough work.

Compiling is pure CPU work (data generation and Jinja), so a process pool scales it with the
machine's cores. Results come back in input order; problems are collected per spec file.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .compiler import compile_task, load_task_spec, problems_beyond
from ..errors import Problem, SpecError
from ..spec.load import Document, load_file
from ..spec.task import Task

PARALLEL_MIN_INSTANCES = 48  # below this, starting workers costs more than it saves


@dataclass
class Compiled:
    """The outcome for one spec file: its kind, its instances, or its problems."""

    path: Path
    kind: str | None = None
    tasks: list[Task] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def compile_file(path: Path, seeds: list[int], doc: Document | None = None) -> Compiled:
    """Load one spec file and, if it is a task, compile it for every seed."""
    out = Compiled(path)
    try:
        doc = doc or load_file(path)
        out.kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
        if out.kind == "Task":
            try:
                spec = load_task_spec(path, doc)
            except SpecError as exc:  # the rest of the spec may hold independent mistakes too
                more = problems_beyond(doc, exc.problems, seeds[0] if seeds else 0)
                raise SpecError(_merge(exc.problems, more)) from None
            out.tasks = [compile_task(spec, seed) for seed in seeds]
    except SpecError as exc:
        out.problems = exc.problems
    return out


def _merge(first: list[Problem], more: list[Problem]) -> list[Problem]:
    """Both lists of problems in line order, without repeats."""
    seen, out = set(), []
    for p in sorted(first + more, key=lambda p: (p.file or "", p.line or 0, p.key or "")):
        ident = (p.file, p.line, p.key, p.what)
        if ident not in seen:
            seen.add(ident)
            out.append(p)
    return out


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def compile_files(paths: list[Path], seeds: list[int], *, jobs: int | None = None) -> list[Compiled]:
    """`compile_file` for every path; uses a fork-based process pool on Linux for large batches."""
    jobs = jobs or default_jobs()
    if (
        jobs < 2
        or len(paths) < 2
        or len(paths) * len(seeds) < PARALLEL_MIN_INSTANCES
        or not sys.platform.startswith("linux")
    ):
        return [compile_file(p, seeds) for p in paths]
    chunks = [(p, seeds[i::jobs]) for p in paths for i in range(min(jobs, len(seeds)))]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(compile_file, *zip(*chunks)))
    merged: dict[Path, Compiled] = {}
    for part in parts:
        whole = merged.setdefault(part.path, Compiled(part.path, part.kind))
        whole.tasks += part.tasks
        if not whole.problems:  # every chunk of a broken spec reports the same load problems
            whole.problems = part.problems
    order = {seed: i for i, seed in enumerate(seeds)}
    for whole in merged.values():
        whole.tasks.sort(key=lambda t: order[t.seed])
    return [merged[p] for p in paths]


def compile_many(
    paths: list[Path], seeds: list[int], docs: dict[Path, Document] | None = None, jobs: int | None = None
) -> list[Task]:
    """Every task instance of `paths` × `seeds`; all problems across all files raised together."""
    if docs:
        results = [compile_file(p, seeds, docs.get(p)) for p in paths]
    else:
        results = compile_files(paths, seeds, jobs=jobs)
    problems = [p for r in results for p in r.problems]
    if problems:
        raise SpecError(problems)
    return [t for r in results for t in r.tasks]
