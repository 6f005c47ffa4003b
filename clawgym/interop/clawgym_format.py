"""Read one task folder of the published ClawGym format, and name what is wrong with it.

A task folder holds `data_entry.json` (task_id, user_query, input_mount_dir, metadata),
`input_files/` (copied verbatim into the agent's workspace), and `reward/` with `reward.sh`
(the entry point) and `check.py` (prints named sub-scores for a workspace path). Some folders
also ship a reference solution as `solution/solve.sh`. Reading never runs anything.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..spec.task import CATEGORY_LABELS

DATA_ENTRY = "data_entry.json"
INPUTS = "input_files"
REWARD = "reward"
SOLUTION = "solution"
DEFAULT_MOUNT = "/root/.openclaw/workspace"
PAYLOAD_ENV = "OPENCLAW_REWARD_PAYLOAD"

# The published reward entry point (the same in every published task): check.py's whole stdout is
# one JSON document; an object scores the mean of float(v) over its values, a number itself,
# anything else 0.0; any failure along the pipe (set -o pipefail) fails the reward (scored 0).
REWARD_SH = """#!/usr/bin/env bash
# Reward of one rollout: run after the agent stops, once reward/ is copied into the workspace.
set -euo pipefail
WORKSPACE="${1:-/root/.openclaw/workspace}"
python3 "$WORKSPACE/reward/check.py" "$WORKSPACE" | python3 -c 'import json, sys; data = json.loads(sys.stdin.read().strip()); print(sum(float(v) for v in data.values()) / len(data) if isinstance(data, dict) and data else float(data) if isinstance(data, (int, float)) else 0.0)'
"""

_LABEL_TO_CATEGORY = {label.lower(): key for key, label in CATEGORY_LABELS.items()}
_LABEL_TO_CATEGORY.update(
    {key: key for key in CATEGORY_LABELS}
    | {
        "productivity and collaboration": "productivity",
        "systems and automation": "systems",
        "analysis and reasoning": "analysis",
        "content and domain": "content",
        "planning and knowledge": "planning",
        "software development": "software",
        "software": "software",
    }
)


class Rejected(Exception):
    """This task folder cannot be imported; the message says why and how to fix it."""


@dataclass
class SourceTask:
    """What one published-format folder holds (paths relative to the folder, POSIX style)."""

    folder: Path
    entry: dict[str, Any]
    entry_bytes: bytes
    inputs: list[str]
    executables: set[str]
    reward_files: list[str]
    solution_files: list[str]
    warnings: list[str] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return str(self.entry["task_id"])

    @property
    def query(self) -> str:
        return str(self.entry["user_query"])

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.entry.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def mount(self) -> str:
        return str(self.entry.get("input_mount_dir") or DEFAULT_MOUNT)

    @property
    def category(self) -> str | None:
        """Our category key for the metadata's category label, or None when absent or unknown."""
        label = str(self.metadata.get("category") or "").strip().lower()
        return _LABEL_TO_CATEGORY.get(" ".join(label.split()))

    @property
    def solution_script(self) -> str | None:
        return next((f for f in ("solution/solve.sh", "solution/solve.py") if f in self.solution_files), None)

    @cached_property
    def grader_text(self) -> str:
        """The grading scripts' source (check.py and any helper .py beside it), read once."""
        parts = []
        for rel in self.reward_files:
            if rel.endswith(".py"):
                parts.append((self.folder / rel).read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)

    def portable_grader(self) -> bool:
        """The grader was exported by ClawGym: it grades against its own pristine inputs."""
        try:
            meta = json.loads((self.folder / "reward" / "task.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(meta, dict) and str(meta.get("format", "")).startswith("clawgym.portable-grade/")

    def wants_payload(self) -> bool:
        """Graded on the final answer: the grader reads OPENCLAW_REWARD_PAYLOAD."""
        return PAYLOAD_ENV in self.grader_text


def _files_under(root: Path) -> tuple[list[str], set[str]]:
    files, executables = [], set()
    if not root.is_dir():
        return files, executables
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or not path.is_file():
                continue
            files.append(rel)
            if os.access(path, os.X_OK):
                executables.add(rel)
    return files, executables


def read_task(folder: Path) -> SourceTask:
    """Parse `folder`; raises Rejected with the reason when it cannot be imported."""
    entry_path = folder / DATA_ENTRY
    if not entry_path.is_file():
        raise Rejected(f"no {DATA_ENTRY} (every task folder needs one with task_id and user_query)")
    raw = entry_path.read_bytes()
    try:
        entry = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise Rejected(f"{DATA_ENTRY} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise Rejected(
            f"{DATA_ENTRY}:{e.lineno}: invalid JSON: {e.msg} (column {e.colno}); "
            "fix the file so it parses as one JSON object"
        ) from None
    if not isinstance(entry, dict):
        raise Rejected(f"{DATA_ENTRY} holds a {type(entry).__name__}, expected a JSON object")
    for key in ("task_id", "user_query"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise Rejected(
                f"{DATA_ENTRY}: `{key}` is {'missing' if value is None else repr(value)}, expected a non-empty string"
            )
    mount = entry.get("input_mount_dir")
    if mount is not None and (not isinstance(mount, str) or not mount.startswith("/")):
        raise Rejected(f"{DATA_ENTRY}: `input_mount_dir` is {mount!r}, expected an absolute path")
    reward_files, _ = _files_under(folder / REWARD)
    if "check.py" not in reward_files:
        what = "no reward/ folder" if not (folder / REWARD).is_dir() else "no reward/check.py"
        raise Rejected(f"{what}: the task has nothing to grade it with (expected reward/check.py and reward/reward.sh)")
    inputs, executables = _files_under(folder / INPUTS)
    solution_files, _ = _files_under(folder / SOLUTION)
    task = SourceTask(
        folder=folder,
        entry=entry,
        entry_bytes=raw,
        inputs=inputs,
        executables=executables,
        reward_files=[f"{REWARD}/{f}" for f in reward_files],
        solution_files=[f"{SOLUTION}/{f}" for f in solution_files],
    )
    if "reward.sh" not in reward_files:
        task.warnings.append("no reward/reward.sh: grading uses check.py's sub-scores averaged as reward.sh would")
    if inputs and "input_mount_dir" not in entry:
        task.warnings.append(f"input_files/ present but no input_mount_dir: mounted at {DEFAULT_MOUNT}")
    label = str(task.metadata.get("category") or "").strip()
    if label and task.category is None:
        task.warnings.append(f"unknown category {label!r}: left out (known: {', '.join(CATEGORY_LABELS.values())})")
    missing = missing_inputs(task)
    if missing:
        task.warnings.append(
            "references input file(s) missing from input_files/: "
            + ", ".join(missing[:5])
            + " (the grader may never give full marks)"
        )
    return task


# ---------------------------------------------------------------------------------------------
# Inputs referenced but absent (the published data lost some log files to an ignore rule)

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]*\.[A-Za-z0-9]{1,5})(?![\w/-])")
_OUTPUT_DIRS = {
    "output",
    "outputs",
    "out",
    "result",
    "results",
    "report",
    "reports",
    "build",
    "dist",
    "reward",
    "tmp",
    "archive",
    "archived",
    "processed",
    "sorted",
    "done",
}
_EXAMPLE = re.compile(r"(?:e\.g\.|i\.e\.|\blike|such as|for example|for instance)[\s:,(`'\"]*$", re.I)
_CREATE = re.compile(
    r"\b(write|save|create|produce|generate|export|put|store|draft|compile|make|output|emit|"
    r"render|build|prepare|move|rename|copy|archive)\w*\b",
    re.I,
)


def missing_inputs(task: SourceTask) -> list[str]:
    """Relative paths the instruction reads that input_files/ lacks (paths it asks to create excluded)."""
    have = set(task.inputs)
    names = {f.rsplit("/", 1)[-1] for f in task.inputs}
    top_dirs = {f.split("/", 1)[0] for f in task.inputs if "/" in f}
    found: list[str] = []
    for m in _PATH.finditer(task.query):
        rel = m.group(1)[2:] if m.group(1).startswith("./") else m.group(1)
        top = rel.split("/", 1)[0]
        if rel in have or rel in found or top.lower() in _OUTPUT_DIRS or top.startswith("."):
            continue
        if rel.rsplit("/", 1)[-1] in names or _EXAMPLE.search(task.query[max(0, m.start() - 12) : m.start()]):
            continue  # where an input file goes (a move), or an example of a path
        if top not in top_dirs and top not in ("input", "inputs", "data", "logs", "config", "docs", "src"):
            continue
        clause = re.split(r"[.;:!?\n]", task.query[max(0, m.start() - 80) : m.start()])[-1]
        if _CREATE.search(clause):
            continue  # an output the task asks to create
        found.append(rel)
    return found
