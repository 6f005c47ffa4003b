"""`CheckContext`: what a check may look at, the final workspace and the pristine original,
through safe helpers that refuse paths escaping the folder (absolute paths, `..`, symlinks pointing
outside), non-regular, oversized and binary files; such problems surface as `CheckFailure`, which
the verifier records as score 0 with the message as reason. Also the glob and path helpers checks
share.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .original_files import OriginalFiles

MAX_BYTES = 20_000_000
MAX_ENTRIES = 100_000


class CheckFailure(Exception):
    """Raised by checks and helpers: the check scores 0 with this message as reason."""


def has_magic(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _segment_regex(seg: str) -> str:
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[" and seg.find("]", i + 2) != -1:
            j = seg.find("]", i + 2)
            body = seg[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out += "[" + body.replace("\\", "\\\\") + "]"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return out


def glob_regex(pattern: str) -> re.Pattern:
    """Compile a glob (`*`, `?`, `[..]` within a segment; `**` across segments) to a regex."""
    segs = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
    out = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out += ".*" if last else "(?:.*/)?"
        else:
            out += _segment_regex(seg) + ("" if last else "/")
    return re.compile(out + r"\Z", re.S)


def check_rel(rel: Any, where: str = "workspace") -> str:
    """Validate a relative path lexically: a non-empty string, not absolute, no `..`, no NUL."""
    if not isinstance(rel, str) or not rel.strip():
        raise CheckFailure(f"invalid path: {rel!r}")
    if "\x00" in rel:
        raise CheckFailure(f"invalid path: {rel!r}")
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        raise CheckFailure(f"absolute paths are not allowed: {rel}")
    if ".." in re.split(r"[/\\]", rel):
        raise CheckFailure(f"path escapes the {where}: {rel}")
    return rel


@dataclass
class CheckContext:
    """What a check may look at. All file access goes through the safe helpers below."""

    workspace: Path
    original: Path | None  # None with `original_files`: a private folder is made if a check needs one
    task_dir: Path | None
    params: dict
    trajectory: dict | None = None
    sandbox: dict | None = None
    mount: str | None = None  # where the task's workspace appears inside a sandbox
    # The pristine files in memory (`original` is then where they are written if a check needs a folder).
    original_files: "OriginalFiles | None" = None
    # The workspace's listing ({relative path: kind}) when the caller already walked it within the
    # grading limits (the verifier does, to measure it): `entries()` then needs no walk of its own.
    workspace_entries: dict[str, str] | None = None
    _walk_cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _scratch: Path | None = field(default=None, init=False, repr=False, compare=False)
    _root: Path | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.workspace_entries is not None:
            self._walk_cache[False] = self.workspace_entries

    def root(self, *, original: bool = False) -> Path:
        if original:
            return self.original_folder()
        if self._root is None:  # the final workspace does not move while it is graded
            self._root = Path(self.workspace).resolve()
        return self._root

    def original_folder(self) -> Path:
        """The pristine workspace as a folder (pristine files held in memory are written on first use)."""
        if self.original_files is not None and self.original is None:
            from ..files.tempdirs import make_temp

            self._scratch = make_temp("verify")
            self.original = self._scratch / "original"
        if self.original_files is not None and not Path(self.original).exists():
            self.original_files.write_to(Path(self.original))
        if self.original is None:
            raise ValueError("a check context needs an original folder or original files")
        return Path(self.original).resolve()

    def close(self) -> None:
        """Remove the folder the pristine files were written to, if a check needed one."""
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            from ..files import safefs

            safefs.remove_tree(scratch)

    def path(self, rel: str, *, original: bool = False) -> Path:
        """Resolve `rel` inside the (original) workspace; CheckFailure if it would escape."""
        where = "original workspace" if original else "workspace"
        check_rel(rel, where)
        root = self.root(original=original)
        try:
            resolved = (root / rel).resolve()
        except (OSError, RuntimeError) as e:
            raise CheckFailure(f"cannot resolve {rel}: {e}") from None
        if resolved != root and not resolved.is_relative_to(root):
            raise CheckFailure(f"symlink points outside the {where}: {rel}")
        return resolved

    def lexists(self, rel: str, *, original: bool = False) -> bool:
        """True if `rel` exists (a dangling or escaping symlink counts as existing)."""
        check_rel(rel)
        if original and self.original_files is not None:
            return self.original_files.kind(rel) is not None
        head, tail = os.path.split(rel.strip().rstrip("/"))
        parent = self.path(head, original=original) if head else self.root(original=original)
        return os.path.lexists(parent / tail)

    def read_bytes(self, rel: str, *, original: bool = False, max_bytes: int = MAX_BYTES) -> bytes:
        """Read a regular file inside the folder, at most `max_bytes`; CheckFailure otherwise."""
        if original and self.original_files is not None:
            return self._read_original(rel, max_bytes)
        p = self.path(rel, original=original)
        try:
            st = p.stat()
        except FileNotFoundError:
            raise CheckFailure(f"file not found: {rel}") from None
        except OSError as e:
            raise CheckFailure(f"cannot read {rel}: {e.strerror or e}") from None
        if stat.S_ISDIR(st.st_mode):
            raise CheckFailure(f"is a directory, not a file: {rel}")
        if not stat.S_ISREG(st.st_mode):
            raise CheckFailure(f"not a regular file: {rel}")
        if st.st_size > max_bytes:
            raise CheckFailure(f"file too large: {rel} ({st.st_size} bytes > {max_bytes} limit)")
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                data = f.read(max_bytes + 1)
        except OSError as e:
            raise CheckFailure(f"cannot read {rel}: {e.strerror or e}") from None
        if len(data) > max_bytes:
            raise CheckFailure(f"file too large: {rel} (> {max_bytes} bytes)")
        return data

    def _read_original(self, rel: str, max_bytes: int) -> bytes:
        assert self.original_files is not None
        check_rel(rel, "original workspace")
        kind, data = self.original_files.kind(rel), self.original_files.data(rel)
        if kind is None:
            raise CheckFailure(f"file not found: {rel}")
        if kind == "dir" or data is None:
            raise CheckFailure(f"is a directory, not a file: {rel}")
        if len(data) > max_bytes:
            raise CheckFailure(f"file too large: {rel} ({len(data)} bytes > {max_bytes} limit)")
        return data

    def read_text(self, rel: str, *, original: bool = False, max_bytes: int = MAX_BYTES) -> str:
        """Read a UTF-8 text file (BOM dropped, newlines normalised to `\\n`)."""
        data = self.read_bytes(rel, original=original, max_bytes=max_bytes)
        if b"\x00" in data:
            raise CheckFailure(f"binary file, expected text: {rel}")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise CheckFailure(f"not UTF-8 text: {rel} (bad byte at offset {e.start})") from None
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def entries(self, *, original: bool = False) -> dict[str, str]:
        """Every entry below the folder as {relative posix path: kind}, never following symlinks.

        kind is one of "file", "dir", "link", "other". Capped at MAX_ENTRIES.
        """
        key = bool(original)
        if key in self._walk_cache:
            return self._walk_cache[key]
        if original and self.original_files is not None:
            self._walk_cache[key] = dict(self.original_files.kinds)
            return self._walk_cache[key]
        from ..files import safefs

        out: dict[str, str] = {}
        limits = safefs.TreeLimits(
            entries=MAX_ENTRIES, depth=safefs.GRADING_LIMITS.depth, apparent_bytes=1 << 62, data_bytes=1 << 62
        )
        try:
            for entry in safefs.walk(self.root(original=original), limits):
                out[entry.rel] = entry.kind
        except safefs.TreeTooLarge as e:
            raise CheckFailure(f"the workspace is too large to list: {e}") from None
        except OSError as e:
            raise CheckFailure(f"cannot list the workspace: {e.strerror or e}") from None
        self._walk_cache[key] = out
        return out

    def glob(self, pattern: str, *, original: bool = False) -> list[str]:
        """Sorted relative paths matching `pattern`. A plain directory name matches everything in it."""
        check_rel(pattern)
        pattern = pattern.strip().rstrip("/")
        table = self.entries(original=original)
        if not has_magic(pattern):
            pattern = pattern[2:] if pattern.startswith("./") else pattern
            if table.get(pattern) == "dir":
                pattern += "/**"
            else:
                return [pattern] if pattern in table else []
        rx = glob_regex(pattern)
        return sorted(p for p in table if rx.match(p))
