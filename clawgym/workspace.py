"""Materialise a Task's files into a folder, and compare a final workspace with the original."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from .task import Task

MAX_DIFF_FILE_BYTES = 200_000


def materialize(task: Task, dest: Path) -> None:
    """Write every initial file of `task` under `dest` (created if needed)."""
    dest.mkdir(parents=True, exist_ok=True)
    made: set[Path] = set()
    for rel, content in task.files.items():
        path = dest / rel
        parent = path.parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        path.write_bytes(content)
        if rel in task.executables:
            path.chmod(0o755)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """{relative path: bytes} of regular files under `folder`; symlinks map to None (never followed)."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        for name in dirnames:
            if (base / name).is_symlink():
                out[(base / name).relative_to(folder).as_posix()] = None
        for name in filenames:
            path = base / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file():
                out[rel] = None
            else:
                out[rel] = path.read_bytes()
    return out


def diff(original: Path, final: Path) -> str:
    """A unified diff from `original` to `final` (binary, huge and symlinked files summarised)."""
    before, after = snapshot(original), snapshot(final)
    chunks: list[str] = []
    for rel in sorted(set(before) | set(after)):
        a, b = before.get(rel), after.get(rel)
        if rel in before and rel in after and a == b:
            continue
        if a is None and rel in before or b is None and rel in after:
            chunks.append(f"~ {rel}: symlink or special file\n")
            continue
        a_text, b_text = _text(a), _text(b)
        if a_text is None or b_text is None:
            status = "added" if rel not in before else "deleted" if rel not in after else "changed"
            chunks.append(f"~ {rel}: binary or large file {status}\n")
            continue
        chunks.extend(difflib.unified_diff(
            a_text.splitlines(keepends=True), b_text.splitlines(keepends=True),
            fromfile=f"a/{rel}" if rel in before else "/dev/null",
            tofile=f"b/{rel}" if rel in after else "/dev/null"))
        if chunks and not chunks[-1].endswith("\n"):
            chunks.append("\n\\ No newline at end of file\n")
    return "".join(chunks)


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if len(data) > MAX_DIFF_FILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
