"""One trial: materialise the task, run an agent in a fresh sandbox, verify, record."""

from __future__ import annotations

import logging
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import trial_controls as control
from ..files import safefs
from ..agent import agent_label, make_agent
from ..trial_controls import TrialCancelled
from ..errors import InfraError, PrerequisiteError
from ..sandbox import SandboxLimits, create_sandbox
from ..spec.task import Task
from ..records import outcomes as outcome_rules
from ..records.trajectory import Trajectory
from ..records.trial_record import RECORD_FORMAT, TrialRecord, Usage
from ..files.tempdirs import make_temp
from ..files.atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from ..verify import combine_hybrid, verify_task
from ..compile.workspace import materialize
from ..compile.prepared import PREPARED, clone_tree

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trial:
    """One planned attempt: a task instance, an agent config and an attempt number."""

    task: Task
    agent: dict[str, Any]
    attempt: int = 0

    @property
    def id(self) -> str:
        return f"{self.task.name}.s{self.task.seed}.{agent_label(self.agent)}.a{self.attempt}"


def sandbox_limits(task: Task) -> SandboxLimits:
    lim = task.limits
    return SandboxLimits(
        wall_seconds=float(lim["seconds"]),
        memory_mb=int(lim["memory_mb"]),
        pids=int(lim["pids"]),
        output_bytes=int(lim["output_bytes"]),
    )


@dataclass
class TrialOutcome:
    """What one trial produced: its record, trajectory and workspace diff (written by `write_outcome`)."""

    record: TrialRecord
    trajectory: dict[str, Any] | None = None
    diff: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)  # an agent's own files (e.g. OpenClaw's transcript)


def write_outcome(trial_dir: Path, outcome: TrialOutcome) -> None:
    """Write a trial's files atomically; record.json goes last, its presence marks the trial done."""
    trial_dir.mkdir(parents=True, exist_ok=True)
    if outcome.diff is not None:
        write_text_atomic(trial_dir / "workspace.diff", outcome.diff)
    if outcome.trajectory is not None:
        write_json_atomic(trial_dir / "trajectory.json", outcome.trajectory, indent=None)
    for name, data in outcome.files.items():
        write_bytes_atomic(trial_dir / name, data)
    write_json_atomic(trial_dir / "record.json", outcome.record.to_dict())


def error_record(
    trial: Trial, message: str, *, tries: int = 1, outcome: str | None = None, **extra: Any
) -> TrialRecord:
    """The record of a trial that ended in an infrastructure error outside `run_trial`: the run's
    timeout for a trial (`cancelled`), or a worker that died (`harness_error`)."""
    if outcome is None:
        outcome = "cancelled" if extra.get("timed_out") else "harness_error"
    return TrialRecord(
        trial_id=trial.id,
        task=trial.task.summary(),
        agent={**trial.agent, "name": agent_label(trial.agent)},
        attempt=trial.attempt,
        tries=tries,
        status="error",
        error=message,
        outcome=outcome,
        finished_at=time.time(),
        extra=dict(extra),
    )


def execute_trial(
    trial: Trial,
    *,
    sandbox_spec: dict | None = None,
    pass_threshold: float = 1.0,
    trial_dir: Path | None = None,
    keep_workspace: Path | None = None,
    judge: dict[str, Any] | None = None,
    tries: int = 1,
) -> TrialRecord:
    """Run one trial end to end and return its record (its files also written to `trial_dir` if given)."""
    cache_dir = trial_dir.parent.parent / "judge_cache" if trial_dir is not None else None
    outcome = run_trial(
        trial,
        sandbox_spec=sandbox_spec,
        pass_threshold=pass_threshold,
        keep_workspace=keep_workspace,
        judge=judge,
        tries=tries,
        judge_cache=cache_dir,
    )
    if trial_dir is not None:
        write_outcome(trial_dir, outcome)
    return outcome.record


def run_trial(
    trial: Trial,
    *,
    sandbox_spec: dict | None = None,
    pass_threshold: float = 1.0,
    keep_workspace: Path | None = None,
    judge: dict[str, Any] | None = None,
    tries: int = 1,
    judge_cache: Path | None = None,
    shared_inputs: bool = False,
    agent: Any = None,
) -> TrialOutcome:
    """Run one trial: materialise, agent in a fresh sandbox, verify, judge. Writes nothing.

    With `shared_inputs` the workspace is copied from this process's one prepared tree of the
    task's files (`clawgym.compile.prepared`), which is also the pristine original the verifier
    grades against (its digest is checked first and recorded as `inputs_sha256`).

    Status is `passed`, `failed` or `error`, and `outcome` one word of the contract
    (`clawgym.records.outcomes`). Infrastructure failures give `error` with the `error` text,
    reward None (never 0) and the outcome naming the stage that failed: `sandbox_error` (the
    sandbox would not start or died), `model_error` (the agent's endpoint), `grader_error` (the
    verifier), `judge_error` (the judge's endpoint), `cancelled`, `harness_error` (anything else
    of ours). A missing prerequisite such as bubblewrap raises PrerequisiteError so the whole run stops.
    `judge` is a policy config (plus judge options, see `clawgym.verify.judge`) that scores the task's
    rubric after the code checks when no gate failed; without it a rubric is noted as unscored.
    The run's caps and cancellation come from `clawgym.trial_controls.current()`. `agent` is an
    agent already built from `trial.agent` (e.g. a claw agent whose policy a trainer drives).
    """
    task = trial.task
    token = control.current().token
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    tmp = make_temp("trial")
    os.chmod(tmp, 0o711)  # a root-run sandbox resolves the workspace and private binds as its own uid
    original, workspace, private = tmp / "original", tmp / "workspace", tmp / "private"
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "trial_id": trial.id,
        "task": task.summary(),
        "agent": {**trial.agent, "name": agent_label(trial.agent)},
        "attempt": trial.attempt,
        "tries": tries,
        "status": "error",
        "reward": None,
        "verdict": None,
        "error": None,
        "outcome": None,
    }
    stage = "harness_error"  # what an exception now means: the stage of the trial that failed
    trajectory: Trajectory | None = None
    workspace_diff: str | None = None
    agent_files: dict[str, bytes] = {}
    try:
        agent = agent if agent is not None else make_agent(trial.agent)
        record["agent"] = agent.describe()
        pristine = None
        with control.cpu_turn():
            if shared_inputs:
                pristine, digest = PREPARED.get(task)
                clone_tree(pristine, workspace)
                record["inputs_sha256"] = digest
            else:
                materialize(task, workspace)  # the verifier writes its own pristine copy
            private.mkdir(mode=0o755)  # host-owned, shown read-only inside: the agent can use it, never change it
        timings["setup_s"] = time.monotonic() - t0
        extra = agent.sandbox_options(task)
        spec = {**(sandbox_spec or {"type": "local"}), **extra} if extra else sandbox_spec
        with control.sandbox_slot():
            t1 = time.monotonic()
            stage = "sandbox_error"
            with create_sandbox(
                spec,
                workspace,
                limits=sandbox_limits(task),
                network=task.network,
                mount=task.mount,
                private_dir=private,
            ) as sandbox:
                sandbox.initial_files = task.files  # what was just written, before anything ran
                unregister = token.on_cancel(sandbox.close)  # a timeout kills what the agent runs
                try:
                    trajectory = agent.run(task, sandbox)
                finally:
                    unregister()
            workspace_problem = getattr(sandbox, "workspace_problem", None)
        token.check()
        record["agent"] = {**record["agent"], **trajectory.agent}  # e.g. a black-box agent's version
        agent_files = _agent_files(agent)
        timings["agent_s"] = time.monotonic() - t1
        ended = outcome_rules.normalize(trajectory.outcome)
        if ended in outcome_rules.INFRASTRUCTURE:  # e.g. the model endpoint never answered: not a grade
            stage = ended
            raise InfraError(trajectory.error or f"the agent's run ended in {ended}")
        stage = "grader_error"
        t2 = time.monotonic()
        with control.cpu_turn():
            trajectory_dict = trajectory.to_dict()
            if pristine is not None:
                PREPARED.check(pristine, record["inputs_sha256"])
        verdict = verify_task(
            task,
            workspace,
            trajectory=trajectory_dict,
            sandbox=sandbox_spec,
            original=pristine,
            pass_threshold=pass_threshold,
            diff=True,
            workspace_problem=workspace_problem,
        )
        workspace_diff = verdict.workspace_diff
        timings["verify_s"] = time.monotonic() - t2
        if task.rubric:
            rubric = None
            if judge is not None and verdict.gate_failed is None and not verdict.error:
                stage = "judge_error"
                t3 = time.monotonic()
                materialize(task, original)  # the judge compares against the original files
                rubric = _judge(judge, task, trajectory_dict, workspace, original, judge_cache)
                timings["judge_s"] = time.monotonic() - t3
                record["judge"] = rubric.judge
            verdict = combine_hybrid(
                verdict, rubric, task.rubric_weight, has_rubric=True, pass_threshold=pass_threshold
            )
        record.update(
            status="passed" if verdict.passed else "failed",
            reward=verdict.reward,
            verdict=verdict.to_dict(),
            outcome=ended,
            note=trajectory.error,
        )
        refused = [
            f"{s.get('status')}: {s.get('reason')}" for s in trajectory.steps if s.get("kind") == "proxy_refused"
        ]
        if refused:  # e.g. a request body past the proxy's cap
            record["proxy_refused"] = refused[:20]
        if keep_workspace is not None:
            safefs.remove_tree(keep_workspace)
            try:
                safefs.copy_tree(workspace, keep_workspace)
            except safefs.TreeTooLarge as e:
                record["kept_workspace"] = f"cut short: {e}"
    except PrerequisiteError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the machinery is an `error` trial
        cancelled = isinstance(exc, TrialCancelled) or token.cancelled
        message = token.reason if cancelled and token.reason else f"{type(exc).__name__}: {exc}"
        outcome = "cancelled" if cancelled else _stage_outcome(stage, exc)
        record.update(status="error", reward=None, verdict=None, error=message, outcome=outcome)
        record["traceback"] = traceback.format_exc(limit=8)
    finally:
        problems = safefs.remove_tree(tmp)
        if problems:  # logged on this trial; never ends the run
            record["cleanup_problems"] = problems[:10]
            log.warning("trial %s: could not remove all of its work folder: %s", trial.id, problems[0])
    timings["total_s"] = time.monotonic() - t0
    record["timings"] = {k: round(v, 4) for k, v in timings.items()}
    record["finished_at"] = time.time()
    if trajectory is not None:
        record["usage"] = Usage.from_trajectory(trajectory.usage, trajectory.turns).to_dict()
    return TrialOutcome(
        TrialRecord.from_dict(record),
        trajectory.to_dict() if trajectory is not None else None,
        workspace_diff,
        agent_files,
    )


def _stage_outcome(stage: str, exc: BaseException) -> str:
    """The outcome of an exception raised in `stage`: a model endpoint's failure the agent did not
    catch is `model_error`, an InfraError is that stage's failure, and any other exception is a
    fault of our own machinery (`harness_error`) unless it was grading's."""
    from ..policy import PolicyError
    from ..verify.judge import JudgeError

    if isinstance(exc, JudgeError):
        return "judge_error"
    if isinstance(exc, PolicyError) and stage == "sandbox_error":
        return "model_error"
    if isinstance(exc, InfraError) or stage in ("grader_error", "judge_error"):
        return stage
    return "harness_error"


def _agent_files(agent: Any) -> dict[str, bytes]:
    """The files an agent keeps beside its trajectory (`trial_files()`), under plain names only."""
    files = agent.trial_files() if callable(getattr(agent, "trial_files", None)) else {}
    return {
        name: bytes(data)
        for name, data in (files or {}).items()
        if isinstance(name, str)
        and name
        and "/" not in name
        and not name.startswith(".")
        and name not in ("record.json", "trajectory.json", "workspace.diff")
    }


def _judge(
    config: dict[str, Any], task: Task, trajectory: dict, workspace: Path, original: Path, cache: Path | None
) -> Any:
    """Score the rubric. A judge that gives no valid answer scores it 0 (a graded trial); only its
    endpoint failing (PolicyError) becomes a JudgeError (an InfraError: the trial is `judge_error`)."""
    from ..verify.judge import JudgeError, judge_policy, judge_rubric, split_judge_config
    from ..policy import PolicyError

    _, options = split_judge_config(config)
    cache_dir = options.get("cache_dir") or cache
    try:
        return judge_rubric(
            task,
            trajectory,
            workspace,
            judge_policy(config),
            original=original,
            cache_dir=Path(cache_dir) if cache_dir else None,
            **{k: int(v) for k, v in options.items() if k != "cache_dir"},
        )
    except PolicyError as e:
        raise JudgeError(f"the rubric judge failed: {e}") from None
