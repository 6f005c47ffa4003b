"""The oracle and nop agents: tools for task authors (does the reference pass? does nothing fail?)."""

from __future__ import annotations

import shlex
import time

from ..registry import register
from ..sandbox import ExecResult, Sandbox
from ..spec.task import Task
from ..records.trajectory import Trajectory
from .base import Agent

_TAIL = 2000


def run_step(step: dict, sandbox: Sandbox, timeout: float) -> ExecResult:
    """Run one reference-solution step in the sandbox (writes go through the sandbox too)."""
    timeout = float(step.get("timeout") or timeout)
    if "exec" in step:
        return sandbox.exec(step["exec"], timeout=timeout)
    if "python" in step:
        return sandbox.exec(["python3", "-"], stdin=step["python"], timeout=timeout)
    if "script" in step:
        argv = ["python3", "-"] if step.get("interpreter") == "python3" else ["bash", "-s"]
        return sandbox.exec(argv, stdin=step["source"], timeout=timeout)
    path = step["write"]["path"]
    command = f'mkdir -p "$(dirname {shlex.quote(path)})" && cat > {shlex.quote(path)}'
    return sandbox.exec(command, stdin=step["write"]["content"], timeout=timeout)


def record_effect(traj: Trajectory, step: dict, turn: int) -> None:
    """A simulated action of the reference solution, recorded like the claw agent's tools do."""
    if "message" in step:
        msg = step["message"]
        traj.side_effects.setdefault("outbox", []).append(
            {"channel": msg.get("channel"), "target": msg.get("target"), "message": msg["message"], "turn": turn}
        )
        traj.add("tool", step=turn, name="message", arguments=dict(msg), ok=True)
    else:
        job = {"id": f"job-{len(traj.side_effects.get('cron', [])) + 1}", **step["cron"]}
        traj.side_effects.setdefault("cron", []).append(job)
        traj.add("tool", step=turn, name="cron", arguments={"action": "add", "job": dict(step["cron"])}, ok=True)


def describe_step(step: dict) -> str:
    if "name" in step:
        return str(step["name"])
    if "message" in step or "cron" in step:
        return "message" if "message" in step else f"cron {step['cron']['name']}"
    for key in ("exec", "python", "script"):
        if key in step:
            first = str(step[key]).strip().splitlines()[0] if str(step[key]).strip() else ""
            return f"{key}: {first[:80]}"
    return f"write {step['write']['path']}"


@register("agent", "oracle")
class OracleAgent(Agent):
    """Runs the task's reference solution, step by step, through the same sandbox an agent gets."""

    type = "oracle"

    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        traj = self.new_trajectory(task)
        if not task.solution:
            return traj.finish(
                "agent_crash",
                f"task {task.name!r} has no reference solution, so the oracle has nothing "
                "to run (imported tasks whose source ships none)",
            )
        deadline = time.monotonic() + float(task.limits.get("seconds", 600))
        for i, step in enumerate(task.solution):
            if "message" in step or "cron" in step:
                record_effect(traj, step, turn=i)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return traj.finish(
                    "agent_timeout", f"time budget of {task.limits['seconds']} s ran out before step {i + 1}"
                )
            result = run_step(step, sandbox, left)
            traj.add(
                "exec",
                step=i,
                description=describe_step(step),
                exit_code=result.exit_code,
                output=result.output[-_TAIL:],
                duration_s=round(result.duration_s, 4),
                timed_out=result.timed_out,
            )
            if result.timed_out:
                return traj.finish("agent_timeout", f"solution step {i + 1} timed out")
            if result.exit_code != 0:
                tail = result.output.strip()[-400:]
                return traj.finish(
                    "agent_crash",
                    f"solution step {i + 1} ({describe_step(step)}) exited with "
                    f"code {result.exit_code}" + (f": {tail}" if tail else ""),
                )
        return traj.finish("completed")


@register("agent", "nop")
class NopAgent(Agent):
    """Does nothing: a task whose checks pass on an untouched workspace is broken."""

    type = "nop"

    def run(self, task: Task, sandbox: Sandbox) -> Trajectory:
        return self.new_trajectory(task).finish("completed")
