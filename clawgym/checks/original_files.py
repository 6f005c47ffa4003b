"""The pristine workspace held in memory: the task's own files ({path: bytes}), which checks that
only read compare against without the verifier writing a copy to disk first.

A task's files are regular files only (no links, no special files), so the tree is the files and
the folders above them. `CheckContext` serves `original=True` reads from here and writes the
files out (once, on first use) only for checks that need a real folder, such as grading scripts.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Collection, Mapping


class OriginalFiles:
    """A read-only tree of regular files given as {relative posix path: bytes}."""

    def __init__(self, files: Mapping[str, bytes], executables: Collection[str] = ()):
        self.files = dict(files)
        self.executables = set(executables)
        kinds: dict[str, str] = {}
        for rel in self.files:
            parent = posixpath.dirname(rel)
            while parent and parent not in kinds:
                kinds[parent] = "dir"
                parent = posixpath.dirname(parent)
            kinds[rel] = "file"
        self.kinds = kinds

    @staticmethod
    def normal(rel: str) -> str:
        """`rel` as the folder would resolve it (`./a//b/` is `a/b`); callers have checked it lexically."""
        out = posixpath.normpath(rel.strip())
        return "" if out == "." else out

    def kind(self, rel: str) -> str | None:
        """ "file", "dir", or None when nothing is there; "" is the root folder."""
        rel = self.normal(rel)
        return "dir" if rel == "" else self.kinds.get(rel)

    def data(self, rel: str) -> bytes | None:
        return self.files.get(self.normal(rel))

    def write_to(self, folder: Path) -> Path:
        """Write the files into `folder` (created), executables marked so; returns `folder`."""
        from ..compile.workspace import write_files

        write_files(self.files, self.executables, folder)
        return folder
