"""The persona and workspace template that imported tasks refer to, placed where their specs find them.

Imported specs use the generic persona `workspace-owner` and the empty workspace `blank`
(shipped in `clawgym/interop/library/`). When the library an output folder resolves to lacks
them, they are written into the output folder, which then is the library of its tasks.
"""

from __future__ import annotations

from pathlib import Path

from ..spec.library import find_root

SHIPPED = Path(__file__).with_name("library")
NEEDED = ("personas/workspace-owner.yaml", "workspaces/blank/workspace.yaml")


def ensure_library(out: Path) -> list[str]:
    """Make `workspace-owner` and `blank` resolvable from specs under `out`; returns what was written."""
    out.mkdir(parents=True, exist_ok=True)
    root = find_root(out)
    if all((root / rel).is_file() for rel in NEEDED):
        return []
    written = []
    for rel in NEEDED:
        target = out / rel
        if target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = (SHIPPED / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        target.write_text("".join(ln for ln in lines if not ln.startswith("# yaml-language-server")),
                          encoding="utf-8")
        written.append(rel)
    return written
