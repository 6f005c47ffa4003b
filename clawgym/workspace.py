"""Materialise a Task's files into a folder, and compare a final workspace with the original."""

from __future__ import annotations

import difflib
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping, Union

from . import safefs
from .task import Task
from .textsafe import quote_path

MAX_DIFF_FILE_BYTES = 200_000
MAX_DIFF_BYTES = 4_000_000


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


@dataclass
class _Large:
    """A file too big to show in a diff: its size, and whether it equals the original."""

    size: int
    same_as_original: bool = False


_Content = Union[bytes, None, _Large]  # bytes, a link or special file (None), or a large file


def snapshot(folder: Path, compare: Mapping[str, bytes | None] | None = None,
             limits: safefs.TreeLimits = safefs.GRADING_LIMITS) -> dict[str, _Content]:
    """{relative path: content} of `folder`, never following links; bounded by `limits`.

    Regular files up to MAX_DIFF_FILE_BYTES map to their bytes; links and special files to None;
    bigger files to `_Large` (read only to compare with the same-sized file of `compare`, whose
    size we chose, so a sparse file claiming gigabytes is never read).
    """
    out: dict[str, _Content] = {}
    for entry in safefs.walk(folder, limits):
        if entry.kind == "dir":
            continue
        if entry.kind != "file":
            out[entry.rel] = None
            continue
        size = entry.st.st_size
        if size <= MAX_DIFF_FILE_BYTES:
            out[entry.rel] = _read(entry, size)
            continue
        before = (compare or {}).get(entry.rel)
        same = isinstance(before, bytes) and len(before) == size and _read(entry, size) == before
        out[entry.rel] = _Large(size, same)
    return out


def _read(entry: safefs.Entry, size: int) -> bytes | None:
    try:
        fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=entry.dir_fd)
    except OSError:
        return None
    try:
        chunks, left = [], size
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def diff(original: Path | Mapping[str, bytes | None], final: Path) -> str:
    """A unified diff from `original` (a folder, or its {path: bytes} such as a task's files) to
    `final`: binary, huge and special files summarised, names quoted when they hold anything
    unusual (a newline cannot forge a diff line), the whole diff capped at MAX_DIFF_BYTES."""
    before: Mapping[str, bytes | None] = _files_of(original) if isinstance(original, Path) else dict(original)
    try:
        after = snapshot(final, before)
    except safefs.TreeTooLarge as e:
        return f"~ the final workspace is too large to compare: {e}\n"
    chunks: list[str] = []
    size, shown, changed = 0, 0, 0
    for rel in sorted(set(before) | set(after)):
        a, b = before.get(rel), after.get(rel)
        if rel in before and rel in after and (a == b or (isinstance(b, _Large) and b.same_as_original)):
            continue
        changed += 1
        if size >= MAX_DIFF_BYTES:
            continue
        shown += 1
        part = _file_diff(rel, a, b, rel in before, rel in after)
        size += sum(len(p) for p in part)
        chunks.extend(part)
    if changed > shown:
        chunks.append(f"~ diff cut at {MAX_DIFF_BYTES:,} bytes: {changed - shown} more changed file(s) not shown\n")
    return "".join(chunks)


def _files_of(folder: Path) -> dict[str, bytes | None]:
    """Every file of a folder we made ourselves (an original workspace), read whole."""
    return {e.rel: (_read(e, e.st.st_size) if e.kind == "file" else None)
            for e in safefs.walk(folder, limits=None) if e.kind != "dir"}


def _file_diff(rel: str, a: _Content, b: _Content, in_before: bool, in_after: bool) -> list[str]:
    name = quote_path(rel)
    if (a is None and in_before) or (b is None and in_after):
        return [f"~ {name}: symlink or special file\n"]
    a_text, b_text = _text(a), _text(b)
    if a_text is None or b_text is None:
        status = "added" if not in_before else "deleted" if not in_after else "changed"
        return [f"~ {name}: binary or large file {status}\n"]
    a_name, b_name = quote_path("a/" + rel), quote_path("b/" + rel)
    out = list(difflib.unified_diff(a_text.splitlines(keepends=True), b_text.splitlines(keepends=True),
                                    fromfile=a_name if in_before else "/dev/null",
                                    tofile=b_name if in_after else "/dev/null"))
    if out and not out[-1].endswith("\n"):
        out.append("\n\\ No newline at end of file\n")
    return out


def _text(data: _Content) -> str | None:
    if data is None:
        return ""
    if isinstance(data, _Large) or len(data) > MAX_DIFF_FILE_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
