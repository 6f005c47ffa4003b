"""Calibrate one benchmark instance: every automated property a benchmark task must keep.

- frozen: a concrete spec (no params, no vars) named like its folder;
- paths: the instruction mentions every path a check grades (the synth `paths` filter);
- oracle: the reference solution scores 1.0 on the code checks, in a fresh sandbox;
- determinism: 3 more gradings of the reference's final workspace, each in a fresh verifier
  process, give the same verdict;
- nop: doing nothing scores at most 0.1;
- tamper: the tamper agent (truncate every input, run the reference on what is left) scores no
  more than doing nothing (also recorded: whether a gate on the inputs alone already stops it);
- lazy: every lazy agent (`agent/lazy.py`: empty or skeleton outputs, the instruction's numbers,
  constant guesses, the unfiltered input, the first rows, values on the wrong rows) scores at
  most 0.1; recorded as `lazy: {best, variant, scores: {variant: score}}`;
- mutations: the gates of `synth/mutations/` (every declared step and every check name is real,
  the right answer in another reasonable format passes); each problem is a failure, and the
  counts of each gate's verdicts are recorded as `mutations: {gate: {ok|problem|skipped: n}}`;
- partial: scripted partial agents doing 0, 25, 50, 75 and 100% of the requested work (see
  `partial`): the reward never drops as the fraction grows, and partial work scores below
  complete work.

The result is plain data (it comes back from a worker process); `failures` lists what breaks the
benchmark's rules, `warnings` what a person should look at. A rubric is scored only with a judge.
"""

from __future__ import annotations

import datetime as _dt
import shutil
from pathlib import Path
from typing import Any

from ..files import safefs
from ..errors import ClawgymError, InfraError
from ..spec.task import Task, thaw
from .layout import Instance
from . import partial_agent

NOP_MAX = 0.1
LAZY_MAX = 0.1
REGRADINGS = 3
EPS = 1e-9


def _compile(instance: Instance) -> tuple[Task | None, str | None]:
    from ..compile.compiler import compile_task, load_task_spec

    try:
        spec = load_task_spec(instance.spec)
        if "params" in spec.data or "vars" in spec.data:
            return None, "not frozen: the spec still has params or vars (benchmark instances are concrete specs)"
        return compile_task(spec, 0), None
    except ClawgymError as exc:
        return None, "does not compile: " + "; ".join(p.format() for p in exc.problems[:3])


def _paths(task: Task) -> tuple[dict, str | None]:
    from ..synth.filters import graded_paths, unnamed_paths

    graded = graded_paths(task)
    missing = unnamed_paths(task)
    out = {"graded": graded, "missing": missing}
    return out, (f"the instruction never mentions {', '.join(missing)}" if missing else None)


def _grade_in_process(trials: Any, workspace: Path, trajectory: dict) -> Any:
    """Grade a workspace only this code wrote (a partial agent's), as the synth filters grade nop."""
    from ..checks.base import CheckContext
    from ..verify import combine, run_checks

    task = trials.task
    ctx = CheckContext(
        workspace=workspace,
        original=trials.pristine,
        task_dir=Path(task.task_dir) if task.task_dir else None,
        params=thaw(task.params),
        trajectory=trajectory,
        sandbox=trials.sandbox,
        mount=task.mount,
    )
    return combine(run_checks(trials.checks, ctx))


def _partials(
    trials: Any, final: Path, trajectory: dict, oracle_reward: float, failures: list[str], warnings: list[str]
) -> dict[str, Any]:
    """Rewards of the scripted partial agents, with the monotonicity and separation rules."""
    from ..synth.filters import graded_paths

    task = trials.task
    effects = partial_agent.file_effects(trials.pristine, final)
    units, incidental = partial_agent.units_of_work(effects, trajectory, task.instruction, graded_paths(task))
    rewards: dict[float, float] = {}
    for fraction in partial_agent.FRACTIONS:
        k = partial_agent.count_for(fraction, len(units))
        target = trials.root / f"partial-{int(fraction * 100)}"
        traj = partial_agent.build(trials.pristine, final, target, units, k, trajectory)
        rewards[fraction] = round(_grade_in_process(trials, target, traj).reward, 6)
        safefs.remove_tree(target)
    out = {
        "units": [u.label() for u in units],
        "incidental": [e.label() for e in incidental],
        "rewards": {f"{int(f * 100)}%": r for f, r in rewards.items()},
    }
    if abs(rewards[1.0] - oracle_reward) > EPS:
        warnings.append(
            f"partial: redoing all {len(units)} units of work scores {rewards[1.0]:.3f}, the reference "
            f"{oracle_reward:.3f} (a check reads more than the files and recorded actions)"
        )
    if not partial_agent.monotone(rewards):
        drops = [
            f"{int(a * 100)}%: {rewards[a]:.3f} then {int(b * 100)}%: {rewards[b]:.3f}"
            for a, b in zip(partial_agent.FRACTIONS, partial_agent.FRACTIONS[1:])
            if rewards[b] < rewards[a] - EPS
        ]
        failures.append("partial: the reward drops as more of the work is done (" + "; ".join(drops) + ")")
    done = [
        f
        for f in partial_agent.FRACTIONS[:-1]
        if partial_agent.count_for(f, len(units)) < len(units) and rewards[f] >= rewards[1.0] - EPS
    ]
    if done:
        f = max(done)
        k = partial_agent.count_for(f, len(units))
        failures.append(
            f"partial: {k} of {len(units)} units of work ({', '.join(u.label() for u in units[:k]) or 'none'}) "
            f"already score {rewards[f]:.3f}, as much as all of them: "
            f"{', '.join(u.label() for u in units[k:])} is not graded"
        )
    return out


def _rubric(
    task: Task, trials: Any, final: Path, trajectory: dict, judge: dict | None, code_reward: float, warnings: list[str]
) -> dict[str, Any] | None:
    """Score the rubric on the reference's work with the judge, or record that nobody scored it."""
    if not task.rubric:
        return None
    out: dict[str, Any] = {"criteria": len(task.rubric), "weight": task.rubric_weight}
    if judge is None:
        out["scored"] = False
        out["note"] = "not scored: calibration grades the code checks; pass --judge to score the rubric"
        return out
    from ..verify.judge import judge_policy, judge_rubric, split_judge_config

    _, options = split_judge_config(judge)
    result = judge_rubric(
        task,
        trajectory,
        final,
        judge_policy(judge),
        original=trials.pristine,
        **{k: int(v) for k, v in options.items() if k != "cache_dir"},
    )
    w = task.rubric_weight
    out.update(
        scored=True,
        score=round(result.score, 6),
        hybrid_reward=round((1 - w) * code_reward + w * result.score, 6),
        judge={k: v for k, v in result.judge.items() if k in ("type", "model")},
    )
    if result.score < 1 - EPS:
        warnings.append(f"rubric: the judge scores the reference's work {result.score:.3f} (see the criteria)")
    return out


def _tamper(trials: Any) -> Any:
    """Run the tamper agent (truncate every input, then the reference on what is left) in a fresh
    sandbox on a pristine copy, and grade it in a fresh verifier process like any trial."""
    from ..agent import make_agent
    from ..run.trial import sandbox_limits
    from ..sandbox import create_sandbox

    task = trials.task
    workspace = trials.root / "tamper-agent"
    shutil.copytree(trials.pristine, workspace, symlinks=True)
    with create_sandbox(
        trials.sandbox, workspace, limits=sandbox_limits(task), network=task.network, mount=task.mount
    ) as box:
        trajectory = make_agent({"type": "tamper"}).run(task, box)
    if trajectory.outcome == "error":
        raise InfraError(trajectory.error or "the tamper agent reported an infrastructure error")
    return trials.grade(workspace, trajectory)


def _lazy(trials: Any, final: Path, record: dict, failures: list[str]) -> None:
    """Every lazy agent's best score on the reference's outputs (`record["lazy"]`); a failure when
    the best passes LAZY_MAX."""
    from ..agent import lazy

    scores = trials.lazy(final)
    record["lazy"] = lazy.summary(scores)
    top = lazy.worst(scores)
    if top is not None and top.reward > LAZY_MAX + EPS:
        failures.append(f"lazy: a lazy agent scores more than {LAZY_MAX}: {top.describe()} ({lazy.FIX})")


def _mutations(trials: Any, final: Path, trajectory: dict, record: dict, failures: list[str]) -> None:
    """The mutation gates (synth/mutations/): the counts of each gate's verdicts in
    `record["mutations"]`, and one failure per problem."""
    from ..synth.mutations import mutations

    found = mutations(trials.task, trials.pristine, final, trajectory=trajectory, sandbox=trials.sandbox)
    counts: dict[str, dict[str, int]] = {}
    for m in found:
        gate = counts.setdefault(m.gate, {})
        gate[m.verdict] = gate.get(m.verdict, 0) + 1
    record["mutations"] = counts
    failures += [f"mutations: {m.reason}" for m in found if m.problem]


def _trials(task: Task, record: dict, judge: dict | None, sandbox: dict | None) -> None:
    """The graded properties, in the order of the synth filters; fills `record` in place."""
    from ..synth.filters import verdict_essence, failing_checks, FilterTrials

    failures, warnings = record["failures"], record["warnings"]
    checks = record["checks"]
    trials = FilterTrials(task, sandbox)
    try:
        verdict, trajectory, final = trials.oracle()
        checks["oracle"] = round(verdict.reward, 6)
        if trajectory.outcome in ("agent_crash", "agent_timeout", "failed", "timeout") and trajectory.error:
            failures.append(f"oracle: the reference solution failed: {trajectory.error}")
        elif verdict.reward < 1 - EPS:
            failures.append(
                f"oracle: the reference solution scores {verdict.reward:.3f} "
                f"(failing: {failing_checks(verdict.to_dict())})"
            )
        traj = trajectory.to_dict()
        differing = []
        for i in range(REGRADINGS):
            again = trials.grade(final, trajectory)
            if verdict_essence(again) != verdict_essence(verdict):
                differing += [
                    f"regrading {i + 1}, {a[0]}: {a[2]!r} then {b[2]!r}"
                    for a, b in zip(verdict_essence(verdict), verdict_essence(again))
                    if a != b
                ]
        checks["determinism"] = {"regradings": REGRADINGS, "same": not differing}
        if differing:
            failures.append("determinism: grading the same workspace again differs: " + "; ".join(differing[:3]))
        nop = trials.nop()
        checks["nop"] = round(nop.reward, 6)
        if nop.reward > NOP_MAX + EPS:
            failures.append(
                f"nop: doing nothing scores {nop.reward:.3f} > {NOP_MAX} "
                f"(passing: {failing_checks(nop.to_dict(), passing=True)})"
            )
        tamper = _tamper(trials)
        checks["tamper"] = {"reward": round(tamper.reward, 6), "input_gate": trials.tamper_gated()}
        if tamper.reward > nop.reward + EPS:
            failures.append(
                f"tamper: truncating the inputs and answering for what is left scores "
                f"{tamper.reward:.3f}, more than doing nothing ({nop.reward:.3f}); "
                f"passing: {failing_checks(tamper.to_dict(), passing=True)}"
            )
        _lazy(trials, final, record, failures)
        _mutations(trials, final, traj, record, failures)
        record["partial"] = _partials(trials, final, traj, verdict.reward, failures, warnings)
        record["rubric"] = _rubric(task, trials, final, traj, judge, verdict.reward, warnings)
    finally:
        trials.close()


def calibrate_instance(instance: Instance, *, judge: dict | None = None, sandbox: dict | None = None) -> dict[str, Any]:
    """Every automated calibration of one instance, as plain data (see the module docstring)."""
    record: dict[str, Any] = {
        "instance": instance.name,
        "category": instance.category,
        "hash": None,
        "date": _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        "checks": {},
        "failures": [],
        "warnings": [],
    }
    task, problem = _compile(instance)
    if task is None:
        record["failures"].append(problem)
        return record
    record["hash"] = task.hash
    record["author_difficulty"] = task.difficulty or None
    if task.name != instance.name:
        record["failures"].append(
            f"name: the spec is named {task.name!r}, its folder {instance.name!r}; "
            f"set `name: {instance.name}` in {instance.spec}"
        )
    record["checks"]["paths"], problem = _paths(task)
    if problem:
        record["failures"].append("paths: " + problem)
    try:
        _trials(task, record, judge, sandbox)
    except InfraError as exc:
        record["failures"].append(f"infrastructure: the calibration trials could not run: {exc}")
    return record
