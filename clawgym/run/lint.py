"""Task lint: grade a task the way synthesis does, on a few seeds, and say what to fix.

Three agents run on every instance: the reference solution (`oracle`) must score exactly 1.0,
doing nothing (`nop`) at most 0.1, and the `tamper` agent, which truncates every input file to
its first half and then runs the reference solution on what is left, must score no more than
doing nothing. The last is the attack the synthesis `tamper` filter runs (`synth/filters.py`):
a task it pays on rewards rewriting the inputs, and the fix is nearly always a gate on them.
Each problem points at the line to change: a failing solution step, a failing check, or the
`unchanged` check to gate.

Then (with `lazy`) the lazy agents of `agent/lazy.py` imitate each passing instance's reference
outputs without any analysis (empty or skeleton files, the instruction's numbers, constant
guesses, the unfiltered input, the first rows, values on the wrong rows); each is graded here
like doing nothing and must score at most 0.1. A problem names the variant, its score and the
checks that paid, at the first paying check's line.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..agent import lazy as lazy_agents
from ..checks.base import CheckContext
from ..compile.workspace import materialize
from ..files import safefs
from ..files.tempdirs import make_temp
from ..records.outcomes import normalize
from ..records.trajectory import Trajectory
from ..errors import Problem
from ..verify import Verdict, combine, run_checks
from .trial import Trial, execute_trial
from ..spec.load import Document, load_file
from ..spec.task import Task, thaw

NOP_MAX = 0.1
LAZY_MAX = lazy_agents.MAX
EPS = 1e-9
LAZY_HINT = lazy_agents.FIX


@dataclass
class LintReport:
    """Problems found, and every agent's rewards per spec file (in seed order)."""

    problems: list[Problem] = field(default_factory=list)
    rewards: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def scores(self, spec_file: str) -> str:
        """'oracle 1.0, nop 0.000, tamper 0.000, lazy 0.000' for one spec file (worst seed of each agent;
        `lazy` is the best lazy variant's score)."""
        got = self.rewards.get(spec_file, {})
        parts = []
        for agent in ("oracle", "nop", "tamper", "lazy"):
            values = got.get(agent)
            if values:
                worst = min(values) if agent == "oracle" else max(values)
                parts.append(f"{agent} {worst:.3f}")
        return ", ".join(parts)


def lint_tasks(
    tasks: list[Task], *, jobs: int = 4, sandbox: dict | None = None, tamper: bool = False, lazy: bool = False
) -> list[Problem]:
    """Problems of every task instance (see `lint_report`)."""
    return lint_report(tasks, jobs=jobs, sandbox=sandbox, tamper=tamper, lazy=lazy).problems


def lint_report(
    tasks: list[Task], *, jobs: int = 4, sandbox: dict | None = None, tamper: bool = True, lazy: bool = True
) -> LintReport:
    """Run oracle and nop on every instance, then (with `tamper`) the tamper agent and (with
    `lazy`) the lazy agents on every instance whose reference solution passed; problems point at
    the spec's lines."""
    kept = make_temp("lint") if lazy else None
    try:
        return _lint(tasks, jobs, sandbox, tamper, kept)
    finally:
        if kept is not None:
            safefs.remove_tree(kept)


def _lint(tasks: list[Task], jobs: int, sandbox: dict | None, tamper: bool, kept: Path | None) -> LintReport:
    report = LintReport()
    trials = [
        Trial(t, {"type": agent}) for t in tasks for agent in ("oracle", "nop") if agent == "nop" or t.solution
    ]  # imported tasks may ship no reference solution
    finals = [
        kept / str(i) if kept is not None and tr.agent["type"] == "oracle" else None for i, tr in enumerate(trials)
    ]
    records = _execute(trials, jobs, sandbox, finals)
    problems: list[Problem] = []
    nop: dict[int, float] = {}
    passed: list[Task] = []
    reference: list[tuple[Task, Path]] = []
    for trial, rec, final in zip(trials, records, finals):
        agent, task = trial.agent["type"], trial.task
        problems += _judge(task, agent, rec)
        if rec["status"] != "error":
            report.rewards.setdefault(task.spec_file, {}).setdefault(agent, []).append(float(rec["reward"]))
        if agent == "nop":
            nop[id(task)] = float(rec["reward"] or 0)
        elif rec["status"] != "error" and rec["reward"] >= 1 - EPS:
            passed.append(task)
            if final is not None and final.is_dir():
                reference.append((task, final))
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
    if reference:
        problems += _lazy_problems(reference, jobs, sandbox, report)
    report.problems = _merge_seeds(problems)
    return report


def _execute(
    trials: list[Trial], jobs: int, sandbox: dict | None, finals: list[Path | None] | None = None
) -> list[Any]:
    keep = finals or [None] * len(trials)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda tr, k: execute_trial(tr, sandbox_spec=sandbox, keep_workspace=k), trials, keep))


def grade_here(task: Task, workspace: Path, pristine: Path, sandbox: dict | None) -> Verdict:
    """Grade a workspace only this code wrote (a lazy agent's) in this process, as doing nothing."""
    ctx = CheckContext(
        workspace=workspace,
        original=pristine,
        task_dir=Path(task.task_dir) if task.task_dir else None,
        params=thaw(task.params),
        mount=task.mount,
        trajectory=Trajectory(task=task.summary(), agent={"type": "lazy"}).to_dict(),
        sandbox=sandbox,
    )
    return combine(run_checks([dict(c) for c in thaw(task.checks)], ctx))


def lazy_scores(task: Task, final: Path, sandbox: dict | None = None) -> list[lazy_agents.LazyScore]:
    """Every lazy agent's best score on one instance whose reference left `final`."""
    root = make_temp("lint-lazy")
    try:
        pristine = root / "pristine"
        materialize(task, pristine)
        outputs = lazy_agents.output_paths(task, pristine, final)
        return lazy_agents.lazy_scores(
            task, pristine, final, outputs, lambda ws: grade_here(task, ws, pristine, sandbox), sandbox=sandbox
        )
    finally:
        safefs.remove_tree(root)


def _lazy_problems(
    reference: list[tuple[Task, Path]], jobs: int, sandbox: dict | None, report: LintReport
) -> list[Problem]:
    """One problem per spec file on whose instances a lazy agent scores more than LAZY_MAX."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        found = list(pool.map(lambda item: _lazy_one(item[0], item[1], sandbox), reference))
    weak: dict[str, list[tuple[Task, lazy_agents.LazyScore]]] = {}
    problems: list[Problem] = []
    for (task, _), result in zip(reference, found):
        if isinstance(result, Problem):
            problems.append(result)
            continue
        report.rewards.setdefault(task.spec_file, {}).setdefault("lazy", []).append(result.reward if result else 0.0)
        if result is not None and result.reward > LAZY_MAX + EPS:
            weak.setdefault(task.spec_file, []).append((task, result))
    return problems + [_lazy_problem(cases) for cases in weak.values()]


def _lazy_one(task: Task, final: Path, sandbox: dict | None) -> lazy_agents.LazyScore | Problem | None:
    try:
        return lazy_agents.worst(lazy_scores(task, final, sandbox))
    except Exception as exc:  # noqa: BLE001 - reported as that instance's problem, the others go on
        return Problem(
            f"lazy agents on seed {task.seed} could not run: {type(exc).__name__}: {exc}",
            file=task.spec_file,
            line=1,
            hint="this is an infrastructure problem; check the sandbox set-up",
        )


def _lazy_problem(cases: list[tuple[Task, lazy_agents.LazyScore]]) -> Problem:
    """One problem for every seed a lazy agent scored on, at the first check that paid it."""
    task, top = max(cases, key=lambda c: c[1].reward)
    seeds = ", ".join(str(t.seed) for t, _ in cases)
    what = (
        f"a lazy agent scores more than {LAZY_MAX} on seed{'s' if len(cases) > 1 else ''} {seeds}: "
        f"the worst, on seed {task.seed}, is {top.describe()}"
    )
    names = [_check_name(c) for c in task.checks]
    index = next((names.index(n) for n, _ in top.paying if n in names), None)
    key: tuple = ("checks", index) if index is not None else ("checks",)
    return Problem(what, file=task.spec_file, line=_line(task.spec_file, key), key=_key(key), hint=LAZY_HINT)


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


def _check_name(config: Any) -> str:
    """The name a check's results carry (its `name:`, else the one its type makes up)."""
    from .. import registry

    try:
        return registry.get("check", str(config.get("type")))(thaw(config)).name
    except Exception:  # noqa: BLE001 - a location is a nicety, never a failure
        return str(config.get("name") or "")


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
