"""Calibrate many instances in worker processes and write each one's `calibration.yaml`.

The per-instance work is `calibrate.calibrate_instance`; this module adds what needs the whole
benchmark: agent results read once, the lock compared with the hashes just measured, earlier
agent results kept while the instance is unchanged, and the summary the command prints.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from ..errors import ClawgymError
from ..files.atomic import write_text_atomic
from ..spec.write import dump_spec
from .calibrate import calibrate_instance
from .evidence import agent_summary, difficulty, load_agent_results, review_summary
from .layout import Instance, find_instances, read_lock
from .lock import Staleness, staleness

HEADER = (
    "Written by `clawgym bench calibrate`: what the automated calibration measured for this\n"
    "instance (see docs/benchmark.md#calibration). Do not edit; run the command again."
)
ORDER = (
    "instance",
    "category",
    "hash",
    "date",
    "bench_version",
    "passed",
    "failures",
    "warnings",
    "checks",
    "lazy",
    "mutations",
    "partial",
    "rubric",
    "agents",
    "difficulty",
    "author_difficulty",
    "review",
)


@dataclass
class CalibrationSummary:
    records: list[dict[str, Any]] = field(default_factory=list)
    lock: Staleness = field(default_factory=Staleness)
    lock_is_failure: bool = True
    seconds: float = 0.0

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["failures"]]

    @property
    def ok(self) -> bool:
        return not self.failed and not (self.lock.stale and self.lock_is_failure)


def select(root: Path, only: list[str]) -> list[Instance]:
    """The instances to calibrate: all, or those named (unknown names are an error with a hint)."""
    instances = find_instances(root)
    if not only:
        return instances
    known = {i.name: i for i in instances}
    unknown = [n for n in only if n not in known]
    if unknown:
        from ..errors import did_you_mean

        hint = did_you_mean(unknown[0], list(known)) or f"see the folders under {root}/<category>/"
        raise ClawgymError(f"no benchmark instance named {', '.join(unknown)} under {root}", hint=hint)
    return [known[n] for n in dict.fromkeys(only)]


def _previous(instance: Instance) -> dict[str, Any]:
    if not instance.calibration.is_file():
        return {}
    try:
        data = yaml.safe_load(instance.calibration.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _finish(record: dict[str, Any], instance: Instance, results: dict, version: str | None) -> dict[str, Any]:
    """Add agent results, difficulty and review to a worker's record; write calibration.yaml."""
    previous = _previous(instance)
    agents, notes = agent_summary(results, instance.name, record["hash"] or "") if record["hash"] else ({}, [])
    if previous.get("hash") == record["hash"]:  # results of earlier runs stay while the instance is unchanged
        agents = {**(previous.get("agents") or {}), **agents}
    record["warnings"] += notes
    record["agents"] = agents
    record["difficulty"] = difficulty((record.get("partial") or {}).get("rewards"), agents)
    record["review"], warning = review_summary(instance, record["hash"])
    if warning:
        record["warnings"].append(warning)
    record["bench_version"] = version
    record["passed"] = not record["failures"]
    ordered = {k: record[k] for k in ORDER if k in record}
    write_text_atomic(instance.calibration, dump_spec(ordered, HEADER))
    return ordered


def calibrate_all(
    root: Path,
    *,
    only: list[str] = (),
    jobs: int = 0,
    agents: list[str] = (),
    judge: dict | None = None,
    sandbox: dict | None = None,
    on_start: Callable[[int], None] = lambda n: None,
    on_done: Callable[[dict[str, Any]], None] = lambda r: None,
) -> CalibrationSummary:
    """Calibrate the selected instances (`jobs` worker processes) and compare with the lock."""
    started = time.monotonic()
    instances = select(root, list(only))
    on_start(len(instances))
    results = load_agent_results(list(agents)) if agents else {}
    version = read_lock(root).get("version")
    summary = CalibrationSummary(lock_is_failure=not only)
    by_name = {i.name: i for i in instances}
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(instances) == 1:
        raw = (calibrate_instance(i, judge=judge, sandbox=sandbox) for i in instances)
        for record in raw:
            summary.records.append(_finish(record, by_name[record["instance"]], results, version))
            on_done(summary.records[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(calibrate_instance, i, judge=judge, sandbox=sandbox) for i in instances]
            for fut in as_completed(futures):
                record = fut.result()
                summary.records.append(_finish(record, by_name[record["instance"]], results, version))
                on_done(summary.records[-1])
    summary.records.sort(key=lambda r: (r["category"], r["instance"]))
    hashes = {r["instance"]: r["hash"] for r in summary.records if r["hash"]}
    summary.lock = staleness(root, hashes, set(only) if only else None)
    if not only:  # an instance that no longer compiles has no hash: it is changed, not removed
        broken = {r["instance"] for r in summary.records if not r["hash"]}
        summary.lock.removed = [n for n in summary.lock.removed if n not in broken]
        summary.lock.changed = sorted(set(summary.lock.changed) | (broken & set(read_lock(root).get("instances", {}))))
    summary.seconds = time.monotonic() - started
    return summary
