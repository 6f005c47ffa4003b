"""The `pinchbench_grade` check: a PinchBench task's automated grader, run as PinchBench runs it, in a grading sandbox.

The grader is the first python block of the task file's `## Automated Checks` (kept by the
importer as a file in the task folder). It runs in a fresh grading sandbox (checks/grading.py:
no network, a copy of the final workspace at the task's mount, the launcher's nonce frame and
audit hook) through `pinchbench_driver.py`, which calls `grade(transcript, workspace_path)` with
the transcript in OpenClaw's session-JSONL shape built from our trajectory (so every harness
gives the same shape) and the clock frozen at the trial's clock. The score is PinchBench's: the
unweighted mean of the numeric values returned (an empty dict or an exception scores 0); each
value is also shown as `automated.<name>` with weight 0, so the check's own score is exact.
"""

from __future__ import annotations

import json
import math
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from ..registry import register
from .base import Check, CheckContext, CheckFailure, CheckResult, as_list, check_rel, clip
from .grading import failed_grade, grading_folder, put_private, run_python_grader
from .openclaw_transcript import DEFAULT_CLOCK, parse_clock, session_events, session_jsonl
from .pinchbench_score import automated_score
from .script import restore_inputs

DRIVER = "pinchbench_driver.py"


@register("check", "pinchbench_grade")
class PinchbenchGrade(Check):
    """Run a PinchBench task's `grade(transcript, workspace_path)` in a grading sandbox; score = the mean of its values.

    The grader sees the trial's transcript as OpenClaw's session JSONL (parsed into a list, as the
    PinchBench runner gives it), the workspace path (a copy of the final workspace at the task's
    mount) and a clock frozen at `clock`. Its score is the unweighted mean of the numeric values it
    returns (booleans count 1 / 0); an empty dict, another return type, an exception, a timeout or
    a killed grader score 0. Without `grader` (an `llm_judge` task: the rubric alone grades it)
    the check scores 0, so such a task scores only what the judge gives.
    """

    type = "pinchbench_grade"
    schema = {
        "type": "object",
        "properties": {
            "grader": {
                "type": "string",
                "minLength": 1,
                "description": "The grader's Python source (defines `grade`), relative to the task spec's folder.",
            },
            "clock": {
                "type": "string",
                "default": DEFAULT_CLOCK,
                "description": "The time `datetime.now()`, `date.today()` and `time.time()` return inside the "
                "grader (ISO 8601): the task's `clock`, what the agent was told.",
            },
            "prompt": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "The user's message(s), put at the start of the transcript when the trajectory "
                "recorded no conversation (an agent that only ran commands).",
            },
            "restore": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "default": [],
                "description": "Paths or globs of fixture files put back from the pristine original before "
                "grading (files the prompt does not ask the agent to change), so rewriting the "
                "inputs a grader compares against does not pay.",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "default": 120,
                "description": "Seconds before the grader is killed (scores 0).",
            },
        },
    }

    def budget(self) -> float:
        return float(self.get("timeout")) + self.base_budget

    @classmethod
    def graded_with(cls, config: dict) -> list[str]:
        grader = config.get("grader")
        return [grader] if isinstance(grader, str) else []

    def _grader(self, ctx: CheckContext) -> Path:
        rel = check_rel(str(self.get("grader")), "task folder")
        if ctx.task_dir is None:
            raise CheckFailure("the pinchbench_grade check needs the task folder to find its grader")
        root = Path(ctx.task_dir).resolve()
        path = (root / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise CheckFailure(f"grader not found in the task folder: {rel}")
        return path

    def run(self, ctx: CheckContext) -> tuple:
        if not self.get("grader"):
            return 0.0, "no automated grader: an llm_judge task is scored by its rubric alone", {"subscores": []}
        grader, timeout, clock = self._grader(ctx), float(self.get("timeout")), str(self.get("clock"))
        try:
            parse_clock(clock)
        except ValueError:
            raise CheckFailure(f"clock {clock!r} is not an ISO 8601 time such as {DEFAULT_CLOCK}") from None
        with grading_folder(ctx) as g:
            restored = restore_inputs(
                g.workspace, ctx.original_folder(), [str(p) for p in as_list(self.get("restore"))]
            )
            workspace = g.workspace_inside
            events = session_events(
                ctx.trajectory, prompts=[str(p) for p in as_list(self.get("prompt"))], clock=clock, cwd=workspace
            )
            transcript = put_private(g, "transcript.jsonl", session_jsonl(events))
            source = put_private(g, "task/grade.py", grader.read_bytes())
            driver = put_private(g, DRIVER, package_files(__package__).joinpath(DRIVER).read_bytes())
            env = {
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONIOENCODING": "utf-8",
                "TZ": "UTC",
                "CLAWGYM_WORKSPACE": workspace,
            }
            run = run_python_grader(ctx, g, driver, [source, transcript, workspace, clock], timeout=timeout, env=env)
        details: dict[str, Any] = {"exit_code": run.exit_code, "transcript_events": len(events)}
        if run.workspace_code:
            details["ran_workspace_code"] = run.workspace_code
        if restored:
            details["restored"] = restored[:50]
        result = _result(run.stdout)
        values: dict[str, float] = {}
        if result is not None and isinstance(result.get("scores"), dict):  # kept for reading if it then failed
            values = {str(k): float(v) for k, v in result["scores"].items()}
            details["values"] = values
            details["subscores"] = [{"name": k, "score": v} for k, v in values.items()]
        if run.failure is not None or result is None:
            why = run.failure or "exited without writing its result"
            head = f"grader timed out after {timeout:g}s" if run.timed_out else f"grader did not finish ({why})"
            return failed_grade(head, why, details, stderr=run.stderr)
        if "error" in result:
            error = clip(str(result["error"]), 300)
            if not result.get("traceback"):  # it returned something other than a dict: no failure, a 0
                return 0.0, f"grade() failed, which PinchBench scores 0: {error}", details
            why = f"grade() raised {clip(error, 200)}"
            head = f"{why} (PinchBench scores an exception 0)"
            return failed_grade(head, why, details, traceback=str(result["traceback"]), stderr=run.stderr)
        if result.get("dropped"):
            details["dropped"] = list(result["dropped"])[:50]
        if not values:
            return 0.0, "grade() returned no numeric values (PinchBench scores an empty result 0)", details
        mean = automated_score(values)
        score = min(1.0, max(0.0, mean)) if math.isfinite(mean) else 0.0
        listed = ", ".join(f"{k}={v:g}" for k, v in list(values.items())[:12])
        return score, f"mean {mean:g} of {len(values)} value(s): {clip(listed, 400)}", details

    def expand(self, result: CheckResult) -> list[CheckResult]:
        """The check's exact score, then each value as `automated.<name>` with weight 0 (shown, not re-averaged)."""
        subs = (result.details or {}).get("subscores") or []
        if not subs:
            return [result]
        head = CheckResult(
            name=result.name,
            type=self.type,
            score=result.score,
            weight=result.weight,
            gate=result.gate,
            reason=result.reason,
            details={k: v for k, v in (result.details or {}).items() if k != "subscores"},
        )
        out = [head]
        for sub in subs:
            value = float(sub["score"])
            out.append(
                CheckResult(
                    name=f"automated.{sub['name']}"[:120],
                    type=self.type,
                    score=min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0,
                    weight=0.0,
                    gate=False,
                    reason=f"value {value:g} returned by grade()",
                )
            )
        return out


def _result(stdout: str) -> dict[str, Any] | None:
    """The driver's one JSON line (None when it wrote none)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None
