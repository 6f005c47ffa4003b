"""Materialise a Task's files into a folder, and compare a final workspace with the original."""

from __future__ import annotations

import difflib
import os
import posixpath
from pathlib import Path
from typing import Collection, Mapping

from ..files import safefs
from ..spec.task import Task
from ..files.textsafe import printable, quote_path, split_lines

MAX_DIFF_FILE_BYTES = 200_000
MAX_DIFF_BYTES = 4_000_000
MAX_DIFF_READ_BYTES = 64 << 20


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
                view = view[os.write(fd, view) :]
            if mode == 0o755:
                os.fchmod(fd, mode)  # whatever the umask
        finally:
            os.close(fd)


def snapshot(folder: Path, limits: safefs.TreeLimits | None = safefs.GRADING_LIMITS) -> dict[str, bytes | None]:
    """{relative path: bytes} of the regular files of `folder` (links and special files: None),
    never following links; bounded by `limits`. For folders we made; `diff` reads agent-written
    folders lazily instead."""
    return {
        e.rel: (_read(e, e.st.st_size) if e.kind == "file" else None)
        for e in safefs.walk(folder, limits)
        if e.kind != "dir"
    }


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


def diff(
    original: Path | Mapping[str, bytes | None], final: Path, listing: Mapping[str, tuple[str, int]] | None = None
) -> str:
    """A unified diff from `original` (a folder we made, or its {path: bytes} such as a task's files)
    to `final` (an agent-written folder): binary (holding NUL), huge and special files summarised, names
    quoted when they hold anything unusual (a newline cannot forge a diff line), contents split at
    newlines only with every control, escape or bidi character and every byte that is not UTF-8 shown
    as a visible escape (`cat workspace.diff` runs nothing), the whole diff capped at
    MAX_DIFF_BYTES. `final` is listed within the grading limits and its files read one at a time,
    never more than MAX_DIFF_FILE_BYTES each nor MAX_DIFF_READ_BYTES in all (beyond, a file that
    differs in size from its original, or has none, is reported changed without being read).
    `listing` is `final`'s {path: (kind, size)} when the caller walked it already (within the same
    limits)."""
    before: Mapping[str, bytes | None] = snapshot(original, None) if isinstance(original, Path) else dict(original)
    try:
        walked = listing if listing is not None else {e.rel: (e.kind, e.st.st_size) for e in safefs.walk(final)}
    except safefs.TreeTooLarge as e:
        return f"~ the final workspace is too large to compare: {e}\n"
    after = {rel: entry for rel, entry in walked.items() if entry[0] != "dir"}
    chunks: list[str] = []
    budget = {"out": MAX_DIFF_BYTES, "read": MAX_DIFF_READ_BYTES}
    unshown = 0
    for rel in sorted(set(before) | set(after)):
        a = before.get(rel)
        kind, size = after.get(rel, (None, 0))
        if rel in before and kind == "file" and isinstance(a, bytes):
            if size == len(a):  # the original's size is ours: reading this much is bounded
                b = safefs.read_under(final, rel, size)
                if b == a:
                    continue
            else:
                b = _lazy_read(final, rel, size, budget)
        elif rel in before and kind is not None and a is None and kind != "file":
            continue  # a link or special file that stayed one
        else:
            b = _lazy_read(final, rel, size, budget) if kind == "file" else None
        if budget["out"] <= 0:
            unshown += 1
            continue
        part = _file_diff(rel, a, b, kind, rel in before, size)
        budget["out"] -= sum(len(p) for p in part)
        chunks.extend(part)
    if unshown:
        chunks.append(f"~ diff cut at {MAX_DIFF_BYTES:,} bytes: {unshown} more changed file(s) not shown\n")
    return "".join(chunks)


def _lazy_read(root: Path, rel: str, size: int, budget: dict[str, int]) -> bytes | None:
    """The file's bytes when small enough to show and within the read budget, else None."""
    if size > MAX_DIFF_FILE_BYTES or size > budget["read"] or budget["out"] <= 0:
        return None
    budget["read"] -= size
    try:
        return safefs.read_under(root, rel, MAX_DIFF_FILE_BYTES)
    except ValueError:
        return None


def _file_diff(rel: str, a: bytes | None, b: bytes | None, kind: str | None, in_before: bool, size: int) -> list[str]:
    name = quote_path(rel)
    in_after = kind is not None
    if (in_before and a is None) or (in_after and kind != "file"):
        return [f"~ {name}: symlink or special file\n"]
    a_text = _text(a) if in_before else ""
    b_text = _text(b) if in_after else ""
    if a_text is None or b_text is None:
        status = "added" if not in_before else "deleted" if not in_after else "changed"
        return [f"~ {name}: binary or large file {status}" + (f" ({size:,} bytes)" if in_after else "") + "\n"]
    out = []
    for line in difflib.unified_diff(
        split_lines(a_text),
        split_lines(b_text),
        fromfile=quote_path("a/" + rel) if in_before else "/dev/null",
        tofile=quote_path("b/" + rel) if in_after else "/dev/null",
    ):
        # One escaped line per line: the file's own escapes, `\r` and bytes that are not UTF-8 shown, never run.
        if line.endswith("\n"):
            out.append(printable(line[:-1], multiline=True) + "\n")
        else:
            out.append(printable(line, multiline=True) + "\n\\ No newline at end of file\n")
    return out


def _text(data: bytes | None) -> str | None:
    """The file as text (bytes that are not UTF-8 kept as surrogates, shown as \\xNN), None if it holds NUL (binary)."""
    if data is None or len(data) > MAX_DIFF_FILE_BYTES or b"\0" in data:
        return None
    return data.decode("utf-8", "surrogateescape")
