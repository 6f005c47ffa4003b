"""The `harbor_tests` check: grade with a Harbor task's own verifier (`tests/test.sh`).

Harbor (the Terminal-Bench 2 harness) copies a task's `tests/` folder into the container after the
agent finishes, runs `bash /tests/test.sh` in the agent's working folder and reads the reward the
script writes to `/logs/verifier/reward.txt` (one float) or `/logs/verifier/reward.json` (named
metrics). This check does the same without Docker: a fresh sandbox (no network) over a throwaway
copy of the final workspace mounted at the task's WORKDIR, a copy of the tests folder read-only at
`/tests` and a writable `/logs` (holding `verifier/` and `agent/`). The tests folder is bound only
here, after the agent stopped, so the agent never sees it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ..files import safefs
from ..errors import ClawgymError
from ..registry import register
from .base import Check, CheckContext, CheckFailure, check_rel, clip
from .grading import failed_grade, grading_folder, process_failure, run_in_sandbox, signal_hint

MAX_REWARD_BYTES = 1_000_000
DEFAULT_WORKDIR = "/root/.openclaw/workspace"


@register("check", "harbor_tests")
class HarborTests(Check):
    """Run a Harbor verifier (`tests/test.sh`) in a fresh sandbox and score its reward file.

    The script runs as `bash /tests/test.sh` with cwd = `workdir`, where a copy of the final
    workspace is mounted; its folder is visible read-only at `/tests`, `/logs/verifier` is writable,
    and there is no network. Score = the float in `/logs/verifier/reward.txt`, else from
    `/logs/verifier/reward.json` its `reward` key or, without one, the mean of its metrics (every
    metric is listed in the details). No reward file or a value that is not a number scores 0, and
    so does a script that exits non-zero, is killed, times out or prints past its output cap,
    whatever reward it wrote; a reward outside [0, 1] is clamped.
    """

    type = "harbor_tests"
    schema = {
        "type": "object",
        "required": ["script"],
        "properties": {
            "script": {
                "type": "string",
                "minLength": 1,
                "description": "The Harbor verifier, relative to the task spec's folder (normally "
                "`tests/test.sh`); the folder holding it appears read-only at `/tests`.",
            },
            "workdir": {
                "type": "string",
                "pattern": "^/",
                "default": DEFAULT_WORKDIR,
                "description": "Where the copy of the final workspace is mounted and the script runs "
                "(the WORKDIR of the Harbor task's Dockerfile).",
            },
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "default": {},
                "description": "Extra environment variables for the script (e.g. the Dockerfile's ENV).",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 7200,
                "default": 600,
                "description": "Seconds before the script is killed (scores 0).",
            },
            "memory_mb": {
                "type": "integer",
                "minimum": 16,
                "default": 2048,
                "description": "Memory cap of the verifier's process tree.",
            },
        },
    }

    def budget(self) -> float:
        return float(self.get("timeout")) + self.base_budget

    @classmethod
    def graded_with(cls, config: dict) -> list[str]:
        """The whole tests folder (it all appears at /tests)."""
        script = config.get("script")
        return [str(Path(script).parent) or "."] if isinstance(script, str) else []

    def _script(self, ctx: CheckContext) -> Path:
        rel = check_rel(self.get("script"), "task folder")
        if ctx.task_dir is None:
            raise CheckFailure("the harbor_tests check needs the task folder to find its tests")
        root = Path(ctx.task_dir).resolve()
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            raise CheckFailure(f"Harbor tests escape the task folder: {rel}")
        if not path.is_file():
            raise CheckFailure(f"Harbor verifier not found: {rel}")
        return path

    def _workdir(self) -> str:
        from ..sandbox.base import check_mount

        try:
            workdir = check_mount(str(self.get("workdir")))
        except ClawgymError as e:
            raise CheckFailure(str(e)) from None
        if workdir.split("/")[1] in ("tests", "logs"):
            raise CheckFailure(f"workdir {workdir} would hide /tests or /logs")
        return workdir

    def run(self, ctx: CheckContext) -> tuple:
        script, workdir, timeout = self._script(ctx), self._workdir(), float(self.get("timeout"))
        with grading_folder(ctx, "harbor") as g:
            safefs.copy_tree(script.parent, g.private / "tests", limits=None)
            logs = g.root / "logs"
            for sub in ("verifier", "agent"):
                (logs / sub).mkdir(parents=True)
                os.chmod(logs / sub, 0o777)  # backends that cannot hand folders over (docker)
            os.chmod(logs, 0o755)
            env = {str(k): str(v) for k, v in (self.get("env") or {}).items()}
            res = run_in_sandbox(
                ctx,
                g,
                ["bash", f"/tests/{script.name}"],
                timeout=timeout,
                env=env,
                memory_mb=int(self.get("memory_mb")),
                mount=workdir,
                ro_binds=[[str(g.private / "tests"), "/tests"]],
                rw_binds=[[str(logs), "/logs"]],
            )
            try:
                found = _read_reward(logs)
            except CheckFailure as e:  # a link it planted: still a failed grade first if it failed
                found = (None, str(e), {})
            skipped = g.skipped
        output = res.output or ""
        details: dict[str, Any] = {"exit_code": res.exit_code, "output_tail": output[-2000:]}
        if skipped:
            details["skipped"] = skipped[:20]
        score, reason, metrics = found
        if metrics:
            details["subscores"] = [{"name": k, "score": v, "reason": ""} for k, v in metrics.items()]
        why = process_failure(res, timeout)
        if why is not None:  # a verifier that fails or is killed is a failed grade, whatever it wrote
            if score is not None:
                details["reward_written"] = score
            name, hint = Path(self.get("script")).name, signal_hint(res.exit_code)
            head = f"{self.get('script')} timed out after {timeout:g}s" if res.timed_out else f"{name} failed ({why})"
            return failed_grade(head, why + hint, details, output=output)
        if score is None:
            last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), "")
            return 0.0, reason + (f" (last output: {clip(last)})" if last else ""), details
        return score, reason, details


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _clamped(value: float, source: str) -> tuple[float, str]:
    if 0 <= value <= 1:
        return value, f"reward {value:g} ({source})"
    return min(1.0, max(0.0, value)), f"reward {value:g} ({source}) clamped to [0, 1]"


def _read_small(logs: Path, rel: str) -> str | None:
    """A reward file the verifier wrote (never through a link it may have planted); None if absent."""
    try:
        data = safefs.read_under(logs, rel, MAX_REWARD_BYTES)
    except ValueError as e:
        raise CheckFailure(str(e)) from None
    return None if data is None else data.decode("utf-8", "replace")


def _read_reward(logs: Path) -> tuple[float | None, str, dict[str, float]]:
    """(score or None, reason, metrics) from verifier/reward.txt / reward.json in the log folder."""
    text, raw = _read_small(logs, "verifier/reward.txt"), _read_small(logs, "verifier/reward.json")
    metrics: dict[str, float] = {}
    json_problem = None
    if raw is not None:
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and obj and all(_number(v) is not None for v in obj.values()):
            metrics = {str(k)[:100]: float(v) for k, v in list(obj.items())[:100]}
        else:
            json_problem = f"reward.json is not a JSON object of named numbers: {clip(raw, 80)!r}"
    if text is not None:
        value = _number(text.strip())
        if value is None:
            return None, f"reward.txt holds {clip(text.strip(), 60)!r}, not a number", metrics
        return (*_clamped(value, "reward.txt"), metrics)
    if json_problem:
        return None, json_problem, {}
    if metrics:
        if "reward" in metrics:
            return (*_clamped(metrics["reward"], "reward.json 'reward'"), metrics)
        mean = sum(metrics.values()) / len(metrics)
        listed = ", ".join(f"{k}={v:g}" for k, v in list(metrics.items())[:6]) + (", …" if len(metrics) > 6 else "")
        score, reason = _clamped(mean, f"mean of {len(metrics)} metrics in reward.json: {listed}")
        return score, reason, metrics
    return None, "the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)", {}
