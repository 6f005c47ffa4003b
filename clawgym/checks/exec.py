"""The `command` check (a shell command in a fresh sandbox) and helpers shared with `python` (script.py).

Both run in a fresh sandbox of their own over a throwaway copy of the final workspace (see
grading.py), so nothing they do reaches the host or changes what other checks grade. The copy
keeps regular files (holes too), folders and symlinks (as links); FIFOs, sockets and devices are
left out.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..registry import register
from .base import Check, CheckContext, as_list, short, strings
from .grading import failed_grade, grading_folder, process_failure, run_in_sandbox, signal_hint

MAX_OUTPUT = 1_000_000


_LIVE_GROUPS: set[int] = set()  # process groups of grading processes running now


def kill_live_groups() -> None:
    """Kill every grading process group still running (the verifier is being stopped)."""
    for pgid in list(_LIVE_GROUPS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


def run_process(argv: list[str], *, cwd: Path, env: dict, timeout: float) -> tuple[int | None, str, str, bool]:
    """(exit code, stdout, stderr, timed out); output capped, the whole process group killed at the end."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        _LIVE_GROUPS.add(proc.pid)
        timed_out = False
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out, code = True, None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            _LIVE_GROUPS.discard(proc.pid)
        return code, _tail(out), _tail(err), timed_out


def _tail(f: Any, limit: int = MAX_OUTPUT) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - limit))
    return f.read().decode("utf-8", "replace")


@register("check", "command")
class Command(Check):
    """Run a shell command in a fresh sandbox over a copy of the final workspace.

    Score = fraction of criteria met: the exit status, plus each `output_contains` string
    (output is stdout and stderr together). A command that exits with another status, is killed,
    times out or prints past its output cap scores 0, whatever its output contains.
    """

    type = "command"
    schema = {
        "type": "object",
        "required": ["run"],
        "properties": {
            "run": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "Shell command, run in the workspace copy inside the sandbox.",
            },
            "expect_exit": {
                "oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}],
                "default": 0,
                "description": "Accepted exit status(es).",
            },
            "output_contains": strings("String(s) the command output must contain."),
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "default": 60,
                "description": "Seconds before the command is killed (scores 0).",
            },
        },
    }

    def budget(self) -> float:
        return float(self.get("timeout")) + self.base_budget

    def run(self, ctx: CheckContext) -> tuple:
        timeout = float(self.get("timeout"))
        with grading_folder(ctx, "check") as g:
            res = run_in_sandbox(ctx, g, self.get("run"), timeout=timeout)
            skipped = g.skipped
        output = res.output or ""
        details: dict = {"exit_code": res.exit_code, "output_tail": output[-2000:]}
        if skipped:
            details["skipped"] = skipped[:20]
        want = [int(x) for x in as_list(self.get("expect_exit"))]
        why = process_failure(res, timeout, want)
        if why is not None:  # its output counts only if it exited as expected within its limits
            why += signal_hint(res.exit_code)
            head = f"command timed out after {timeout:g}s" if res.timed_out else f"command failed: {why}"
            return failed_grade(head, why, details, output=output)
        needles = [str(s) for s in as_list(self.get("output_contains"))]
        problems = [f"output lacks {short(s, 60)}" for s in needles if s not in output]
        if not problems:
            return (
                1.0,
                f"exit status {res.exit_code}" + (f", output has all {len(needles)} string(s)" if needles else ""),
                details,
            )
        return (1 + len(needles) - len(problems)) / (1 + len(needles)), "; ".join(problems[:3]), details


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return None
    try:
        f = float(text)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _subscores(items: Any) -> list[dict]:
    out = []
    for i, item in enumerate(items[:100] if isinstance(items, list) else []):
        if isinstance(item, dict):
            s = _number(item.get("score"))
            out.append(
                {
                    "name": str(item.get("name", f"#{i + 1}"))[:100],
                    "score": min(1.0, max(0.0, s)) if s is not None else 0.0,
                    "reason": str(item.get("reason", ""))[:500],
                }
            )
    return out


def parse_score(stdout: str, exit_code: int | None, *, strict: bool = False) -> tuple[float, str, dict]:
    """Apply the grading-script protocol to its stdout (see the `python` check). `strict`: a script
    that prints no score scores 0 whatever its exit status (as the published `reward.sh` reads it)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    value = _number(last)
    if value is not None:
        if not 0 <= value <= 1:
            return 0.0, f"script printed {short(last, 40)}, outside [0, 1]", {}
        return value, f"script score {value:g}", {}
    obj = None
    if last.startswith("{"):
        try:
            obj = json.loads(last)
        except (ValueError, RecursionError):
            obj = None
    if isinstance(obj, dict) and "score" in obj:
        score = _number(obj["score"])
        if score is None or not 0 <= score <= 1:
            return 0.0, f"script printed score {short(obj['score'], 40)}, not a number in [0, 1]", {}
        subs = _subscores(obj.get("checks"))
        reason = str(obj.get("reason") or "")[:1000] or f"script score {score:g}" + _list(subs)
        return score, reason, ({"subscores": subs} if subs else {})
    if isinstance(obj, dict) and obj and all(_number(v) is not None for v in obj.values()):
        subs = [{"name": str(k)[:100], "score": _number(v), "reason": ""} for k, v in list(obj.items())[:100]]
        bad = [s["name"] for s in subs if not 0 <= s["score"] <= 1]
        if bad:
            return 0.0, f"sub-score(s) outside [0, 1]: {', '.join(bad[:5])}", {"subscores": subs}
        score = sum(s["score"] for s in subs) / len(subs)
        return score, f"mean of {len(subs)} sub-scores" + _list(subs), {"subscores": subs}
    if strict:
        shown = f"last line: {short(last, 60)}" if last else "no output"
        return 0.0, f"script printed no score ({shown})", {}
    if exit_code == 0:
        return 1.0, "script exited 0", {}
    return 0.0, f"script exited {exit_code}", {}


def parse_reward_sh(stdout: str) -> tuple[float, str, dict]:
    """Score a grader's stdout exactly as the published `reward.sh` does.

    The whole output, stripped, is one JSON document: a non-empty object scores the mean of
    `float(v)` over all its values (booleans count 1.0 / 0.0, numeric strings their number, a
    `reward` key the grader computed is averaged like any other), a number scores itself, anything
    else 0.0. Output that is not one JSON document, or a value `float()` refuses, makes reward.sh's
    own parser fail, so under `set -o pipefail` the rollout scores 0: so here. The details list
    every value as a sub-score (`raw` holds what the grader printed); the score is clamped to [0, 1].
    """
    text = stdout.strip()
    if not text:
        return 0.0, "the grader printed nothing (reward.sh scores 0)", {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        first = text.splitlines()[0]
        return (
            0.0,
            (
                f"the grader's output is not one JSON document ({type(e).__name__}: {short(str(e), 60)}; "
                f"it starts {short(first, 60)}), so reward.sh scores 0"
            ),
            {},
        )
    if isinstance(data, dict) and data:
        subs = []
        for key, value in list(data.items()):
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                return 0.0, f"sub-score {short(key, 40)} is {short(value, 40)}, not a number (reward.sh fails: 0)", {}
            subs.append(
                {
                    "name": str(key)[:100],
                    "score": number,
                    "raw": value if isinstance(value, (bool, int, float)) else str(value)[:100],
                    "reason": "",
                }
            )
        mean = sum(s["score"] for s in subs) / len(subs)
        score = _clamped(mean)
        return (
            score,
            f"reward.sh: mean {mean:g} of {len(subs)} sub-scores" + _list(subs[:100]),
            {"subscores": subs[:100]},
        )
    if isinstance(data, (int, float)):
        return _clamped(float(data)), f"reward.sh score {float(data):g}", {}
    return 0.0, f"the grader printed {short(data, 40)} (neither an object nor a number: reward.sh scores 0)", {}


def _clamped(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def _list(subs: list[dict]) -> str:
    if not subs:
        return ""
    more = ", …" if len(subs) > 6 else ""
    return ": " + ", ".join(f"{s['name']}={s['score']:g}" for s in subs[:6]) + more
