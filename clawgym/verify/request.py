"""`VerifyRequest`: everything a verifier needs to grade one final workspace, built from a Task
(`VerifyRequest.for_task`) or field by field, and its wire form for the verifier process."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import InfraError
from .grade import grading_budget

if TYPE_CHECKING:
    from ..spec.task import Task


@dataclass(frozen=True)
class VerifyRequest:
    """What to grade and against what.

    The pristine workspace is the `original` folder, or `original_files` ({path: bytes}) that the
    verifier writes itself. `mount` is where the workspace appeared inside the agent's sandbox
    (graders see their copy there). `workspace_problem` (e.g. the sandbox could not copy out an
    oversized workspace) fails the grade with that reason. `diff=True` also asks for the unified
    diff original → final.
    """

    checks: tuple[Mapping[str, Any], ...]
    workspace: Path
    params: Mapping[str, Any] = field(default_factory=dict)
    task_dir: Path | None = None
    original: Path | None = None
    original_files: Mapping[str, bytes] | None = None
    executables: tuple[str, ...] = ()
    trajectory: Mapping[str, Any] | None = None
    sandbox: Mapping[str, Any] | None = None
    timeout: float = 300.0
    pass_threshold: float = 1.0
    diff: bool = False
    mount: str | None = None
    workspace_problem: str | None = None

    @classmethod
    def for_task(
        cls, task: "Task", workspace: Path, *, original: Path | None = None, **options: Any
    ) -> "VerifyRequest":
        """A request with everything a Task says about its grading: its checks, params, task folder,
        mount, time budget and pristine files (or the `original` folder). `options` are the other fields
        (trajectory, sandbox, pass_threshold, diff, workspace_problem)."""
        from ..spec.task import thaw

        pristine: dict[str, Any] = (
            {"original": original}
            if original is not None
            else {"original_files": task.files, "executables": tuple(sorted(task.executables))}
        )
        return cls(
            checks=tuple(dict(c) for c in thaw(task.checks)),
            workspace=workspace,
            params=thaw(task.params),
            task_dir=Path(task.task_dir) if task.task_dir else None,
            timeout=float(task.limits.get("verify_seconds", 300)),
            mount=task.mount,
            **pristine,
            **options,
        )

    def with_(self, **changes: Any) -> "VerifyRequest":
        return replace(self, **changes)

    def check_folders(self) -> None:
        """Raise InfraError when the workspace (or the original folder, when given) is missing."""
        folders = [("workspace", self.workspace)] + (
            [("original workspace", self.original)] if self.original_files is None else []
        )
        for label, folder in folders:
            if folder is None or not Path(folder).is_dir():
                raise InfraError(f"cannot verify: the {label} folder {folder} does not exist")

    def to_wire(self) -> dict[str, Any]:
        """The JSON object the verifier process reads (see `worker.py`); the trajectory only when
        a check reads it."""
        from ..checks import reads_trajectory

        out: dict[str, Any] = {
            "checks": [dict(c) for c in self.checks],
            "workspace": str(self.workspace),
            "original": str(self.original) if self.original else None,
            "task_dir": str(self.task_dir) if self.task_dir is not None else None,
            "params": dict(self.params or {}),
            "trajectory": self.trajectory if reads_trajectory(self.checks) else None,
            "sandbox": self.sandbox,
            "diff": self.diff,
            "mount": self.mount,
            "workspace_problem": self.workspace_problem,
            "budget_s": grading_budget(self.timeout),
        }
        if self.original_files is not None:
            out["original_files"] = {
                rel: base64.b64encode(data).decode("ascii") for rel, data in self.original_files.items()
            }
            out["executables"] = sorted(self.executables)
        return out
