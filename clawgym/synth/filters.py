"""Quality filters for a synthesized task, each reported separately.

In order (the first failure stops the rest, later filters are reported as not run):
- `paths`: the instruction mentions every path a check grades;
- `oracle`: the reference solution scores 1.0 in a fresh sandbox;
- `determinism`: grading the reference's final workspace again gives the same verdict;
- `nop`: doing nothing scores at most `nop_max`;
- `tamper`: truncating every input and running the reference on what is left scores no more
  than doing nothing.
Schema and reference validity are checked before (the spec must load and compile to the same
task), and near-duplicates are removed across the whole set afterwards (see `dedup`).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rollout import Trial, run_trial
from ..task import Task, thaw
from ..tempdirs import make_temp
from ..verify import verify

_GLOB = re.compile(r"[*?\[]")


@dataclass
class FilterSettings:
    nop_max: float = 0.1
    tamper: bool = True
    determinism: bool = True
    paths_mentioned: bool = True

    @classmethod
    def from_spec(cls, data: dict[str, Any]) -> "FilterSettings":
        return cls(**{k: data[k] for k in ("nop_max", "tamper", "determinism", "paths_mentioned") if k in data})


@dataclass
class FilterReport:
    """Per-filter outcome: `results` maps a filter name to True/False or a score; `reason` says why it failed."""

    results: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.failed is None

    def fail(self, name: str, reason: str, value: Any = False) -> "FilterReport":
        self.results[name] = value
        self.failed, self.reason = name, reason
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed, **self.results}
        if self.failed:
            out.update(failed=self.failed, reason=self.reason)
        return out


def graded_paths(task: Task) -> list[str]:
    """Every workspace path a check reads, as written in the check."""
    out: list[str] = []
    for check in task.checks:
        for key in ("path", "paths"):
            value = check.get(key)
            for item in ([value] if isinstance(value, str) else list(value or [])):
                if isinstance(item, str) and item not in out:
                    out.append(item)
    return out


def mentioned(path: str, instruction: str) -> bool:
    """Whether the instruction names `path` (for a glob, the folder before the first wildcard)."""
    literal = _GLOB.split(path, maxsplit=1)[0] if _GLOB.search(path) else path
    literal = literal.rstrip("/")
    if not literal:
        return True  # a glob over the whole workspace names no path
    return literal in instruction


def _failing(verdict: dict[str, Any], passing: bool = False) -> str:
    chosen = [r for r in verdict.get("results", []) if (r["score"] >= 1 - 1e-9) == passing]
    text = "; ".join(r["name"] + ("" if passing else f": {r['reason']}") for r in chosen[:3])
    return text + (f"; and {len(chosen) - 3} more" if len(chosen) > 3 else "")


def _essence(verdict: Any) -> list[tuple]:
    return [(r.name, round(r.score, 9), r.reason) for r in verdict.results]


def run_filters(task: Task, settings: FilterSettings, *, sandbox: dict | None = None) -> FilterReport:
    """Run every filter on one compiled task and report each result."""
    report = FilterReport()
    if settings.paths_mentioned:
        missing = [p for p in graded_paths(task) if not mentioned(p, task.instruction)]
        if missing:
            return report.fail("paths", f"the instruction never mentions {', '.join(missing)}")
        report.results["paths"] = True
    keep = make_temp("synth-oracle")
    try:
        oracle = run_trial(Trial(task, {"type": "oracle"}), sandbox_spec=sandbox, keep_workspace=keep / "ws")
        rec = oracle.record
        if rec["status"] == "error":
            return report.fail("oracle", f"the reference solution could not run: {rec['error']}", None)
        if rec.get("outcome") in ("failed", "timeout") and rec.get("note"):
            return report.fail("oracle", f"the reference solution failed: {rec['note']}", rec["reward"])
        if rec["reward"] < 1 - 1e-9:
            return report.fail("oracle", f"the reference solution scores {rec['reward']:.3f} "
                                         f"(failing: {_failing(rec['verdict'])})", rec["reward"])
        report.results["oracle"] = rec["reward"]
        if settings.determinism:
            again = verify([dict(c) for c in thaw(task.checks)], workspace=keep / "ws", original_files=task.files,
                           executables=task.executables, task_dir=Path(task.task_dir) if task.task_dir else None,
                           params=thaw(task.params), trajectory=oracle.trajectory, sandbox=sandbox,
                           timeout=float(task.limits.get("verify_seconds", 300)))
            from ..verify import Verdict
            first = Verdict.from_dict(rec["verdict"])
            if _essence(again) != _essence(first):
                diff = [f"{a[0]}: {a[2]!r} then {b[2]!r}" for a, b in zip(_essence(first), _essence(again)) if a != b]
                return report.fail("determinism", "grading the same workspace twice differs: " + "; ".join(diff[:3]))
            report.results["determinism"] = True
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    nop = run_trial(Trial(task, {"type": "nop"}), sandbox_spec=sandbox).record
    if nop["status"] == "error":
        return report.fail("nop", f"the do-nothing trial could not run: {nop['error']}", None)
    if nop["reward"] > settings.nop_max + 1e-9:
        return report.fail("nop", f"doing nothing scores {nop['reward']:.3f} > {settings.nop_max} "
                                  f"(passing: {_failing(nop['verdict'], passing=True)})", nop["reward"])
    report.results["nop"] = nop["reward"]
    if settings.tamper:
        tamper = run_trial(Trial(task, {"type": "tamper"}), sandbox_spec=sandbox).record
        if tamper["status"] == "error":
            return report.fail("tamper", f"the tampering trial could not run: {tamper['error']}", None)
        if tamper["reward"] > nop["reward"] + 1e-9:
            return report.fail("tamper", f"truncating the inputs and answering for what is left scores "
                                         f"{tamper['reward']:.3f}, more than doing nothing ({nop['reward']:.3f}); "
                                         f"passing: {_failing(tamper['verdict'], passing=True)}", tamper["reward"])
        report.results["tamper"] = tamper["reward"]
    return report
