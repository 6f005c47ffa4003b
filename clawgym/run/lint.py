"""Task lint: grade a task the way synthesis does, on a few seeds, and say what to fix.

Three agents run on every instance: the reference solution (`oracle`) must score exactly 1.0,
doing nothing (`nop`) at most 0.1, and the `tamper` agent, which truncates every input file to
its first half and then runs the reference solution on what is left, must score no more than
doing nothing. The last is the attack the synthesis `tamper` filter runs (`synth/filters.py`):
a task it pays on rewards rewriting the inputs, and the fix is nearly always a gate on them.
Each problem points at the line to change: a failing solution step, a failing check, or the
`unchanged` check to gate.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..records.outcomes import normalize
from ..errors import Problem
from .trial import Trial, execute_trial
from ..spec.load import Document, load_file
from ..spec.task import Task, thaw

NOP_MAX = 0.1
EPS = 1e-9


@dataclass
class LintReport:
    """Problems found, and every agent's rewards per spec file (in seed order)."""

    problems: list[Problem] = field(default_factory=list)
    rewards: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def scores(self, spec_file: str) -> str:
        """'oracle 1.0, nop 0.000, tamper 0.000' for one spec file (worst seed of each agent)."""
        got = self.rewards.get(spec_file, {})
        parts = []
        for agent in ("oracle", "nop", "tamper"):
            values = got.get(agent)
            if values:
                worst = min(values) if agent == "oracle" else max(values)
                parts.append(f"{agent} {worst:.3f}")
        return ", ".join(parts)


def lint_tasks(tasks: list[Task], *, jobs: int = 4, sandbox: dict | None = None, tamper: bool = False) -> list[Problem]:
    """Problems of every task instance (see `lint_report`)."""
    return lint_report(tasks, jobs=jobs, sandbox=sandbox, tamper=tamper).problems


def lint_report(tasks: list[Task], *, jobs: int = 4, sandbox: dict | None = None, tamper: bool = True) -> LintReport:
    """Run oracle and nop on every instance, then (with `tamper`) the tamper agent on every
    instance whose reference solution passed; problems point at the spec's lines."""
    report = LintReport()
    trials = [
        Trial(t, {"type": agent}) for t in tasks for agent in ("oracle", "nop") if agent == "nop" or t.solution
    ]  # imported tasks may ship no reference solution
    records = _execute(trials, jobs, sandbox)
    problems: list[Problem] = []
    nop: dict[int, float] = {}
    passed: list[Task] = []
    for trial, rec in zip(trials, records):
        agent, task = trial.agent["type"], trial.task
        problems += _judge(task, agent, rec)
        if rec["status"] != "error":
            report.rewards.setdefault(task.spec_file, {}).setdefault(agent, []).append(float(rec["reward"]))
        if agent == "nop":
            nop[id(task)] = float(rec["reward"] or 0)
        elif rec["status"] != "error" and rec["reward"] >= 1 - EPS:
            passed.append(task)
    if tamper and passed:
        attacks = [Trial(t, {"type": "tamper"}) for t in passed]
        weak: dict[str, list[tuple[Task, dict, float]]] = {}
        for trial, rec in zip(attacks, _execute(attacks, jobs, sandbox)):
            task = trial.task
            if rec["status"] == "error":
                problems.append(
                    Problem(
                        f"tamper trial on seed {task.seed} could not run: {rec['error']}",
                        file=task.spec_file,
                        line=1,
                        hint="this is an infrastructure problem; check the sandbox set-up",
                    )
                )
                continue
            report.rewards.setdefault(task.spec_file, {}).setdefault("tamper", []).append(float(rec["reward"]))
            if rec["reward"] > nop.get(id(task), 0.0) + EPS:
                weak.setdefault(task.spec_file, []).append((task, rec, nop.get(id(task), 0.0)))
        problems += [_tamper_problem(cases) for cases in weak.values()]
    report.problems = _merge_seeds(problems)
    return report


def _execute(trials: list[Trial], jobs: int, sandbox: dict | None) -> list[Any]:
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda tr: execute_trial(tr, sandbox_spec=sandbox), trials))


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
    return sorted(out, key=lambda p: (p.file or "", p.line or 0))


def _results(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return list((rec.get("verdict") or {}).get("results", []))


def _names(results: list[dict[str, Any]], passing: bool) -> str:
    chosen = [r["name"] for r in results if (r["score"] >= 1 - EPS) == passing]
    return ", ".join(chosen[:4]) + (f" and {len(chosen) - 4} more" if len(chosen) > 4 else "")


def check_index(task: Task, results: list[dict[str, Any]], result: dict[str, Any]) -> int | None:
    """Which of the task's checks produced `result` (None when it cannot be told)."""
    if len(results) == len(task.checks):
        return results.index(result)
    for i, check in enumerate(task.checks):
        if check.get("name") == result["name"]:
            return i
    return None


def _judge(task: Task, agent: str, rec: dict[str, Any]) -> list[Problem]:
    file, seed = task.spec_file, task.seed
    if rec["status"] == "error":
        return [
            Problem(
                f"{agent} trial on seed {seed} could not run: {rec['error']}",
                file=file,
                line=1,
                hint="this is an infrastructure problem; check the sandbox set-up",
            )
        ]
    results = _results(rec)
    if agent == "oracle":
        note = rec.get("note")
        if note and normalize(rec.get("outcome"), status=rec.get("status")) in ("agent_crash", "agent_timeout"):
            step = _step_index(note)
            line = task.solution_lines[step] if step is not None and step < len(task.solution_lines) else 1
            key = f"solution[{step}]" if step is not None else "solution"
            return [
                Problem(
                    f"reference solution failed on seed {seed}: {note}",
                    file=file,
                    line=line,
                    key=key,
                    hint="run 'clawgym run SPEC --agent oracle' and read the trial's trajectory",
                )
            ]
        if rec["reward"] < 1 - EPS:
            out = []
            for r in results:
                if r["score"] >= 1 - EPS:
                    continue
                i = check_index(task, results, r)
                key = ("checks", i) if i is not None else ("checks",)
                out.append(
                    Problem(
                        f"the reference solution fails check {r['name']!r} on seed {seed} "
                        f"(score {r['score']:.3f}): {r['reason']}",
                        file=file,
                        line=_line(file, key),
                        key=_key(key),
                        hint="fix the check or the solution until the oracle passes it",
                    )
                )
            return out or [
                Problem(
                    f"reference solution scores {rec['reward']:.3f} on seed {seed}, expected 1.0",
                    file=file,
                    line=_line(file, ("checks",)),
                    key="checks",
                    hint="fix the solution or the checks until the oracle passes every check",
                )
            ]
    elif rec["reward"] > NOP_MAX:
        return [
            Problem(
                f"doing nothing scores {rec['reward']:.3f} on seed {seed}, expected at most {NOP_MAX} "
                f"(passing: {_names(results, passing=True)})",
                file=file,
                line=_line(file, ("checks",)),
                key="checks",
                hint="gate on the deliverables (gate: true) or weight the checks on outputs more",
            )
        ]
    return []


def _tamper_problem(cases: list[tuple[Task, dict, float]]) -> Problem:
    """One problem for every seed on which the tamper attack paid, at the line to change."""
    task = cases[0][0]
    seeds = ", ".join(str(t.seed) for t, _, _ in cases)
    scores = ", ".join(f"{rec['reward']:.3f}" for _, rec, _ in cases)
    nop = max(n for _, _, n in cases)
    passing = _names(_results(cases[0][1]), passing=True)
    what = (
        f"the tamper agent (truncates every input file, then runs the reference solution on what is left) "
        f"scores {scores} on seed{'s' if len(cases) > 1 else ''} {seeds}, more than doing nothing "
        f"({nop:.3f}); it still passes: {passing}"
    )
    ungated = [i for i, c in enumerate(task.checks) if c.get("type") == "unchanged" and not c.get("gate")]
    if ungated:
        i = ungated[0]
        return Problem(
            what,
            file=task.spec_file,
            line=_line(task.spec_file, ("checks", i)),
            key=f"checks[{i}]",
            hint="make this `unchanged` check a gate (gate: true): rewriting the inputs then scores 0",
        )
    if any(c.get("type") == "unchanged" for c in task.checks):
        hint = "the `unchanged` gate does not cover every input: list them all in its `paths`"
    else:
        hint = "add a gate on the inputs: {type: unchanged, paths: [<every input file>], gate: true}"
    return Problem(what, file=task.spec_file, line=_line(task.spec_file, ("checks",)), key="checks", hint=hint)


def _key(path: tuple) -> str:
    from ..errors import key_path

    return key_path(path)


@lru_cache(maxsize=256)
def _doc(file: str) -> Document | None:
    try:
        return load_file(file)
    except Exception:  # noqa: BLE001 - a location is a nicety, never a failure
        return None


def _line(file: str, key: tuple) -> int:
    doc = _doc(file)
    return doc.line(key) if doc is not None else 1


def _step_index(note: str) -> int | None:
    m = re.search(r"solution step (\d+)", note)
    return int(m.group(1)) - 1 if m else None


def static_problems(tasks: list[Task]) -> list[Problem]:
    """What each compiled check's own rules can tell without running anything (a `key:` column
    the expected rows do not have, say), at the line of the option; once per spec and message."""
    from .. import registry
    from ..errors import ClawgymError

    seen: set[tuple] = set()
    out: list[Problem] = []
    for task in tasks:
        for i, check in enumerate(task.checks):
            try:
                found = registry.get("check", str(check.get("type"))).static_problems(thaw(check))
            except (ClawgymError, AttributeError):
                continue
            for sub, what, hint in found:
                key = ("checks", i, *sub)
                ident = (task.spec_file, key, what)
                if ident not in seen:
                    seen.add(ident)
                    out.append(
                        Problem(what, file=task.spec_file, line=_line(task.spec_file, key), key=_key(key), hint=hint)
                    )
    return out
