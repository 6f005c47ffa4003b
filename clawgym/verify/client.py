"""Grade a final workspace from outside: `verify` forks a fresh verifier from the server (see
`server.py`), sends it the request and reads the answer, so check code never shares a process
with anything the agent touched; `verify_task` does it with what a Task says about its grading.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Mapping

from ..checks.base import CheckResult
from .grade import Verdict, combine, grading_budget
from ..errors import InfraError, PrerequisiteError

if TYPE_CHECKING:
    from ..spec.task import Task




def verify(checks: list[dict], *, workspace: Path, original: Path | None = None, task_dir: Path | None,
           params: dict, trajectory: dict | None = None, sandbox: dict | None = None, timeout: float = 300,
           pass_threshold: float = 1.0, original_files: Mapping[str, bytes] | None = None,
           executables: Collection[str] = (), diff: bool = False, mount: str | None = None,
           workspace_problem: str | None = None) -> Verdict:
    """Run `checks` in a fresh process and combine the results.

    The process is forked from a verifier server that has the checks already imported (so a
    verification costs milliseconds, not an interpreter start, see `clawgym.verify.server`); it
    leads its own process group, killed with everything it started on timeout or cancellation.
    The pristine workspace is the `original` folder, or `original_files` ({path: bytes}) that the
    verifier writes itself; `diff=True` also returns the unified diff original → final in
    `Verdict.workspace_diff`, computed by the verifier too (both keep work off the runner).
    `mount` is where the workspace appeared inside the agent's sandbox (graders see their copy
    there). `workspace_problem` (e.g. the sandbox could not copy out an oversized workspace) fails
    the grade with that reason, as does a workspace past the grading limits (`safefs.GRADING_LIMITS`).
    Raises InfraError if the verifier cannot run, times out or answers garbage, and
    PrerequisiteError if a check needs something missing on this machine (e.g. a sandbox tool).
    """
    folders = [("workspace", workspace)] + ([("original workspace", original)] if original_files is None else [])
    for label, folder in folders:
        if folder is None or not Path(folder).is_dir():
            raise InfraError(f"cannot verify: the {label} folder {folder} does not exist")
    request: dict[str, Any] = {
        "checks": list(checks), "workspace": str(workspace), "original": str(original) if original else None,
        "task_dir": str(task_dir) if task_dir is not None else None, "params": params or {},
        "trajectory": trajectory, "sandbox": sandbox, "diff": diff, "mount": mount,
        "workspace_problem": workspace_problem, "budget_s": grading_budget(timeout)}
    if original_files is not None:
        request["original_files"] = {rel: base64.b64encode(data).decode("ascii")
                                     for rel, data in original_files.items()}
        request["executables"] = sorted(executables)
    try:
        payload = json.dumps(request, default=str)
    except (TypeError, ValueError) as e:
        raise InfraError(f"cannot send the checks to the verifier: {e}") from None
    from .. import trial_controls as control
    from .server import ask

    token = control.current().token
    token.check()
    answer = ask(payload.encode("utf-8"), timeout, token)
    if not isinstance(answer, dict):
        raise InfraError("the verifier answered something other than a JSON object")
    if answer.get("error"):
        cls = PrerequisiteError if answer.get("kind") == "prerequisite" else InfraError
        raise cls(str(answer["error"]))
    try:
        results = [CheckResult.from_dict(r) for r in answer["results"]]
    except (KeyError, TypeError, ValueError) as e:
        raise InfraError(f"the verifier sent malformed results: {e}") from None
    verdict = combine(results, pass_threshold=pass_threshold)
    if diff:
        verdict.workspace_diff = str(answer.get("diff") or "")
    return verdict


def verify_task(task: "Task", workspace: Path, *, trajectory: dict | None = None, sandbox: dict | None = None,
                original: Path | None = None, pass_threshold: float = 1.0, diff: bool = False,
                workspace_problem: str | None = None) -> Verdict:
    """`verify` with everything a Task says about its grading: its checks, params, task folder,
    mount, time budget and pristine files (written by the verifier, or the `original` folder)."""
    from ..spec.task import thaw

    pristine: dict[str, Any] = ({"original": original} if original is not None else
                                {"original_files": task.files, "executables": task.executables})
    return verify([dict(c) for c in thaw(task.checks)], workspace=workspace, **pristine, diff=diff,
                  task_dir=Path(task.task_dir) if task.task_dir else None, params=thaw(task.params),
                  trajectory=trajectory, sandbox=sandbox, pass_threshold=pass_threshold,
                  timeout=float(task.limits.get("verify_seconds", 300)), mount=task.mount,
                  workspace_problem=workspace_problem)
