"""The persona and workspace templates that imported tasks refer to, placed where their specs find them.

Imported specs use the generic persona `workspace-owner` and a workspace template: `blank` (only
the bootstrap files; Harbor imports) or `openclaw-2026-4-1` (a new workspace as OpenClaw 2026.4.1
seeds it; published ClawGym imports), shipped in `clawgym/interop/library/`. When the library an
output folder resolves to lacks them, they are written into the output folder, which then is the
library of its tasks.
"""

from __future__ import annotations

from pathlib import Path

from ..spec.library import find_root

SHIPPED = Path(__file__).with_name("library")
NEEDED = (
    "personas/workspace-owner.yaml",
    "workspaces/blank/workspace.yaml",
    "workspaces/openclaw-2026-4-1/workspace.yaml",
    "workspaces/openclaw-2026-4-1/seed.tar",
)


def ensure_library(out: Path) -> list[str]:
    """Make the imported tasks' persona and workspaces resolvable from specs under `out`; returns
    what was written."""
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
        if rel.endswith(".yaml"):
            lines = (SHIPPED / rel).read_text(encoding="utf-8").splitlines(keepends=True)
            target.write_text(
                "".join(ln for ln in lines if not ln.startswith("# yaml-language-server")), encoding="utf-8"
            )
        else:
            target.write_bytes((SHIPPED / rel).read_bytes())
        written.append(rel)
    return written
