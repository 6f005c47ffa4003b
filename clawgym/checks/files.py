"""File-system checks: existence, absence, counts and "left unchanged".

Whether a file exists says nothing about what is in it, so the existence checks (`file_exists`,
`file_absent`, and `files_count` with only `min`) weigh 0 unless their config names a weight:
they are gates, and other checks grade the content.
"""

from __future__ import annotations

import os
import stat

from ..registry import register
from .base import Check, CheckContext, CheckFailure, has_magic

NO_CREDIT_HINT = "make it a gate (gate: true) and grade its content with another check"

_PATH = {
    "type": "string",
    "minLength": 1,
    "x-template": "text",
    "description": "Path relative to the workspace, or a glob (`*`, `?`, `[..]`, `**`).",
}
_KIND = {
    "enum": ["file", "dir", "any"],
    "default": "file",
    "description": "What must exist: a regular file, a directory, or either.",
}


def _kind_ok(st: os.stat_result, kind: str) -> bool:
    if kind == "file":
        return stat.S_ISREG(st.st_mode)
    if kind == "dir":
        return stat.S_ISDIR(st.st_mode)
    return stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)


def _matching(ctx: CheckContext, pattern: str, kind: str, min_bytes: int = 0) -> tuple[list[str], list[str]]:
    """(paths of the wanted kind matching `pattern`, notes on matches that were rejected)."""
    good, notes = [], []
    candidates = ctx.glob(pattern) if has_magic(pattern) else [pattern]
    for rel in candidates:
        try:
            p = ctx.path(rel)
        except CheckFailure as e:
            notes.append(str(e))
            continue
        try:
            st = p.stat()
        except OSError:
            continue
        if not _kind_ok(st, kind):
            notes.append(f"{rel} is not a {'regular file' if kind == 'file' else 'directory'}")
        elif kind == "file" and st.st_size < min_bytes:
            notes.append(f"{rel} has {st.st_size} bytes (< {min_bytes})")
        else:
            good.append(rel)
    return good, notes


@register("check", "file_exists")
class FileExists(Check):
    """A file (or any file matching a glob) exists in the final workspace.

    With `absent: true` the check passes only if nothing matches (same as `file_absent`).
    """

    type = "file_exists"
    reads_only = True
    reads_trajectory = False
    default_weight = 0.0
    schema = {
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": _PATH,
            "min_bytes": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "Minimum size in bytes of a matching file (1 = non-empty).",
            },
            "kind": _KIND,
            "absent": {
                "type": "boolean",
                "default": False,
                "description": "Invert: pass only if nothing matches `path`.",
            },
        },
    }

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        """A weight on an existence check pays for an empty file."""
        if config.get("absent") or not _weighted(config):
            return []
        return [(("weight",), "a file's existence earns no credit on its own", NO_CREDIT_HINT)]

    def run(self, ctx: CheckContext) -> tuple:
        pattern = self.get("path")
        if self.get("absent"):
            return _absent(ctx, pattern)
        good, notes = _matching(ctx, pattern, self.get("kind"), int(self.get("min_bytes")))
        if good:
            more = f" (+{len(good) - 1} more)" if len(good) > 1 else ""
            return 1.0, f"found {good[0]}{more}", {"matches": good[:50]}
        why = "; ".join(notes[:3]) if notes else f"file not found: {pattern}"
        return 0.0, why


def _weighted(config: dict) -> bool:
    """True when the config names a weight above 0."""
    try:
        return float(config.get("weight") or 0) > 0
    except (TypeError, ValueError):
        return False


def _absent(ctx: CheckContext, pattern: str) -> tuple:
    if has_magic(pattern):
        found = ctx.glob(pattern)
    else:
        found = [pattern] if ctx.lexists(pattern) else []
    if found:
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        return 0.0, f"should not exist: {found[0]}{more}", {"matches": found[:50]}
    return 1.0, f"absent as required: {pattern}"


@register("check", "file_absent")
class FileAbsent(Check):
    """Nothing matching `path` exists in the final workspace (a dangling symlink counts as existing).

    Doing nothing passes it unless the file was there to begin with, so it weighs 0 by default;
    give it a weight where deleting the file is the work asked for.
    """

    type = "file_absent"
    reads_only = True
    reads_trajectory = False
    default_weight = 0.0
    schema = {"type": "object", "required": ["path"], "properties": {"path": _PATH}}

    def run(self, ctx: CheckContext) -> tuple:
        return _absent(ctx, self.get("path"))


@register("check", "files_count")
class FilesCount(Check):
    """The number of entries matching a glob lies within [min, max].

    With only `min` it tests that files exist, so it weighs 0 unless its config names a weight
    (and a weight there is a static problem: make it a gate); with `max` the count is the work
    (one file per group, nothing left in a folder) and it weighs 1 by default.
    """

    type = "files_count"
    reads_only = True
    reads_trajectory = False
    schema = {
        "type": "object",
        "required": ["pattern"],
        "anyOf": [{"required": ["min"]}, {"required": ["max"]}],
        "properties": {
            "weight": {
                "type": "number",
                "minimum": 0,
                "default": 1,
                "description": "Weight of this check in the weighted mean of scores: 1 by default when "
                "`max` is set, 0 with only `min` (a count of files that merely exist earns no credit "
                "on its own; make it a gate and grade the files' content with other checks).",
            },
            "pattern": {**_PATH, "description": "Glob relative to the workspace, e.g. `out/*.pdf`."},
            "min": {"type": "integer", "minimum": 0, "description": "Minimum number of matches."},
            "max": {"type": "integer", "minimum": 0, "description": "Maximum number of matches."},
            "kind": _KIND,
        },
    }

    @classmethod
    def implied_weight(cls, config: dict) -> float:
        return 0.0 if config.get("max") is None else 1.0

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        """A weight on a count with only `min` pays for empty files."""
        if config.get("max") is not None or not _weighted(config):
            return []
        return [
            (
                ("weight",),
                "a count of files with only `min` tests that they exist, which earns no credit on its own",
                "make it a gate (gate: true) and grade the files' content with other checks, "
                "or set `max` too when the number of files is itself the work",
            )
        ]

    def run(self, ctx: CheckContext) -> tuple:
        good, _ = _matching(ctx, self.get("pattern"), self.get("kind"))
        n, lo, hi = len(good), self.get("min"), self.get("max")
        bounds = f"[{lo if lo is not None else 0}, {hi if hi is not None else '∞'}]"
        ok = (lo is None or n >= lo) and (hi is None or n <= hi)
        verb = "within" if ok else "outside"
        return (
            (1.0 if ok else 0.0),
            f"{n} match(es) for {self.get('pattern')}, {verb} {bounds}",
            {"count": n, "matches": good[:50]},
        )


def _same_file(a: str, b: str) -> bool:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    if os.stat(a).st_size != os.stat(b).st_size:
        return False
    with os.fdopen(os.open(a, flags), "rb") as fa, os.fdopen(os.open(b, flags), "rb") as fb:
        while True:
            ca, cb = fa.read(1 << 20), fb.read(1 << 20)
            if ca != cb:
                return False
            if not ca:
                return True


def _compare(ctx: CheckContext, rel: str) -> str | None:
    """None if `rel` is identical in both folders, else how it changed."""
    if ctx.original_files is not None:
        return _compare_to_memory(ctx, rel, ctx.original_files.data(rel))
    a = os.path.join(ctx.root(original=True), rel)
    b = os.path.join(ctx.root(), rel)
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except FileNotFoundError:
        return "deleted"
    if stat.S_ISLNK(sa.st_mode) or stat.S_ISLNK(sb.st_mode):
        if not (stat.S_ISLNK(sa.st_mode) and stat.S_ISLNK(sb.st_mode)):
            return "replaced by a symlink" if stat.S_ISLNK(sb.st_mode) else "type changed"
        return None if os.readlink(a) == os.readlink(b) else "symlink retargeted"
    if not stat.S_ISREG(sb.st_mode):
        return "no longer a regular file"
    if not stat.S_ISREG(sa.st_mode):
        return "type changed"
    try:
        return None if _same_file(a, b) else "modified"
    except OSError as e:
        return f"unreadable ({e.strerror or e})"


def _compare_to_memory(ctx: CheckContext, rel: str, before: bytes | None) -> str | None:
    """`_compare` against a pristine file held in memory (always a regular file)."""
    b = os.path.join(ctx.root(), rel)
    try:
        sb = os.lstat(b)
    except FileNotFoundError:
        return "deleted"
    if stat.S_ISLNK(sb.st_mode):
        return "replaced by a symlink"
    if not stat.S_ISREG(sb.st_mode):
        return "no longer a regular file"
    if before is None:
        return "type changed"
    if sb.st_size != len(before):
        return "modified"
    try:
        fd = os.open(b, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            return None if f.read(len(before) + 1) == before else "modified"
    except OSError as e:
        return f"unreadable ({e.strerror or e})"


@register("check", "unchanged")
class Unchanged(Check):
    """Files matching the globs are byte-for-byte identical to the original workspace.

    Deleted, added, modified, retargeted-symlink and type-changed files all count as changes.
    A pattern that matches nothing in the original workspace fails (it is almost surely a typo).
    """

    type = "unchanged"
    reads_only = True
    reads_trajectory = False
    default_weight = 0.0
    weight_note = (
        "0 by default: leaving files as they were earns no credit on its own (doing nothing does it); "
        "make this check a gate (`gate: true`) and grade the work with other checks."
    )
    schema = {
        "type": "object",
        "required": ["paths"],
        "properties": {
            "paths": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "minLength": 1, "x-template": "text"},
                "description": "Globs relative to the workspace (a directory name means "
                "everything below it), e.g. `input/**`.",
            },
            "partial": {
                "type": "boolean",
                "default": False,
                "description": "Score = fraction of files unchanged instead of all-or-nothing.",
            },
        },
    }

    @classmethod
    def static_problems(cls, config: dict) -> list[tuple[tuple, str, str]]:
        """A weight on leaving files alone pays for doing nothing."""
        if not _weighted(config):
            return []
        return [
            (
                ("weight",),
                "leaving files as they were earns no credit on its own (doing nothing does it)",
                "make it a gate (gate: true) with weight 0 and grade the work with other checks",
            )
        ]

    def run(self, ctx: CheckContext) -> tuple:
        orig_kinds, final_kinds = ctx.entries(original=True), ctx.entries()
        files: set[str] = set()
        for pattern in self.get("paths"):
            before = [p for p in ctx.glob(pattern, original=True) if orig_kinds.get(p) != "dir"]
            if not before:
                raise CheckFailure(f"pattern matches no files in the original workspace: {pattern}")
            files.update(before)
            files.update(p for p in ctx.glob(pattern) if final_kinds.get(p) != "dir")
        changes: dict[str, str] = {}
        for rel in sorted(files):
            if rel not in orig_kinds:
                changes[rel] = "added"
            elif rel not in final_kinds:
                changes[rel] = "deleted"
            else:
                how = _compare(ctx, rel)
                if how:
                    changes[rel] = how
        n = len(files)
        if not changes:
            return 1.0, f"all {n} file(s) unchanged"
        listed = ", ".join(f"{p} ({how})" for p, how in list(changes.items())[:5])
        more = f", +{len(changes) - 5} more" if len(changes) > 5 else ""
        score = (n - len(changes)) / n if self.get("partial") else 0.0
        return (
            score,
            f"{len(changes)} of {n} file(s) changed: {listed}{more}",
            {"changed": dict(list(changes.items())[:200])},
        )
