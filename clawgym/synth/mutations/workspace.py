"""The files of a workspace as the gates see them: which files there are, which a check reads,
reading one as text, the records of the input files, and editing files with a way back."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Callable

from ...checks.context import glob_regex, has_magic
from .records import Skip


def workspace_files(root: Path) -> list[str]:
    """The regular files under `root` (links neither followed nor listed), as relative paths."""
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return sorted(out)


def check_files(check: dict, files: list[str]) -> list[str]:
    """The files of `files` a check reads: its path, paths or (files_count) pattern, globs expanded."""
    keys = ("path", "paths", "pattern") if check.get("type") == "files_count" else ("path", "paths")
    found: list[str] = []
    for key in keys:
        value = check.get(key)
        for pattern in [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]:
            if has_magic(pattern):
                rx = glob_regex(pattern)
                found += [f for f in files if rx.match(f)]
            elif pattern.strip("/") in files:
                found.append(pattern.strip("/"))
    return list(dict.fromkeys(found))


def read_text(path: Path) -> str:
    """A file's text (UTF-8); Skip where it is not a readable text file."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Skip(f"{path.name} is not a readable text file ({type(exc).__name__})") from None


def input_records(pristine: Path, limit: int = 5000) -> list[dict[str, Any]]:
    """The records of the input files: CSV rows, JSON objects (in a list, in a list under a key,
    or one per file) and JSON Lines."""
    out: list[dict[str, Any]] = []
    for rel in workspace_files(pristine):
        suffix = rel.rsplit(".", 1)[-1].lower()
        if suffix not in ("csv", "json", "jsonl") or len(out) >= limit:
            continue
        try:
            text = read_text(pristine / rel)
            if suffix == "csv":
                out += [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
            else:
                docs = [json.loads(line) for line in text.splitlines() if line.strip()] if suffix == "jsonl" else []
                out += [r for d in docs or [json.loads(text)] for r in _records_in(d)]
        except (Skip, ValueError, csv.Error):
            continue
    return out[:limit]


def _records_in(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return [x for x in data if isinstance(x, dict)]
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        return [x for v in lists for x in v] if lists else [data]
    return []


Edits = dict[str, bytes | None]  # workspace path -> its new content (None: deleted)


def apply_edits(workspace: Path, edits: Edits) -> Callable[[], None]:
    """Write `edits` into `workspace`; returns what puts it back."""
    before = {rel: (workspace / rel).read_bytes() if (workspace / rel).is_file() else None for rel in edits}
    for rel, data in edits.items():
        if data is None:
            (workspace / rel).unlink()
        else:
            (workspace / rel).write_bytes(data)

    def undo() -> None:
        for rel, data in before.items():
            if data is None:
                (workspace / rel).unlink(missing_ok=True)
            else:
                (workspace / rel).write_bytes(data)

    return undo
