"""Compile task specs into frozen Tasks: `load_task_spec` (in `task_spec.py`) validates a spec and
resolves its references, `compile_task` renders one instance for a seed (`instance.py` holds the
compiler), `problems_beyond` finds the problems a broken spec would still have elsewhere.

Pure: reads spec files and the library, never touches a sandbox or a model.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import Problem, SpecError
from ..spec.library import find_root, library_for
from ..spec.load import Document
from ..spec.task import Task
from .instance import BOOTSTRAP_FILES, DEFAULT_LIMITS, PERSONA_DEFAULTS, STEP_KINDS, InstanceCompiler
from .task_spec import TaskSpec, load_task_spec

__all__ = [
    "BOOTSTRAP_FILES",
    "DEFAULT_LIMITS",
    "PERSONA_DEFAULTS",
    "STEP_KINDS",
    "TaskSpec",
    "compile_task",
    "load_task_spec",
    "problems_beyond",
]


def compile_task(spec: TaskSpec, seed: int) -> Task:
    """One concrete instance of `spec` for `seed`. Same spec and seed, same Task (and hash)."""
    return InstanceCompiler(spec, seed).run()


_TOP_KEY = re.compile(r"^(\w+)(?:\[(\d+)\]|\.([^.\[]+))?")
_NEEDED = ("name", "persona", "workspace", "instruction", "checks")


def _skip_path(key: str | None) -> tuple | None:
    """('checks', 3) for 'checks[3].type', ('vars', 'x') for 'vars.x', ('instruction',) for it."""
    m = _TOP_KEY.match(key or "")
    if not m:
        return None
    top, index, name = m.groups()
    return (top, int(index)) if index is not None else (top, name) if name is not None else (top,)


def problems_beyond(doc: Document, found: list[Problem], seed: int = 0) -> list[Problem]:
    """The problems a spec with schema or reference `found` problems would still have elsewhere:
    compile it for `seed` leaving out each part a found problem is in (a check, a var, a file...),
    so independent mistakes are all reported in one pass. [] when the spec cannot be compiled."""
    data = doc.data
    if not isinstance(data, dict) or data.get("kind") != "Task" or any(k not in data for k in _NEEDED):
        return []
    skip = {_skip_path(p.key) for p in found}
    if (
        None in skip
        or any(len(s) == 1 and s[0] in _NEEDED for s in skip)
        or any(s[0] in ("persona", "skills", "workspace", "params", "apiVersion", "kind") for s in skip)
    ):
        return []  # nothing to compile around: the whole task depends on it
    try:
        library = library_for(find_root(Path(doc.file).resolve().parent))
        InstanceCompiler(TaskSpec(doc, library), seed, skip=skip).run()
    except SpecError as exc:
        return exc.problems
    except Exception:  # noqa: BLE001 - a spec broken in its structure: the found problems say why
        return []
    return []
