"""Executors: where a run's trials execute. The asyncio runner (`clawgym.run.runner`) awaits them.

- `local` (default): worker threads of this process, local sandboxes (`ThreadExecutor`).
- `ray`: Ray tasks on an existing Ray cluster, each node using its own sandboxes (`RayExecutor`).

An executor's `run(trial, tries, timeout)` returns the trial's `TrialOutcome` once its files are
written to the results folder, or an `error` outcome when the trial timed out. Caps on sandboxes
and model requests apply inside the executor (per process for Ray workers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ...errors import ClawgymError

if TYPE_CHECKING:
    from ..plan import RunPlan
    from ..trial import Trial, TrialOutcome

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    async def run(self, trial: "Trial", tries: int, timeout: float) -> "TrialOutcome": ...

    async def aclose(self, interrupted: bool = False) -> None: ...


def make_executor(plan: "RunPlan") -> Executor:
    """The executor the plan asks for (`plan.executor["type"]`, default local)."""
    config: dict[str, Any] = dict(plan.executor or {"type": "local"})
    kind = config.pop("type", "local")
    if kind == "local":
        from .local import ThreadExecutor
        return ThreadExecutor(plan)
    if kind == "ray":
        from .ray import RayExecutor
        return RayExecutor(plan, **config)
    raise ClawgymError(f"unknown executor {kind!r}", key="executor.type", hint=f"choose one of: {', '.join(EXECUTORS)}")
