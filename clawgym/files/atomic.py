"""Atomic writers: a reader sees the old file or the whole new one, never a torn file (results
folders are read while runs write them, and a kill can land at any moment). Every writer here
writes a hidden temporary file beside the target, fsyncs it and renames it into place."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterable


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def write_bytes_atomic(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically."""
    path = Path(path)
    tmp = _tmp(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str, *, fsync: bool = False) -> None:
    """Replace `path` with `text` (UTF-8) atomically."""
    write_bytes_atomic(path, text.encode("utf-8"), fsync=fsync)


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 2) -> None:
    """Replace `path` with `data` as JSON atomically (fsynced). `indent=None` writes compact JSON
    with the C encoder (much faster for big trajectories)."""
    write_bytes_atomic(path, json.dumps(data, indent=indent, ensure_ascii=False, default=str).encode("utf-8"))


def write_lines(path: Path, objects: Iterable[Any]) -> int:
    """Write each object as one JSON line to `path` (replaced atomically, fsynced); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
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
