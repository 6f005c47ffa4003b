"""Grade a final workspace from outside: `verify` forks a fresh verifier from the server (see
`server.py`), sends it the request and reads the answer, so check code never shares a process
with anything the agent touched; `verify_task` does it with what a Task says about its grading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Mapping

from ..checks.base import CheckResult
from .grade import Verdict, combine
from .request import VerifyRequest
from ..errors import InfraError, PrerequisiteError

if TYPE_CHECKING:
    from ..spec.task import Task


def verify(
    checks: list[dict],
    *,
    workspace: Path,
    original: Path | None = None,
    task_dir: Path | None,
    params: dict,
    trajectory: dict | None = None,
    sandbox: dict | None = None,
    timeout: float = 300,
    pass_threshold: float = 1.0,
    original_files: Mapping[str, bytes] | None = None,
    executables: Collection[str] = (),
    diff: bool = False,
    mount: str | None = None,
    workspace_problem: str | None = None,
) -> Verdict:
    """`send` a request given field by field (see `VerifyRequest` for what each means)."""
    return send(
        VerifyRequest(
            tuple(checks),
            workspace,
            params or {},
            task_dir,
            original,
            original_files,
            tuple(executables),
            trajectory,
            sandbox,
            timeout,
            pass_threshold,
            diff,
            mount,
            workspace_problem,
        )
    )


def send(request: VerifyRequest) -> Verdict:
    """Grade in a fresh process and combine the results.

    The process is forked from a verifier server that has the checks already imported (so a
    verification costs milliseconds, not an interpreter start, see `clawgym.verify.server`); when
    every check only reads files, one of the server's reused workers answers instead of a fresh
    fork. It leads its own process group, killed with everything it started on timeout or cancellation.
    The pristine files and the diff are handled by the verifier too (both keep work off the
    runner); a workspace past the grading limits (`safefs.GRADING_LIMITS`) fails the grade.
    Raises InfraError if the verifier cannot run, times out or answers garbage, and
    PrerequisiteError if a check needs something missing on this machine (e.g. a sandbox tool).
    """
    from .. import trial_controls as control

    request.check_folders()
    try:
        with control.cpu_turn():
            payload = json.dumps(request.to_wire(), default=str)
    except (TypeError, ValueError) as e:
        raise InfraError(f"cannot send the checks to the verifier: {e}") from None
    from ..checks import reads_only
    from .connection import ask

    token = control.current().token
    token.check()
    answer = ask(payload.encode("utf-8"), request.timeout, token, reuse=reads_only(request.checks))
    if not isinstance(answer, dict):
        raise InfraError("the verifier answered something other than a JSON object")
    if answer.get("error"):
        cls = PrerequisiteError if answer.get("kind") == "prerequisite" else InfraError
        raise cls(str(answer["error"]))
    try:
        results = [CheckResult.from_dict(r) for r in answer["results"]]
    except (KeyError, TypeError, ValueError) as e:
        raise InfraError(f"the verifier sent malformed results: {e}") from None
    verdict = combine(results, pass_threshold=request.pass_threshold)
    if request.diff:
        verdict.workspace_diff = str(answer.get("diff") or "")
    return verdict


def verify_task(
    task: "Task",
    workspace: Path,
    *,
    trajectory: dict | None = None,
    sandbox: dict | None = None,
    original: Path | None = None,
    pass_threshold: float = 1.0,
    diff: bool = False,
    workspace_problem: str | None = None,
) -> Verdict:
    """Grade `workspace` with everything a Task says about its grading (`VerifyRequest.for_task`)."""
    return send(
        VerifyRequest.for_task(
            task,
            workspace,
            original=original,
            trajectory=trajectory,
            sandbox=sandbox,
            pass_threshold=pass_threshold,
            diff=diff,
            workspace_problem=workspace_problem,
        )
    )
