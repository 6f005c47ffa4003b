"""The compiled Task: frozen, self-contained, identified by a content hash."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Mapping

CATEGORY_LABELS = {
    "productivity": "Productivity & Collaboration",
    "systems": "Systems & Automation",
    "analysis": "Analysis & Reasoning",
    "content": "Content & Domain",
    "planning": "Planning & Knowledge",
    "software": "Software Dev",
}


def _freeze(value: Any) -> Any:
    """Read-only copy: mappings become MappingProxyType, lists and tuples become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def thaw(value: Any) -> Any:
    """Plain dicts and lists from a frozen structure (for JSON and for plugins)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [thaw(v) for v in value]
    return value


_FROZEN_FIELDS = ("params", "solution", "checks", "rubric", "limits", "tools", "extra_hashed", "followups")


@dataclass(frozen=True)
class Task:
    """One concrete task instance: everything needed to run and grade it, nothing to look up."""

    name: str
    category: str
    seed: int
    params: Mapping[str, Any]
    persona: str
    skills: tuple[str, ...]
    workspace: str
    instruction: str
    files: Mapping[str, bytes]
    executables: frozenset[str]
    solution: tuple[Mapping[str, Any], ...]
    checks: tuple[Mapping[str, Any], ...]
    rubric: tuple[Mapping[str, Any], ...] = ()
    rubric_weight: float = 0.3
    limits: Mapping[str, Any] = field(default_factory=dict)
    network: bool = False
    mount: str = "/root/.openclaw/workspace"
    tools: Mapping[str, Any] = field(default_factory=dict)  # enable / disable / corpus for the claw agent
    clock: str = "2026-03-02T09:00:00Z"
    title: str = ""
    subcategory: str = ""
    difficulty: str = ""
    spec_file: str = ""
    task_dir: str = ""
    extra_hashed: Mapping[str, str] = field(default_factory=dict)  # sha256 of grading scripts etc.
    solution_lines: tuple[int, ...] = ()
    followups: tuple[Mapping[str, Any], ...] = ()  # later user messages: {message, new_session}
    hash: str = ""

    def __post_init__(self) -> None:
        for name in _FROZEN_FIELDS:
            object.__setattr__(self, name, _freeze(getattr(self, name)))
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))
        object.__setattr__(self, "hash", self.compute_hash())

    def __reduce__(self) -> tuple:
        """Pickle as plain data (for process pools); the hash travels along, not recomputed."""
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _FROZEN_FIELDS:
            state[name] = thaw(state[name])
        state["files"] = dict(self.files)
        return (_restore_task, (state,))

    @property
    def id(self) -> str:
        """Human-readable instance id: name@seed."""
        return f"{self.name}@{self.seed}"

    @property
    def category_label(self) -> str:
        return CATEGORY_LABELS.get(self.category, self.category)

    def compute_hash(self) -> str:
        """sha256 over everything that affects running or grading (not the spec's file name)."""
        body = {
            "name": self.name,
            "category": self.category,
            "seed": self.seed,
            "params": self.params,
            "instruction": self.instruction,
            "files": {p: hashlib.sha256(b).hexdigest() for p, b in sorted(self.files.items())},
            "executables": sorted(self.executables),
            "solution": self.solution,
            "checks": self.checks,
            "rubric": self.rubric,
            "rubric_weight": self.rubric_weight,
            "limits": self.limits,
            "network": self.network,
            "mount": self.mount,
            "extra": self.extra_hashed,
            **({"tools": self.tools} if self.tools else {}),
            **({"clock": self.clock} if self.clock != "2026-03-02T09:00:00Z" else {}),
            **({"followups": self.followups} if self.followups else {}),
        }
        text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=_json_default)
        return hashlib.sha256(text.encode()).hexdigest()

    def summary(self) -> dict[str, Any]:
        """What a trajectory or trial record embeds to identify and reproduce this instance."""
        return {
            "name": self.name,
            "id": self.id,
            "hash": self.hash,
            "seed": self.seed,
            "category": self.category,
            "params": thaw(self.params),
            "persona": self.persona,
            "spec_file": self.spec_file,
        }

    def to_dict(self, *, with_files: bool = True) -> dict[str, Any]:
        """JSON-friendly view (file contents as text where they are UTF-8)."""
        out = {
            **self.summary(),
            "title": self.title,
            "subcategory": self.subcategory,
            "difficulty": self.difficulty,
            "skills": list(self.skills),
            "workspace": self.workspace,
            "instruction": self.instruction,
            "solution": thaw(self.solution),
            "checks": thaw(self.checks),
            "rubric": thaw(self.rubric),
            "limits": thaw(self.limits),
            "network": self.network,
            "mount": self.mount,
            "tools": thaw(self.tools),
            "clock": self.clock,
        }
        if self.followups:
            out["followups"] = thaw(self.followups)
        if with_files:
            out["files"] = {p: _text_or_note(b) for p, b in sorted(self.files.items())}
        return out


def _restore_task(state: dict[str, Any]) -> Task:
    task = object.__new__(Task)
    for name, value in state.items():
        object.__setattr__(task, name, _freeze(value) if name in _FROZEN_FIELDS else value)
    object.__setattr__(task, "files", MappingProxyType(state["files"]))
    return task


def _text_or_note(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes of binary data>"
