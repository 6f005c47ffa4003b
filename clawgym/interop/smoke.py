"""The importer's one-off run of each published grader on its untouched workspace, in a sandbox.

Graders are untrusted code, so they run in a grading sandbox (checks/grading.py), never on the
host. The graders of one dataset come from one source, which controls all of them anyway, so a
batch of them shares one sandbox: the launcher runs them one after the other, each with its own
workspace folder renamed into place at the mount and nothing of the one before left running. That
costs one sandbox and one interpreter start per batch instead of per grader. Each grader's output
is read as reward.sh reads it.
"""

from __future__ import annotations

import json
import posixpath
import secrets
from dataclasses import dataclass
from importlib.resources import files as package_files
from typing import Any

from ..checks.base import CheckContext
from ..checks.exec import parse_reward_sh
from ..checks.grading import (
    GRADER_OUTPUT_BYTES,
    GraderRun,
    frames,
    grader_run,
    grading_folder,
    put_private,
    run_in_sandbox,
)
from ..checks.script import place_scripts
from ..compile.workspace import write_files
from .clawgym_format import DEFAULT_MOUNT, Rejected, SourceTask

SMOKE_TIMEOUT = 30.0


@dataclass
class SmokeItem:
    """One grader to run: its source task and the files of its untouched workspace."""

    task: SourceTask
    files: dict[str, bytes]
    executables: set[str]


def smoke_batch(items: list[SmokeItem], timeout: float = SMOKE_TIMEOUT, confined: bool = False) -> list[Any]:
    """For each item, its score (float) or the Rejected that says why the grader cannot be used."""
    results: list[Any] = [None] * len(items)
    batchable = [i for i, it in enumerate(items) if it.task.mount == DEFAULT_MOUNT]
    for i in (i for i in range(len(items)) if i not in batchable):
        results[i] = _outcome(_run_single(items[i], timeout, confined), timeout)
    if batchable:
        runs = _run_batch([items[i] for i in batchable], timeout, confined)
        for i, run in zip(batchable, runs):
            if run is None:  # the batch ended early (a grader killed everything): this one runs alone
                run = _run_single(items[i], timeout, confined)
            results[i] = _outcome(run, timeout)
    return results


def _outcome(run: GraderRun, timeout: float) -> float | Rejected:
    if run.timed_out:
        return Rejected(f"grader did not finish within {timeout:g} s on the untouched workspace")
    if run.failure is not None:
        tail = " | ".join(ln.strip() for ln in run.stderr.strip().splitlines()[-3:])
        return Rejected(
            f"grader fails on the untouched workspace ({run.failure}"
            + (f"; stderr: {tail[:300]}" if tail else "")
            + "); fix reward/check.py"
        )
    score, reason, _ = parse_reward_sh(run.stdout)
    if "reward.sh scores 0" in reason or "reward.sh fails" in reason:
        return Rejected(f"grader output is not what reward.sh reads, so every rollout would score 0: {reason}")
    return score


def _env(item: SmokeItem, g: Any, n: int) -> dict[str, str]:
    env = {"PYTHONIOENCODING": "utf-8"}
    task = item.task
    if task.wants_payload():
        env["OPENCLAW_REWARD_PAYLOAD"] = put_private(
            g,
            f"payload-{n}.json",
            json.dumps(
                {
                    "task_id": task.task_id,
                    "user_query": task.query,
                    "metadata": task.metadata,
                    "final_message": "",
                    "transcript": [],
                }
            ),
        )
    return env


def _sandbox(confined: bool) -> dict[str, Any] | None:
    return {"type": "local", "own_cgroup": False} if confined else None


def _run_single(item: SmokeItem, timeout: float, confined: bool) -> GraderRun:
    from ..checks.grading import run_python_grader

    task = item.task
    ctx = CheckContext(
        workspace=task.folder,
        original=task.folder,
        task_dir=task.folder,
        params={},
        mount=task.mount,
        sandbox=_sandbox(confined),
    )
    with grading_folder(ctx, "import", files=(item.files, item.executables)) as g:
        script = f"{g.workspace_inside}/{place_scripts(task.folder / 'reward' / 'check.py', g.workspace, 'reward')}"
        return run_python_grader(ctx, g, script, [g.workspace_inside], timeout=timeout, env=_env(item, g, 0))


def _run_batch(items: list[SmokeItem], timeout: float, confined: bool) -> list[GraderRun | None]:
    """All `items` (same mount) in one sandbox; None for a grader the batch did not reach."""
    mount = DEFAULT_MOUNT
    parent = posixpath.dirname(mount)
    ctx = CheckContext(
        workspace=items[0].task.folder,
        original=items[0].task.folder,
        task_dir=items[0].task.folder,
        params={},
        mount=parent,
        sandbox=_sandbox(confined),
    )
    with grading_folder(ctx, "import", files=({}, set())) as g:
        plan = []
        for n, item in enumerate(items):
            folder = g.workspace / f"task-{n}"
            write_files(item.files, item.executables, folder)
            place_scripts(item.task.folder / "reward" / "check.py", folder, "reward")
            plan.append(
                {
                    "mount": mount,
                    "folder": f"{parent}/task-{n}",
                    "script": f"{mount}/reward/check.py",
                    "args": [mount],
                    "env": _env(item, g, n),
                    "timeout": timeout,
                }
            )
        launcher = put_private(
            g, "launch.py", package_files("clawgym.checks").joinpath("grader_launch.py").read_bytes()
        )
        nonce = "clawgym-frame-" + secrets.token_hex(16)
        res = run_in_sandbox(
            ctx,
            g,
            ["python3", "-I", launcher],
            timeout=timeout * len(items) + 30,
            stdin=nonce + "\n" + json.dumps(plan) + "\n",
            mount=parent,
            output_bytes=GRADER_OUTPUT_BYTES * len(items),
        )
    by_index = {f.get("index"): f for f in frames(res.output, nonce)}
    return [grader_run(by_index[n]) if n in by_index else None for n in range(len(items))]
