"""In-process grading: run checks against a workspace and combine their results into a Verdict.

This is what a verifier process runs (`worker.py`); nothing here starts a process of its own
except the grading sandboxes of checks that execute code.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..checks.base import FAILED, MAX_REASON, CheckContext, CheckFailure, CheckResult
from ..errors import ClawgymError, InfraError, PrerequisiteError

if TYPE_CHECKING:
    from .judge import RubricResult


@dataclass
class Verdict:
    """The combined outcome: `reward` in [0, 1], `passed` if no gate failed and reward ≥ threshold."""

    reward: float
    passed: bool
    results: list[CheckResult] = field(default_factory=list)
    gate_failed: str | None = None
    error: str | None = None
    code_reward: float | None = None  # set by combine_hybrid when the task has a rubric
    rubric_score: float | None = None  # None when the rubric was not scored
    notes: list[str] = field(default_factory=list)
    workspace_diff: str | None = field(default=None, repr=False, compare=False)  # with verify(diff=True)

    def to_dict(self) -> dict:
        out = {
            "reward": self.reward,
            "passed": self.passed,
            "gate_failed": self.gate_failed,
            "error": self.error,
            "results": [r.to_dict() for r in self.results],
        }
        if self.code_reward is not None or self.notes:
            out.update(code_reward=self.code_reward, rubric_score=self.rubric_score, notes=list(self.notes))
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        return cls(
            reward=float(d["reward"]),
            passed=bool(d["passed"]),
            results=[CheckResult.from_dict(r) for r in d.get("results", [])],
            gate_failed=d.get("gate_failed"),
            error=d.get("error"),
            code_reward=d.get("code_reward"),
            rubric_score=d.get("rubric_score"),
            notes=list(d.get("notes") or []),
        )


def _clean_score(score: Any) -> float:
    try:
        s = float(score)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, s)) if math.isfinite(s) else 0.0


def combine(results: list[CheckResult], *, pass_threshold: float = 1.0) -> Verdict:
    """A failed gate gives reward 0; otherwise the weighted mean of scores (plain mean if all weights
    are 0, leaving out the checks that only test whether files exist: they earn nothing on their own).

    Each check whose grading process failed gets a note (it scored 0 whatever it printed)."""
    results = list(results)
    if not results:
        return Verdict(0.0, False, [], error="no checks to score")
    notes = failed_grader_notes(results)
    gate = next((r for r in results if r.gate and not r.passed), None)
    if gate is not None:
        return Verdict(0.0, False, results, gate_failed=gate.name, notes=notes)
    weights = [max(0.0, w) if math.isfinite(w := float(r.weight)) else 0.0 for r in results]
    scores = [_clean_score(r.score) for r in results]
    total = sum(weights)
    if total > 0:
        reward = sum(w * s for w, s in zip(weights, scores)) / total
    else:  # all weights 0: a plain mean, in which whether a file exists still earns nothing
        from ..checks import existence_only

        counted = [s for r, s in zip(results, scores) if not existence_only(r.type)]
        reward = sum(counted) / len(counted) if counted else 0.0
        if not counted:
            notes.append("every check only tests whether files exist, which earns no credit on its own: reward 0")
    reward = min(1.0, max(0.0, reward))
    return Verdict(reward, reward >= pass_threshold - 1e-9, results, notes=notes)


def failed_grader_notes(results: list[CheckResult]) -> list[str]:
    """One line per check whose grading process did not exit cleanly within its limits."""
    return [
        f"the grader of {r.name!r} failed ({r.grader_failed}): it scores 0 whatever it printed"
        for r in results
        if r.grader_failed is not None
    ]


def combine_hybrid(
    code: Verdict,
    rubric: "RubricResult | None",
    rubric_weight: float = 0.3,
    *,
    has_rubric: bool | None = None,
    pass_threshold: float = 1.0,
) -> Verdict:
    """Hybrid reward = (1 - w) * code reward + w * rubric score.

    A failed gate keeps reward 0 (the judge is not consulted). `rubric=None` with `has_rubric`
    (default: False) means the task has a rubric nobody scored: reward = code reward, and a note
    says so. `passed` means no gate failed and the hybrid reward reaches `pass_threshold`.
    """
    has_rubric = rubric is not None if has_rubric is None else (has_rubric or rubric is not None)
    if not has_rubric:
        return code
    out = Verdict(
        code.reward,
        code.passed,
        list(code.results),
        code.gate_failed,
        code.error,
        code_reward=code.reward,
        notes=list(code.notes),
    )
    if code.gate_failed is not None or code.error:
        out.notes.append(
            "rubric not scored ("
            + (f"gate {code.gate_failed!r} failed" if code.gate_failed else "the code checks gave no verdict")
            + ")"
        )
        return out
    if rubric is None:
        out.notes.append("rubric not scored (no judge configured)")
        out.passed = out.reward >= pass_threshold - 1e-9
        return out
    w = min(1.0, max(0.0, float(rubric_weight))) if math.isfinite(float(rubric_weight)) else 0.3
    seen = {r.name for r in out.results}
    for r in rubric.results:
        out.results.append(
            CheckResult(
                name=_unique(r.name, seen),
                type="rubric",
                score=r.score,
                weight=r.weight,
                gate=False,
                reason=r.reason,
                details=r.details,
            )
        )
    out.rubric_score = _clean_score(rubric.score)
    out.reward = min(1.0, max(0.0, (1 - w) * code.reward + w * out.rubric_score))
    out.passed = out.reward >= pass_threshold - 1e-9
    return out


def grading_budget(timeout: float) -> float:
    """Seconds the checks may take within a verifier `timeout`: the rest is left for starting the
    verifier, copying and the diff, so a slow grader is a failed check, never a verifier timeout."""
    return max(0.5, timeout - min(15.0, 0.25 * timeout))


class CheckTimeout(Exception):
    """A check ran past its time budget."""


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise CheckTimeout after `seconds` (main thread on POSIX only; otherwise no limit)."""
    usable = seconds and hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise CheckTimeout(f"check timed out after {seconds:g}s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _unique(name: str, seen: set[str]) -> str:
    out, n = name, 1
    while out in seen:
        n += 1
        out = f"{name} #{n}"
    seen.add(out)
    return out


# checks that run a process (skipped once a gate has failed; their timeout is cut to the deadline)
EXECUTING_CHECKS = ("command", "python", "harbor_tests", "pinchbench_grade")


def _executes(config: Any) -> bool:
    return isinstance(config, dict) and str(config.get("type")) in EXECUTING_CHECKS


def _run_one(
    config: Any,
    i: int,
    ctx: CheckContext,
    check_timeout: float | None,
    failed_gate: str | None,
    deadline: float | None = None,
) -> list[CheckResult]:
    """Run one check; a check that raises scores 0 with the error as reason. Most checks give one
    result; a check with named parts (a grading script's sub-scores) may give several."""
    from ..checks import check_class, weight_of

    ctype = str(config.get("type", "?")) if isinstance(config, dict) else "?"
    name = str(config.get("name") or f"{ctype} #{i + 1}") if isinstance(config, dict) else f"check #{i + 1}"
    weight = weight_of(config)
    gate = bool(config.get("gate", False)) if isinstance(config, dict) else False
    details, check = None, None
    t0 = time.monotonic()
    try:
        check = check_class(ctype)(config)
        name, weight, gate = check.name, check.weight, check.gate
        if failed_gate is not None and ctype in EXECUTING_CHECKS:
            raise CheckFailure(f"not run: the gate '{failed_gate}' failed, so the reward is 0 either way")
        if deadline is not None and ctype in EXECUTING_CHECKS and "timeout" in check.schema["properties"]:
            # a grader that hangs must time out as a failed grade before the verifier's own budget runs out
            left = max(0.5, deadline - time.monotonic())
            if float(check.get("timeout")) > left:
                check.config["timeout"] = round(left, 1)
        if deadline is not None and check_timeout is not None:  # slow reading checks too end as failed checks
            check_timeout = max(0.5, min(check_timeout, deadline - time.monotonic()))
        budget = None if check_timeout is None else check_timeout + max(0.0, check.budget() - check.base_budget)
        with _time_limit(budget):
            out = check.run(ctx)
        score, reason = _clean_score(out[0]), str(out[1])
        details = out[2] if len(out) > 2 else None
    except (InfraError, PrerequisiteError):
        raise
    except CheckFailure as e:
        score, reason = 0.0, str(e)
    except ClawgymError as e:
        score, reason = 0.0, e.format()
    except RecursionError:
        score, reason = 0.0, "check failed: input nested too deeply"
    except Exception as e:  # noqa: BLE001 - hostile content must never crash the verifier
        score, reason = 0.0, f"check raised {type(e).__name__}: {e}"
    details = dict(details or {})
    details["duration_s"] = round(time.monotonic() - t0, 4)
    try:
        weight = float(weight)
    except (TypeError, ValueError):
        weight = 1.0
    if details.get(FAILED) is not None:  # a grader that failed never pays, whatever it reported
        score = 0.0
    result = CheckResult(
        name=name, type=ctype, score=score, weight=weight, gate=gate, reason=reason[:MAX_REASON], details=details
    )
    if check is None:
        return [result]
    parts = check.expand(result)
    return failed_parts(result, parts) if result.grader_failed is not None else parts


def failed_parts(result: CheckResult, parts: list[CheckResult]) -> list[CheckResult]:
    """The results of a check whose grader failed: its own 0 first, carrying the whole weight (and any
    gate) of `parts`, what its expansion would have given, then the parts it reported, with weight 0
    and no gate, for reading. So the failure costs exactly the share the grader was worth, and a gate
    on one of its sub-scores counts as failed."""
    head = CheckResult(
        name=result.name,
        type=result.type,
        score=0.0,
        weight=sum(w for p in parts if math.isfinite(w := float(p.weight)) and w > 0),
        gate=any(p.gate for p in parts),
        reason=result.reason,
        details=dict(result.details or {}),
    )
    rest = [p for p in parts if p is not result and p.name != result.name]
    if rest:
        head.details = {k: v for k, v in (head.details or {}).items() if k != "subscores"}
    for p in rest:
        p.weight, p.gate, p.details = 0.0, False, None
        p.reason = (p.reason or "sub-score") + " (not counted: the grader failed)"
    return [head, *rest]


def run_checks(
    checks: list[dict], ctx: CheckContext, *, check_timeout: float | None = 60.0, deadline: float | None = None
) -> list[CheckResult]:
    """Run every check in this process. A check that raises scores 0 with the error as reason;
    only InfraError and PrerequisiteError (the machinery, not the agent) propagate.

    `check_timeout` bounds each non-executing check (executing ones get their own timeout on top).
    Non-executing checks run first; once a gate has failed the reward is 0, so executing checks
    (command, python) are then not run (score 0, reason "not run: ..."); the others always run,
    for their sub-scores. Results come back in the spec's order. With `deadline` (a
    `time.monotonic()` value) an executing check's timeout is cut to what is left before it, so a
    grader that hangs scores 0 instead of making the whole verification time out.
    """
    # Non-executing checks run first (cheap), then executing ones (a process each), which are not
    # run once any gate has failed; results keep the spec's order and names.
    order = sorted(range(len(checks)), key=lambda i: _executes(checks[i]))
    slots: list[list[CheckResult]] = [[] for _ in checks]
    failed_gate: str | None = None
    for i in order:
        slots[i] = _run_one(checks[i], i, ctx, check_timeout, failed_gate, deadline)
        for result in slots[i]:
            if result.gate and result.score < 1 - 1e-9 and failed_gate is None:
                failed_gate = result.name
    results, seen = [], set()
    for r in (r for slot in slots for r in slot):
        r.name = _unique(r.name, seen)
        results.append(r)
    return results
