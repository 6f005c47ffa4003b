"""Execute a RunPlan with one asyncio runner: trials in parallel under caps on trials in flight,
live sandboxes and model requests, per-trial timeouts, retries of `error` trials with backoff;
each result written the moment it ends, so a run can be interrupted and resumed."""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..engines.shared import run_scope
from ..errors import ClawgymError
from .plan import RunPlan
from .trial import Trial
from ..files.atomic import write_json_atomic
from ..records.outcomes import evaluation_rules
from ..records.trial_record import TrialRecord
from ..spec.task import thaw
from ..verify import connection as verifier_connection
from ..sandbox.docker import release_client
from ..files.tempdirs import sweep_stale

MANIFEST = "run.json"
TRIALS = "trials"


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "clawgym": __version__}
    for name in ("pyyaml", "jsonschema", "jinja2", "click", "rich", "openai", "docker"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def manifest(plan: RunPlan) -> dict[str, Any]:
    """What makes a run reproducible: specs with hashes, agents, sandbox, seeds and versions."""
    return {
        "format": "clawgym.run/v1",
        "name": plan.name,
        "created_at": time.time(),
        "source": plan.source,
        "sandbox": plan.sandbox or {"type": "local"},
        "pass_threshold": plan.pass_threshold,
        "concurrency": plan.concurrency,
        "max_sandboxes": plan.max_sandboxes,
        "max_model_requests": plan.max_model_requests,
        "trial_timeout": plan.trial_timeout,
        "executor": plan.executor or {"type": "local"},
        "judge": {k: v for k, v in (plan.judge or {}).items() if "key" not in k.lower()} or None,
        "outcomes": {"evaluation": dict(plan.outcome_rules)},
        "agents": _unique([t.agent for t in plan.trials]),
        "tasks": [{"id": t.id, "hash": t.hash, "spec_file": t.spec_file, "params": thaw(t.params)} for t in plan.tasks],
        "trials": [t.id for t in plan.trials],
        "versions": package_versions(),
        "platform": platform.platform(),
        "argv": sys.argv,
    }


def load_records(out: Path) -> dict[str, TrialRecord]:
    """Finished trial records of a results folder, by trial id (unreadable ones are skipped: the
    trial runs again on resume). Records of every format version load."""
    records: dict[str, TrialRecord] = {}
    for path in sorted((out / TRIALS).glob("*/record.json")):
        try:
            rec = TrialRecord.from_dict(json.loads(path.read_text(encoding="utf-8")), where=str(path))
        except (OSError, ValueError):
            continue
        records[rec.trial_id] = rec
    return records


def run_rules(out: Path) -> dict[str, str]:
    """The evaluation rules a results folder was run with (its run.json), else the defaults."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        overrides = (manifest.get("outcomes") or {}).get("evaluation")
        return evaluation_rules(overrides if isinstance(overrides, dict) else None)
    except (OSError, ValueError, AttributeError):
        return evaluation_rules()


def pending_trials(plan: RunPlan, done: dict[str, TrialRecord]) -> list[Trial]:
    """Trials with no record, an `error` record, a record whose outcome is to be retried, or a
    record for a different task hash."""
    todo = []
    for trial in plan.trials:
        rec = done.get(trial.id)
        if rec is None or rec.is_error or _retried(plan, rec) or rec.task_hash != trial.task.hash:
            todo.append(trial)
    return todo


@dataclass
class RunEvents:
    """Callbacks a caller (the progress bar) gets while a run executes."""

    on_start: Callable[[int, int], None] | None = None  # (already finished, total)
    on_trial_start: Callable[[str], None] | None = None  # trial id, each try
    on_result: Callable[[TrialRecord], None] | None = None  # final record of a trial
    on_retry: Callable[[TrialRecord, float], None] | None = None  # errored record, delay


def trial_timeout(plan: RunPlan, trial: Trial) -> float:
    """Seconds a trial may take: the plan's `trial_timeout`, or the task's limit plus 600."""
    if plan.trial_timeout:
        return float(plan.trial_timeout)
    return float(trial.task.limits.get("seconds", 600)) + 600.0


def execute(
    plan: RunPlan,
    *,
    resume: bool = False,
    on_result: Callable[[TrialRecord], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    events: RunEvents | None = None,
) -> list[TrialRecord]:
    """Run the plan's trials and return every record for the plan (old ones included on resume).

    Each finished trial's files are written atomically the moment it ends; an interrupted run
    (Ctrl-C, kill -9) keeps them, and `resume=True` runs only missing and errored trials.
    """
    events = events or RunEvents()
    events.on_result = events.on_result or on_result
    events.on_start = events.on_start or on_start
    out = plan.out
    existing = load_records(out) if out.exists() else {}
    if existing and not resume:
        raise ClawgymError(
            f"results folder {out} already holds {len(existing)} finished trials",
            hint=f"continue it with 'clawgym run --resume {out}' or choose another --out",
        )
    sweep_stale()  # work folders of earlier runs that were killed
    out.mkdir(parents=True, exist_ok=True)
    (out / TRIALS).mkdir(exist_ok=True)
    if not (out / MANIFEST).exists():
        write_json_atomic(out / MANIFEST, manifest(plan))
    todo = pending_trials(plan, existing)
    if events.on_start:
        events.on_start(len(plan.trials) - len(todo), len(plan.trials))
    results = {tid: rec for tid, rec in existing.items() if tid in {t.id for t in plan.trials}}
    if todo:
        # engines the run's policies need (`vllm` without a base_url): started once, shared by its
        # trials (and by worker processes forked after this), stopped when the run ends
        with run_scope([*(t.agent for t in todo), plan.judge]):
            results.update(asyncio.run(_run_all(plan, todo, events)))
    order = {t.id: i for i, t in enumerate(plan.trials)}
    return sorted(results.values(), key=lambda r: order.get(r.trial_id, 0))


async def _run_all(plan: RunPlan, todo: list[Trial], events: RunEvents) -> dict[str, TrialRecord]:
    """The asyncio runner: at most `concurrency` trials in flight, retries with backoff. A trial's
    slot is free once the executor says it `ended`; its result counts once its files are written."""
    from .executors import make_executor

    executor = make_executor(plan)
    in_flight = asyncio.Semaphore(max(1, plan.concurrency))
    results: dict[str, TrialRecord] = {}

    async def one(trial: Trial) -> None:
        tries = 0
        while True:
            tries += 1
            await in_flight.acquire()
            slot = [True]

            def ended() -> None:  # the trial ended; its files may still be being written
                if slot[0]:
                    slot[0] = False
                    in_flight.release()

            try:
                if events.on_trial_start:
                    events.on_trial_start(trial.id)
                outcome = await executor.run(trial, tries, trial_timeout(plan, trial), ended=ended)
            finally:
                ended()
            record = outcome.record
            if _retried(plan, record) and tries <= plan.retries:
                delay = plan.retry_backoff * 2 ** (tries - 1)
                if events.on_retry:
                    events.on_retry(record, delay)
                await asyncio.sleep(delay)  # infrastructure errors get another go
                continue
            results[trial.id] = record
            if events.on_result:
                events.on_result(record)
            return

    tasks = [asyncio.create_task(one(trial)) for trial in todo]
    interrupted = True
    try:
        for finished in asyncio.as_completed(tasks):
            await finished  # re-raises a PrerequisiteError at once: the whole run stops
        interrupted = False
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await executor.aclose(interrupted=interrupted)
        verifier_connection.shutdown()  # no helper process or connection outlives the run
        release_client()
    return results


def _retried(plan: RunPlan, record: TrialRecord) -> bool:
    """Whether the run tries this trial again: its outcome's evaluation rule is `retry`."""
    return plan.outcome_rules.get(record.ended, "score") == "retry"


def _unique(items: list[dict]) -> list[dict]:
    out: list[dict] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
