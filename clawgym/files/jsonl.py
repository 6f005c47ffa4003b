"""Write JSON Lines files atomically: a reader never sees a half-written file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable


def write_lines(path: Path, objects: Iterable[Any]) -> int:
    """Write each object as one JSON line to `path` (replaced atomically, fsynced); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for obj in objects:
                fh.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
                n += 1
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return n
