"""Task families: task specs with params that synthesis expands into concrete tasks."""

from __future__ import annotations

import dataclasses
import glob
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..compile.compiler import TaskSpec, compile_task, load_task_spec
from ..errors import Problem, SpecError
from ..spec.task import Task
from .taxonomy import Taxonomy


@dataclass(frozen=True)
class Family:
    """One task family and what synthesis samples by: personas, skills, operations, scenario."""

    path: str
    spec: TaskSpec

    @property
    def data(self) -> dict:
        return self.spec.data

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def category(self) -> str:
        return self.data["category"]

    @property
    def subcategory(self) -> str:
        return self.data.get("subcategory", "")

    @property
    def personas(self) -> tuple[str, ...]:
        p = self.data["persona"]
        return tuple(p) if isinstance(p, list) else (p,)

    @property
    def skills(self) -> tuple[str, ...]:
        return tuple(self.data.get("skills", []))

    @property
    def primary_skill(self) -> str:
        return self.skills[0] if self.skills else ""

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(self.data.get("operations", []))

    def instance(self, persona: str, seed: int) -> Task:
        """Compile the family for one persona and seed (params and data come from the seed)."""
        doc = dataclasses.replace(self.spec.doc, data={**self.data, "persona": persona})
        return compile_task(TaskSpec(doc, self.spec.library), seed)


def family_files(patterns: list[str], base: Path) -> list[Path]:
    """Spec files matched by glob patterns relative to `base` (sorted, unique)."""
    out: dict[Path, None] = {}
    for pattern in patterns:
        for match in sorted(glob.glob(str(base / pattern), recursive=True)):
            out[Path(match)] = None
    return list(out)


@lru_cache(maxsize=None)
def load_family(path: str) -> Family:
    return Family(path, load_task_spec(path))


def load_families(paths: list[Path], taxonomy: Taxonomy | None = None) -> list[Family]:
    """Load and check every family; all problems are raised together."""
    families, problems = [], []
    seen: dict[str, str] = {}
    for path in paths:
        try:
            fam = load_family(str(path))
        except SpecError as exc:
            problems += exc.problems
            continue
        where = fam.spec.doc.where
        if fam.name in seen:
            problems.append(
                Problem(
                    f"family name {fam.name!r} is also used by {seen[fam.name]}",
                    **where(("name",)),
                    hint="give every family a unique name",
                )
            )
        seen[fam.name] = str(path)
        if taxonomy is not None:
            problems += taxonomy.subcategory_problems(fam.category, fam.subcategory, where(("subcategory",)))
        if not fam.operations:
            problems.append(
                Problem(
                    "a task family must list the skill operations it needs under 'operations'",
                    **where(("skills",)),
                    hint="for example: operations: [csv.read_rows, csv.filter_rows]",
                )
            )
        for key, what in (
            ("solution", "a reference solution the filters run"),
            ("category", "a category the balancer counts"),
        ):
            if not fam.spec.data.get(key):
                problems.append(Problem(f"a task family needs '{key}': {what}", file=str(path), line=1))
        families.append(fam)
    if problems:
        raise SpecError(problems)
    return families
