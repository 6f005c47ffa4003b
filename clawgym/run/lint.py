"""Task lint: the reference solution must score 1.0 and doing nothing at most 0.1, on a few seeds."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from ..errors import Problem
from .trial import Trial, execute_trial
from ..spec.load import load_file
from ..spec.task import Task

NOP_MAX = 0.1


def lint_tasks(tasks: list[Task], *, jobs: int = 4, sandbox: dict | None = None) -> list[Problem]:
    """Run oracle and nop on every task instance; problems point at the spec's lines."""
    trials = [Trial(t, {"type": agent}) for t in tasks for agent in ("oracle", "nop")
              if agent == "nop" or t.solution]  # imported tasks may ship no reference solution
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        records = list(pool.map(lambda tr: execute_trial(tr, sandbox_spec=sandbox), trials))
    problems: list[Problem] = []
    for trial, rec in zip(trials, records):
        problems += _judge(trial.task, trial.agent["type"], rec)
    return _merge_seeds(problems)


def _merge_seeds(problems: list[Problem]) -> list[Problem]:
    """One problem per distinct message, listing every seed it happened on."""
    merged: dict[tuple, tuple[Problem, list[str]]] = {}
    for p in problems:
        m = re.search(r" on seed (\d+)", p.what)
        ident = (p.file, p.line, p.key, re.sub(r" on seed \d+", "", p.what))
        if ident not in merged:
            merged[ident] = (p, [])
        if m:
            merged[ident][1].append(m.group(1))
    out = []
    for p, seeds in merged.values():
        if len(seeds) > 1:
            p.what = re.sub(r" on seed \d+", f" on seeds {', '.join(seeds)}", p.what)
        out.append(p)
    return out


def _failed_checks(rec: dict[str, Any], passing: bool = False) -> str:
    results = (rec.get("verdict") or {}).get("results", [])
    chosen = [r for r in results if (r["score"] >= 1 - 1e-9) == passing]
    parts = [f"{r['name']}: {r['reason']}" if not passing else r["name"] for r in chosen[:3]]
    more = f"; and {len(chosen) - 3} more" if len(chosen) > 3 else ""
    return "; ".join(parts) + more


def _judge(task: Task, agent: str, rec: dict[str, Any]) -> list[Problem]:
    file, seed = task.spec_file, task.seed
    if rec["status"] == "error":
        return [Problem(f"{agent} trial on seed {seed} could not run: {rec['error']}", file=file, line=1,
                        hint="this is an infrastructure problem; check the sandbox set-up")]
    if agent == "oracle":
        note = rec.get("note")
        if note and rec.get("outcome") in ("failed", "timeout"):
            step = _step_index(note)
            line = task.solution_lines[step] if step is not None and step < len(task.solution_lines) else 1
            key = f"solution[{step}]" if step is not None else "solution"
            return [Problem(f"reference solution failed on seed {seed}: {note}", file=file, line=line, key=key,
                            hint="run 'clawgym run SPEC --agent oracle' and read the trial's trajectory")]
        if rec["reward"] < 1 - 1e-9:
            return [Problem(f"reference solution scores {rec['reward']:.3f} on seed {seed}, expected 1.0 "
                            f"(failing: {_failed_checks(rec)})", file=file, line=_line(file, "checks"), key="checks",
                            hint="fix the solution or the checks until the oracle passes every check")]
    elif rec["reward"] > NOP_MAX:
        return [Problem(f"doing nothing scores {rec['reward']:.3f} on seed {seed}, expected at most {NOP_MAX} "
                        f"(passing: {_failed_checks(rec, passing=True)})", file=file, line=_line(file, "checks"), key="checks",
                        hint="gate on the deliverables (gate: true) or weight the checks on outputs more")]
    return []


@lru_cache(maxsize=256)
def _line(file: str, key: str) -> int:
    try:
        return load_file(file).line((key,))
    except Exception:  # noqa: BLE001 - a location is a nicety, never a failure
        return 1


def _step_index(note: str) -> int | None:
    m = re.search(r"solution step (\d+)", note)
    return int(m.group(1)) - 1 if m else None
