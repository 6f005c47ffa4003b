"""Executors: where a run's trials execute. The asyncio runner (`clawgym.run.runner`) awaits them.

- `local` (default): local sandboxes, trials in worker threads of this process (`ThreadExecutor`)
  or, with many trials in flight on a machine with several cores, spread over worker processes
  (`ProcessExecutor`); `processes: N` (or `--processes N`) chooses, `auto` (default) decides by
  concurrency and cores (`local_processes`).
- `ray`: Ray tasks on an existing Ray cluster, each node using its own sandboxes (`RayExecutor`).

An executor's `run(trial, tries, timeout, ended)` returns the trial's `TrialOutcome` once its files are
written to the results folder, or an `error` outcome when the trial timed out. It calls `ended()`
(on the event loop) as soon as the trial itself is over, before its files are written (the local
executors write them behind, `clawgym.run.writer`): the runner then starts the next trial. Caps on sandboxes
and model requests apply inside the executor, across all of its threads and processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from ...errors import ClawgymError

if TYPE_CHECKING:
    from ..plan import RunPlan
    from ..trial import Trial, TrialOutcome

EXECUTORS = ("local", "ray")
PROCESS_THRESHOLD = 128  # `auto` uses worker processes from this many trials in flight
TRIALS_PER_PROCESS = 128  # ... one per this many trials, at most one per core


class Executor(Protocol):
    async def run(
        self, trial: "Trial", tries: int, timeout: float, ended: "Callable[[], None] | None" = None
    ) -> "TrialOutcome": ...

    async def aclose(self, interrupted: bool = False) -> None: ...


def make_executor(plan: "RunPlan") -> Executor:
    """The executor the plan asks for (`plan.executor["type"]`, default local)."""
    config: dict[str, Any] = dict(plan.executor or {"type": "local"})
    kind = config.pop("type", "local")
    if kind == "local":
        processes = local_processes(plan, config.pop("processes", "auto"))
        if processes > 1:
            from .processes import ProcessExecutor

            return ProcessExecutor(plan, processes)
        from .local import ThreadExecutor

        return ThreadExecutor(plan)
    if kind == "ray":
        if config.pop("processes", None) not in (None, "auto"):
            raise ClawgymError(
                "executor.processes applies to the local executor",
                key="executor.processes",
                hint="Ray places trials itself; set num_cpus instead",
            )
        from .ray import RayExecutor

        return RayExecutor(plan, **config)
    raise ClawgymError(f"unknown executor {kind!r}", key="executor.type", hint=f"choose one of: {', '.join(EXECUTORS)}")


def _in_process_model(agent: Any) -> bool:
    """Whether an agent config uses a model held in this process (an `hf` policy): worker processes
    would each load their own copy, or could not reach it at all (a `live:` model being trained)."""
    if isinstance(agent, dict):
        if agent.get("type") == "hf":
            return True
        return any(_in_process_model(v) for v in agent.values())
    if isinstance(agent, list):
        return any(_in_process_model(v) for v in agent)
    return False


def local_processes(plan: "RunPlan", processes: Any = "auto") -> int:
    """How many processes the local executor uses: `processes` when a number; for `auto`, one (this
    process, threads) below PROCESS_THRESHOLD trials in flight, on one core, or with an in-process
    model; else one per TRIALS_PER_PROCESS trials, at least two, at most one per core."""
    from .processes import usable_cores

    live = any(_live_model(t.agent) for t in plan.trials)
    if processes not in (None, "auto"):
        count = int(processes)
        if count < 1:
            raise ClawgymError(
                f"executor.processes must be at least 1 or 'auto', got {processes!r}", key="executor.processes"
            )
        if count > 1 and live:
            raise ClawgymError(
                "a `live:` model (the one being trained) exists only in this process",
                key="executor.processes",
                hint="use processes: 1 for trials on a live model",
            )
        return count
    cores = usable_cores()
    if plan.concurrency < PROCESS_THRESHOLD or cores < 2 or any(_in_process_model(t.agent) for t in plan.trials):
        return 1
    return max(2, min(cores, -(-plan.concurrency // TRIALS_PER_PROCESS)))


def _live_model(agent: Any) -> bool:
    if isinstance(agent, dict):
        return any(_live_model(v) for v in agent.values())
    if isinstance(agent, list):
        return any(_live_model(v) for v in agent)
    return isinstance(agent, str) and agent.startswith("live:")
