"""Execute a RunPlan: trials in parallel, each result written the moment it ends, resumable."""

from __future__ import annotations

import json
import platform
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from . import __version__
from .errors import ClawgymError
from .plan import RunPlan
from .rollout import Trial, execute_trial, write_json_atomic
from .task import thaw
from .tempdirs import sweep_stale

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
        "format": "clawgym.run/v1", "name": plan.name, "created_at": time.time(),
        "source": plan.source, "sandbox": plan.sandbox or {"type": "local"},
        "pass_threshold": plan.pass_threshold, "concurrency": plan.concurrency,
        "judge": {k: v for k, v in (plan.judge or {}).items() if "key" not in k.lower()} or None,
        "agents": _unique([t.agent for t in plan.trials]),
        "tasks": [{"id": t.id, "hash": t.hash, "spec_file": t.spec_file, "params": thaw(t.params)}
                  for t in plan.tasks],
        "trials": [t.id for t in plan.trials],
        "versions": package_versions(), "platform": platform.platform(), "argv": sys.argv,
    }


def load_records(out: Path) -> dict[str, dict[str, Any]]:
    """Finished trial records of a results folder, by trial id (unreadable ones are skipped)."""
    records: dict[str, dict[str, Any]] = {}
    for path in sorted((out / TRIALS).glob("*/record.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        records[rec["trial_id"]] = rec
    return records


def pending_trials(plan: RunPlan, done: dict[str, dict[str, Any]]) -> list[Trial]:
    """Trials with no record, an `error` record, or a record for a different task hash."""
    todo = []
    for trial in plan.trials:
        rec = done.get(trial.id)
        if rec is None or rec.get("status") == "error" or rec["task"]["hash"] != trial.task.hash:
            todo.append(trial)
    return todo


def execute(plan: RunPlan, *, resume: bool = False,
            on_result: Callable[[dict[str, Any]], None] | None = None,
            on_start: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run the plan's trials and return every record for the plan (old ones included on resume)."""
    out = plan.out
    existing = load_records(out) if out.exists() else {}
    if existing and not resume:
        raise ClawgymError(f"results folder {out} already holds {len(existing)} finished trials",
                           hint=f"continue it with 'clawgym run --resume {out}' or choose another --out")
    sweep_stale()  # work folders of earlier runs that were killed
    out.mkdir(parents=True, exist_ok=True)
    (out / TRIALS).mkdir(exist_ok=True)
    if not (out / MANIFEST).exists():
        write_json_atomic(out / MANIFEST, manifest(plan))
    todo = pending_trials(plan, existing)
    if on_start:
        on_start(len(plan.trials) - len(todo), len(plan.trials))
    results = {tid: rec for tid, rec in existing.items() if tid in {t.id for t in plan.trials}}
    tries: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=max(1, plan.concurrency)) as pool:
        def submit(trial: Trial, delay: float = 0.0) -> Future:
            tries[trial.id] = tries.get(trial.id, 0) + 1
            return pool.submit(_after, delay, execute_trial, trial, sandbox_spec=plan.sandbox, judge=plan.judge,
                               pass_threshold=plan.pass_threshold, trial_dir=out / TRIALS / trial.id,
                               tries=tries[trial.id])

        pending = {submit(trial): trial for trial in todo}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    trial = pending.pop(future)
                    record = future.result()
                    if record["status"] == "error" and tries[trial.id] <= plan.retries:
                        delay = plan.retry_backoff * 2 ** (tries[trial.id] - 1)
                        pending[submit(trial, delay)] = trial  # infrastructure errors get another go
                        continue
                    results[record["trial_id"]] = record
                    if on_result:
                        on_result(record)
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    order = {t.id: i for i, t in enumerate(plan.trials)}
    return sorted(results.values(), key=lambda r: order.get(r["trial_id"], 0))


def _after(delay: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `fn` after `delay` seconds (the backoff before retrying an errored trial)."""
    if delay > 0:
        time.sleep(delay)
    return fn(*args, **kwargs)


def _unique(items: list[dict]) -> list[dict]:
    out: list[dict] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
