"""PinchBench's own score of a run: per agent, the sum of the task means over the tasks run.

Trials of tasks imported by `clawgym import pinchbench` are recognised by the suite file beside
their spec folders (`pinchbench-suite.json`), which also gives the PinchBench id of each task and
the suite's size, so a run over part of the suite is flagged as a subset (PinchBench divides by
the tasks run, not by the suite). Errored trials are not runs (infrastructure, retried); trials of
other tasks are left out.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..checks.pinchbench_score import RunScore, run_score
from ..records.trial_record import TrialRecord, as_record

SUITE = "pinchbench-suite.json"  # written by interop.pinchbench_import


@lru_cache(maxsize=64)
def _suite(folder: str) -> dict[str, Any] | None:
    try:
        data = json.loads((Path(folder) / SUITE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _task_id(rec: TrialRecord) -> tuple[str, dict[str, Any]] | None:
    spec = str((rec.task or {}).get("spec_file") or "")
    if not spec:
        return None
    folder = Path(spec).parent
    suite = _suite(str(folder.parent))
    if suite is None:
        return None
    by_spec = {t.get("spec"): t.get("id") for t in suite.get("tasks") or [] if isinstance(t, dict)}
    return str(by_spec.get(folder.name) or (rec.task or {}).get("name")), suite


def pinchbench_scores(records: Iterable[TrialRecord | Mapping[str, Any]]) -> dict[str, RunScore]:
    """{agent: its PinchBench run score} over the PinchBench trials among `records` (empty when none)."""
    pairs: dict[str, list[tuple[str, float]]] = {}
    suites: dict[str, dict[str, Any]] = {}
    for rec in map(as_record, records):
        found = _task_id(rec)
        if found is None or rec.status == "error" or rec.reward is None:
            continue
        pairs.setdefault(rec.agent_name, []).append((found[0], float(rec.reward)))
        suites.setdefault(rec.agent_name, found[1])
    out = {}
    for agent, rewards in pairs.items():
        suite = suites[agent]
        size = int(suite["size"]) if isinstance(suite.get("size"), int) else None
        out[agent] = run_score(rewards, size, suite.get("core") or [])
    return out


def pinchbench_lines(records: Iterable[TrialRecord | Mapping[str, Any]]) -> list[str]:
    """One printable line per agent (none when the records hold no PinchBench trial)."""
    return [f"{agent}: {score.describe()}" for agent, score in sorted(pinchbench_scores(records).items())]
