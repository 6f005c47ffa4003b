"""The `python` check: run a grading script from the task folder against a copy of the final workspace.

Besides the plain protocol (a float, or a JSON object of named sub-scores, as the last stdout
line), it carries what graders written for other harnesses need:

- `args` may name the workspace copy as `${CLAWGYM_WORKSPACE}` (published ClawGym graders take
  the workspace path as their first argument);
- `copy_to` places the script's folder inside the workspace copy first (the published format
  copies `reward/` into the workspace after the agent stops) and runs the script from there;
- `restore` puts pristine copies of input files back before grading, so an agent that rewrites
  or truncates the inputs a grader recomputes its answers from gains nothing;
- `subscores` spreads the script's named sub-scores into the verdict as separate results, with
  `aggregate: mean` reproducing an unweighted average exactly, or `weighted` with per-name
  weights and gates;
- `payload` writes the JSON file a chat-style grader reads from `OPENCLAW_REWARD_PAYLOAD`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..files import safefs
from ..registry import register
from .base import Check, CheckContext, CheckFailure, CheckResult, as_list, check_rel, glob_regex
from .exec import parse_reward_sh, parse_score
from .grading import failed_grade, grading_folder, put_private, run_python_grader

_MAGIC = re.compile(r"[*?\[]")


@register("check", "python")
class Python(Check):
    """Run a grading script from the task folder in a fresh sandbox over a copy of the final workspace.

    The script runs with the sandbox's `python3`, no network, cwd = the workspace copy at the
    task's mount, and env CLAWGYM_WORKSPACE (that copy), CLAWGYM_ORIGINAL (the original files,
    read-only), CLAWGYM_PARAMS (JSON), CLAWGYM_TASK_DIR (a read-only copy of the script's folder)
    and, if recorded, CLAWGYM_TRAJECTORY (a JSON file). Its last non-empty stdout line is read as:
    a float in [0, 1]; or a JSON object `{"score": s, "reason": "...", "checks": [{"name", "score",
    "reason"}]}`; or a JSON object of named sub-scores `{"name": s, ...}` (score = their mean).
    Otherwise exit status 0 scores 1. A script that exits non-zero, is killed, times out or prints
    past its output cap scores 0 whatever it printed: its sub-scores are shown with weight 0 and
    the check's own 0 carries the weight they would have had.
    """

    type = "python"
    schema = {
        "type": "object",
        "required": ["script"],
        "properties": {
            "script": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "Grading script, relative to the task spec's folder.",
            },
            "args": {
                "type": "array",
                "items": {"type": "string", "x-template": "text"},
                "default": [],
                "description": "Extra command-line arguments for the script; `${CLAWGYM_WORKSPACE}` and "
                "`${CLAWGYM_ORIGINAL}` stand for the workspace copies' paths.",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "default": 120,
                "description": "Seconds before the script is killed (scores 0).",
            },
            "copy_to": {
                "type": "string",
                "minLength": 1,
                "description": "Copy the script's folder into the workspace copy at this relative path "
                "and run the script from there (as the published ClawGym format places "
                "`reward/` in the workspace after the agent stops).",
            },
            "restore": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "default": [],
                "description": "Paths or globs of input files put back from the pristine original "
                "before grading (a file the agent deleted comes back too), so rewriting "
                "the inputs a grader recomputes its answers from does not pay. Leave out "
                "files the instruction asks the agent to change.",
            },
            "subscores": {
                "type": "object",
                "additionalProperties": False,
                "description": "Show the script's named sub-scores as separate results in the verdict.",
                "properties": {
                    "aggregate": {
                        "enum": ["mean", "weighted"],
                        "default": "mean",
                        "description": "`mean`: the sub-scores share this check's weight equally, so a "
                        "task graded by this check alone gets exactly the unweighted mean (the "
                        "published `reward.sh`) and the check weighs what its `weight` says "
                        "however many sub-scores it prints; `weighted`: they share it in "
                        "proportion to `weights[name]`.",
                    },
                    "weights": {
                        "type": "object",
                        "additionalProperties": {"type": "number", "minimum": 0},
                        "default": {},
                        "description": "Weight per sub-score name (default 1).",
                    },
                    "gates": {
                        "type": "array",
                        "items": {"type": "string"},
                        "default": [],
                        "description": "Sub-scores that must be 1 (or the reward is 0); a gate missing "
                        "from the script's output counts as failed.",
                    },
                },
            },
            "require_score": {
                "type": "boolean",
                "default": False,
                "description": "A script that prints no score scores 0 even when it exits 0 (with "
                "`protocol: last-line`).",
            },
            "protocol": {
                "enum": ["last-line", "reward.sh"],
                "default": "last-line",
                "description": "How the script's stdout is read. `last-line`: the last non-empty line, as "
                "above. `reward.sh`: exactly as the published ClawGym `reward.sh` reads "
                "`check.py`: the whole output is one JSON document (indented or not); an "
                "object scores the mean of `float(v)` over all its values (booleans 1/0, "
                "a `reward` key included), a number itself, anything else 0. Each value is "
                "also shown as a sub-score of weight 0, so the reward is exactly "
                "reward.sh's (`subscores.aggregate: weighted` re-weights them instead).",
            },
            "payload": {
                "type": "object",
                "description": "Write a JSON file with these keys plus `final_message` and `transcript` "
                "(from the recorded trajectory) and name it in OPENCLAW_REWARD_PAYLOAD, "
                "as chat-style published graders expect.",
            },
        },
    }

    def budget(self) -> float:
        return float(self.get("timeout")) + self.base_budget

    @classmethod
    def graded_with(cls, config: dict) -> list[str]:
        """The script, or its whole folder when `copy_to` places the folder in the workspace."""
        script = config.get("script")
        if not isinstance(script, str):
            return []
        return [str(Path(script).parent) or "."] if config.get("copy_to") else [script]

    def _script(self, ctx: CheckContext) -> Path:
        rel = check_rel(self.get("script"), "task folder")
        if ctx.task_dir is None:
            raise CheckFailure("the python check needs the task folder to find its script")
        root = Path(ctx.task_dir).resolve()
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            raise CheckFailure(f"grading script escapes the task folder: {rel}")
        if not path.is_file():
            raise CheckFailure(f"grading script not found: {rel}")
        return path

    def run(self, ctx: CheckContext) -> tuple:
        script, timeout = self._script(ctx), float(self.get("timeout"))
        task_root = Path(ctx.task_dir).resolve()
        with grading_folder(ctx) as g:
            restored = restore_inputs(
                g.workspace, ctx.original_folder(), [str(p) for p in as_list(self.get("restore"))]
            )
            safefs.copy_tree(ctx.original_folder(), g.private / "original")
            rel_folder = script.parent.relative_to(task_root).as_posix()
            if self.get("copy_to"):
                inside = place_scripts(script, g.workspace, str(self.get("copy_to")))
                script_inside = f"{g.workspace_inside}/{inside}"
            else:
                safefs.copy_tree(script.parent, g.private / "task" / rel_folder, limits=None)
                script_inside = g.inside("task", *([rel_folder] if rel_folder != "." else []), script.name)
            workspace = g.workspace_inside
            env = {
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONIOENCODING": "utf-8",
                "CLAWGYM_WORKSPACE": workspace,
                "CLAWGYM_ORIGINAL": g.inside("original"),
                "CLAWGYM_TASK_DIR": g.inside("task"),
                "CLAWGYM_PARAMS": json.dumps(ctx.params or {}, default=str),
            }
            if ctx.trajectory is not None:
                env["CLAWGYM_TRAJECTORY"] = put_private(g, "trajectory.json", json.dumps(ctx.trajectory, default=str))
            if self.get("payload") is not None:
                env["OPENCLAW_REWARD_PAYLOAD"] = put_private(
                    g, "reward_payload.json", _payload(dict(self.get("payload")), ctx.trajectory)
                )
            names = {"${CLAWGYM_WORKSPACE}": workspace, "${CLAWGYM_ORIGINAL}": g.inside("original")}
            args = [names.get(str(a), str(a)) for a in as_list(self.get("args"))]
            run = run_python_grader(ctx, g, script_inside, args, timeout=timeout, env=env)
            skipped = g.skipped
        details: dict = {"exit_code": run.exit_code}
        if run.workspace_code:  # the grader imported the agent's code: that code could steer its output
            details["ran_workspace_code"] = run.workspace_code
        if skipped:
            details["skipped"] = skipped[:20]
        if restored:
            details["restored"] = restored[:50]
        if self.get("protocol") == "reward.sh":
            score, reason, extra = parse_reward_sh(run.stdout)
        else:
            score, reason, extra = parse_score(run.stdout, run.exit_code, strict=bool(self.get("require_score")))
        details.update(extra)
        if run.failure is not None:  # what a grader that fails printed is kept for reading, never scored
            head = "grading script " + (f"timed out after {timeout:g}s" if run.timed_out else f"failed ({run.failure})")
            return failed_grade(head, run.failure, details, stderr=run.stderr, stdout=run.stdout)
        return score, reason, details

    def expand(self, result: CheckResult) -> list[CheckResult]:
        """One result per sub-score when `subscores` is set and the script printed named sub-scores.

        With `protocol: reward.sh` (and no `weighted` aggregate) the check's own result keeps the
        exact reward.sh score and the sub-scores follow with weight 0, visible but not re-averaged.
        """
        config = self.get("subscores")
        subs = (result.details or {}).get("subscores")
        if config is None or not subs:
            return [result]
        weighted = config.get("aggregate", "mean") == "weighted"
        exact = self.get("protocol") == "reward.sh" and not weighted
        weights = config.get("weights") or {}
        gates = [str(g) for g in config.get("gates") or []]
        out = (
            [
                CheckResult(
                    name=result.name,
                    type=self.type,
                    score=result.score,
                    weight=result.weight,
                    gate=result.gate,
                    reason=result.reason,
                )
            ]
            if exact
            else []
        )
        raw = [float(weights.get(sub["name"], 1.0)) if weighted else 1.0 for sub in subs]
        total = sum(raw)
        for sub, part in zip(subs, raw):
            # the sub-scores share the check's weight: it weighs what its `weight` says however many it prints
            share = 0.0 if exact or total <= 0 else part / total
            out.append(
                CheckResult(
                    name=f"{result.name}: {sub['name']}",
                    type=self.type,
                    score=min(1.0, max(0.0, float(sub["score"]))) if sub["score"] == sub["score"] else 0.0,
                    weight=result.weight * share,
                    gate=(result.gate and not exact) or sub["name"] in gates,
                    reason=sub.get("reason") or f"sub-score of {result.name}",
                )
            )
        printed = {s["name"] for s in subs}
        for gate in gates:
            if gate not in printed:
                out.append(
                    CheckResult(
                        name=f"{result.name}: {gate}",
                        type=self.type,
                        score=0.0,
                        weight=0.0,
                        gate=True,
                        reason="gate sub-score missing from the script's output",
                    )
                )
        if out:
            out[0].details = {k: v for k, v in (result.details or {}).items() if k != "subscores"}
        return out


def restore_inputs(work: Path, original: Path, patterns: list[str]) -> list[str]:
    """Replace what matches `patterns` in `work` by the pristine files of `original`; returns what was restored."""
    if not patterns:
        return []
    files = sorted(e.rel for e in safefs.walk(original, limits=None) if e.kind == "file")
    chosen: list[str] = []
    for pattern in patterns:
        rel = check_rel(pattern.strip().rstrip("/"), "workspace")
        if _MAGIC.search(rel):
            rx = glob_regex(rel)
            chosen += [f for f in files if rx.match(f)]
        else:
            chosen += [f for f in files if f == rel or f.startswith(rel + "/")]
    restored = []
    for rel in dict.fromkeys(chosen):
        target = work / rel
        for parent in [*reversed(Path(rel).parents)][1:]:  # a file the agent put where a folder was
            p = work / parent
            if p.is_symlink() or (p.exists() and not p.is_dir()):
                p.unlink()
        safefs.remove_tree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(original / rel, target)
        restored.append(rel)
    return restored


def place_scripts(script: Path, work: Path, rel: str) -> str:
    """Copy the script's folder to `work/rel` (replacing whatever the agent put there); the script's
    path relative to `work`."""
    rel = check_rel(rel.strip().rstrip("/"), "workspace")
    parts = rel.split("/")
    for i in range(1, len(parts)):  # a link or file the agent put where a parent folder goes
        p = work.joinpath(*parts[:i])
        if p.is_symlink() or (os.path.lexists(p) and not p.is_dir()):
            p.unlink()
    target = work / rel
    safefs.remove_tree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    safefs.copy_tree(script.parent, target, limits=None)
    return f"{rel}/{script.name}"


def _final_message(trajectory: dict | None) -> str:
    if not trajectory:
        return ""
    if trajectory.get("final_message"):
        return str(trajectory["final_message"])
    for m in reversed(trajectory.get("messages") or []):
        if m.get("role") == "assistant" and m.get("content"):
            content = m["content"]
            return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ""


def _payload(fields: dict[str, Any], trajectory: dict | None) -> str:
    """The JSON a chat-style published grader reads from OPENCLAW_REWARD_PAYLOAD."""
    payload = {
        **fields,
        "final_message": _final_message(trajectory),
        "transcript": list((trajectory or {}).get("messages") or []),
    }
    return json.dumps(payload, ensure_ascii=False, default=str)
