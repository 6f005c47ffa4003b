"""Load a task spec: validate the document and resolve its persona, skill, workspace and operation
references against the library.

Pure: reads spec files and the library, never touches a sandbox or a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problem, SpecError
from ..spec.library import Library, find_root, library_for
from ..spec.load import Document, load_file
from ..spec.params import param_problems
from ..spec.validate import validate_document


@dataclass(frozen=True)
class TaskSpec:
    """A validated task spec document and the library its references resolve against."""

    doc: Document
    library: Library

    @property
    def data(self) -> dict:
        return self.doc.data

    @property
    def name(self) -> str:
        return self.doc.data["name"]


def load_task_spec(path: str | Path, doc: Document | None = None) -> TaskSpec:
    """Load and validate a task spec with its references; raises SpecError with every problem."""
    doc = doc or load_file(path)
    problems = validate_document(doc, expected_kind="Task")
    if problems:
        raise SpecError(problems)
    problems = param_problems(doc)
    library = library_for(find_root(Path(doc.file).resolve().parent))
    data = doc.data
    personas = data["persona"] if isinstance(data["persona"], list) else [data["persona"]]
    refs: list[tuple[Any, str, tuple]] = [
        (library.persona, p, ("persona",) if isinstance(data["persona"], str) else ("persona", i))
        for i, p in enumerate(personas)
    ]
    refs += [(library.skill, s, ("skills", i)) for i, s in enumerate(data.get("skills", []))]
    refs.append((library.workspace, data["workspace"], ("workspace",)))
    for getter, name, key in refs:
        try:
            getter(name, doc.where(key))
        except SpecError as exc:
            problems += exc.problems
    if not problems:
        problems += _operation_problems(doc, library)
    if problems:
        raise SpecError(problems)
    return TaskSpec(doc, library)


def _operation_problems(doc: Document, library: Library) -> list[Problem]:
    """Each `operations` entry must name an operation of one of the task's skills."""
    skills = doc.data.get("skills", [])
    problems = []
    for i, op in enumerate(doc.data.get("operations", [])):
        skill, _, name = op.partition(".")
        if skill not in skills:
            problems.append(
                Problem(
                    f"operation {op!r} belongs to skill {skill!r}, which the task does not list",
                    **doc.where(("operations", i)),
                    hint=f"add {skill!r} to skills or drop the operation",
                )
            )
            continue
        known = [o["name"] for o in library.skill(skill, doc.where(("operations", i))).spec["operations"]]
        if name not in known:
            from ..errors import did_you_mean

            problems.append(
                Problem(
                    f"skill {skill!r} has no operation {name!r}",
                    **doc.where(("operations", i)),
                    hint=did_you_mean(name, known) or f"its operations: {', '.join(known)}",
                )
            )
    return problems
