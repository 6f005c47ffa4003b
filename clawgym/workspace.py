"""Materialise a Task's files into a folder, and compare a final workspace with the original."""

from __future__ import annotations

import difflib
import os
import posixpath
from pathlib import Path
from typing import Collection, Mapping

from .task import Task

MAX_DIFF_FILE_BYTES = 200_000


def materialize(task: Task, dest: Path) -> None:
    """Write every initial file of `task` under `dest` (created if needed)."""
    write_files(task.files, task.executables, dest)


def write_files(files: Mapping[str, bytes], executables: Collection[str], dest: Path | str) -> None:
    """Write {relative path: bytes} under `dest` (created if needed); `executables` get mode 755.

    Plain `os` calls rather than pathlib: runs do this for hundreds of trials at once.
    """
    root = os.fspath(dest)
    os.makedirs(root, exist_ok=True)
    made: set[str] = {""}
    for rel, content in files.items():
        parent = posixpath.dirname(rel)
        if parent not in made:
            os.makedirs(os.path.join(root, parent), exist_ok=True)
            made.add(parent)
        mode = 0o755 if rel in executables else 0o644
        fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            if mode == 0o755:
                os.fchmod(fd, mode)  # whatever the umask
        finally:
            os.close(fd)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """{relative path: bytes} of regular files under `folder`; symlinks map to None (never followed)."""
    out: dict[str, bytes | None] = {}
    root = os.fspath(folder)
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)):
                out[prefix + name] = None
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                out[prefix + name] = None
            else:
                with open(path, "rb") as fh:
                    out[prefix + name] = fh.read()
    return out


def diff(original: Path | dict[str, bytes | None], final: Path) -> str:
    """A unified diff from `original` (a folder, or its {path: bytes} such as a task's files) to
    `final` (binary, huge and symlinked files summarised)."""
    before = snapshot(original) if isinstance(original, Path) else dict(original)
    after = snapshot(final)
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
