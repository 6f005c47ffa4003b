"""Training metrics: one JSON line per logged step in `OUT/metrics.jsonl`, and TensorBoard events.

The JSONL file is the record (appended and flushed per line, so a kill loses nothing logged and a
resumed run continues the same file); TensorBoard (`OUT/tensorboard/`) is written too when the
`tensorboard` package is installed, for curves in the usual viewer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsLog:
    """Append metrics of the main process; a no-op on other ranks."""

    def __init__(self, out: Path, *, enabled: bool, tensorboard: bool, after_step: int | None = None) -> None:
        """`after_step`: a resumed run drops lines logged after its checkpoint (they are redone)."""
        self.enabled = enabled
        self._fh = None
        self._tb = None
        if not enabled:
            return
        out.mkdir(parents=True, exist_ok=True)
        path = out / "metrics.jsonl"
        if after_step is not None and path.is_file():
            kept = [
                line
                for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
                if line.strip() and json.loads(line).get("step", 0) <= after_step
            ]
            path.write_text("".join(kept), encoding="utf-8")
        self._fh = open(path, "a", encoding="utf-8")
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard not installed: the JSONL file is the record
                SummaryWriter = None
            if SummaryWriter is not None:
                self._tb = SummaryWriter(str(out / "tensorboard"))

    def write(self, step: int, values: dict[str, Any], kind: str = "train") -> None:
        if not self.enabled or self._fh is None:
            return
        self._fh.write(json.dumps({"kind": kind, "step": step, **values}, default=float) + "\n")
        self._fh.flush()
        if self._tb is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(f"{kind}/{key}", value, step)
            self._tb.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._tb is not None:
            self._tb.close()


def read_metrics(out: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The logged lines of a run (optionally one kind: train, eval, data)."""
    path = out / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if kind is None or r.get("kind") == kind]
