"""Quality filters for a synthesized task, each reported separately.

In order (the first failure stops the rest, later filters are reported as not run):
- `paths`: the instruction mentions every path a check grades;
- `oracle`: the reference solution scores 1.0 in a fresh sandbox;
- `determinism`: grading the reference's final workspace again gives the same verdict;
- `nop`: doing nothing scores at most `nop_max`;
- `tamper`: truncating every input and running the reference on what is left scores no more
  than doing nothing. When a gate on the inputs (`unchanged`) already fails on the truncated
  inputs, the attack scores 0 whatever it writes, so that is recorded without running it;
- `lazy`: every lazy agent (`agent/lazy.py`: empty or skeleton outputs, the instruction's
  numbers, constant guesses, the unfiltered input, the first rows, values on the wrong rows)
  scores at most `lazy_max`;
- `mutations` (`mutations/`): removing any declared step of the reference changes what is graded,
  a check named for a property (in order, exactly, every, untouched, the heading) fails when only
  that property is broken, and the correct answer written in another reasonable format the
  instruction did not fix (column order, quoting, 116 or 116.0, JSON layout) still scores 1.0.
Schema and reference validity are checked before (the spec must load and compile to the same
task), and near-duplicates are removed across the whole set afterwards (see `dedup`).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import safefs
from ..agent import make_agent
from ..agent import lazy as lazy_agents
from .mutations import mutation_problems
from ..agent.tamper import input_files, truncate_inputs
from ..errors import InfraError
from ..run.trial import sandbox_limits
from ..sandbox import create_sandbox
from ..sandbox.host import worker_sandbox
from ..spec.task import Task, thaw
from ..files.tempdirs import make_temp
from ..records.trajectory import Trajectory
from ..checks.base import CheckContext
from ..verify import Verdict, combine, run_checks, verify_task
from ..compile.workspace import materialize

_GLOB = re.compile(r"[*?\[]")


@dataclass
class FilterSettings:
    nop_max: float = 0.1
    tamper: bool = True
    determinism: bool = True
    paths_mentioned: bool = True
    lazy: bool = True
    mutations: bool = True  # every declared step and check name is real; other reasonable formats pass
    lazy_max: float = lazy_agents.MAX
    trials: bool = True  # the graded filters (oracle, determinism, nop, tamper, lazy); off only to time generation

    @classmethod
    def from_spec(cls, data: dict[str, Any]) -> "FilterSettings":
        names = ("nop_max", "tamper", "determinism", "paths_mentioned", "lazy", "lazy_max", "mutations")
        return cls(**{k: data[k] for k in names if k in data})


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
            for item in [value] if isinstance(value, str) else list(value or []):
                if isinstance(item, str) and item not in out:
                    out.append(item)
    return out


def mentioned(path: str, instruction: str, inputs: frozenset[str] = frozenset()) -> bool:
    """Whether the instruction names `path` (for a glob, the folder before the first wildcard). A
    file the request moves counts as named when the folder it goes into is named and its name is
    an input file's (`inputs`: the input files' base names)."""
    literal = _GLOB.split(path, maxsplit=1)[0] if _GLOB.search(path) else path
    literal = literal.rstrip("/")
    if not literal:
        return True  # a glob over the whole workspace names no path
    if literal in instruction:
        return True
    folder, _, base = literal.rpartition("/")
    return bool(folder) and base in inputs and f"{folder}/" in instruction


def unnamed_paths(task: Task) -> list[str]:
    """The graded paths the instruction does not name (the `paths` filter)."""
    inputs = frozenset(p.rsplit("/", 1)[-1] for p in input_files(task))
    return [p for p in graded_paths(task) if not mentioned(p, task.instruction, inputs)]


def failing_checks(verdict: dict[str, Any], passing: bool = False) -> str:
    chosen = [r for r in verdict.get("results", []) if (r["score"] >= 1 - 1e-9) == passing]
    text = "; ".join(r["name"] + ("" if passing else f": {r['reason']}") for r in chosen[:3])
    return text + (f"; and {len(chosen) - 3} more" if len(chosen) > 3 else "")


def verdict_essence(verdict: Any) -> list[tuple]:
    return [(r.name, round(r.score, 9), r.reason) for r in verdict.results]


class FilterTrials:
    """Filter trials of one task in one work folder: a pristine copy made once, graded against by
    every verification, and one workspace per agent (no trajectory or diff files are written).

    Workspaces that only this code touched (doing nothing; truncated inputs before anything runs)
    are graded in this process; a workspace the reference solution ran in is graded by a fresh
    verifier process, as in any run.
    """

    def __init__(self, task: Task, sandbox: dict | None):
        self.task, self.sandbox = task, sandbox
        self.root = make_temp("synth-filter")
        self.pristine = self.root / "pristine"
        materialize(task, self.pristine)
        self.checks = [dict(c) for c in thaw(task.checks)]

    def _copy(self, name: str) -> Path:
        workspace = self.root / name
        shutil.copytree(self.pristine, workspace, symlinks=True)
        return workspace

    def oracle(self, truncated: bool = False) -> tuple[Verdict, Trajectory, Path]:
        """Run the reference solution in a fresh sandbox (on truncated inputs: the tamper attack)."""
        task = self.task
        workspace = self._copy("tamper" if truncated else "oracle")
        if truncated:
            truncate_inputs(workspace, input_files(task))
        with create_sandbox(
            self.sandbox, workspace, limits=sandbox_limits(task), network=task.network, mount=task.mount
        ) as box:
            trajectory = make_agent({"type": "oracle"}).run(task, box)
        if trajectory.outcome == "error":
            raise InfraError(trajectory.error or "the reference solution reported an infrastructure error")
        return self.grade(workspace, trajectory), trajectory, workspace

    def grade(self, workspace: Path, trajectory: Trajectory) -> Verdict:
        return verify_task(
            self.task, workspace, original=self.pristine, trajectory=trajectory.to_dict(), sandbox=self.sandbox
        )

    def grade_here(self, workspace: Path, checks: list[dict]) -> Verdict:
        task = self.task
        ctx = CheckContext(
            workspace=workspace,
            original=self.pristine,
            task_dir=Path(task.task_dir) if task.task_dir else None,
            params=thaw(task.params),
            mount=task.mount,
            trajectory=Trajectory(task=task.summary(), agent={"type": "nop"}).to_dict(),
            sandbox=self.sandbox,
        )
        return combine(run_checks(checks, ctx))

    def nop(self) -> Verdict:
        return self.grade_here(self._copy("nop"), self.checks)

    def lazy(self, final: Path) -> list[lazy_agents.LazyScore]:
        """Every lazy agent's best score, each graded here like doing nothing (`final`: the
        reference's final workspace, whose outputs they imitate)."""
        outputs = lazy_agents.output_paths(self.task, self.pristine, final)
        return lazy_agents.lazy_scores(
            self.task,
            self.pristine,
            final,
            outputs,
            lambda workspace: self.grade_here(workspace, self.checks),
            sandbox=self.sandbox,
        )

    def tamper_gated(self) -> bool:
        """Whether an input gate already fails once the inputs are truncated: then the attack scores
        0 whatever outputs it writes (they cannot undo the truncation), and no trial is needed."""
        gates = [c for c in self.checks if c.get("type") == "unchanged" and c.get("gate")]
        if not gates:
            return False
        workspace = self._copy("truncated")
        truncate_inputs(workspace, input_files(self.task))
        return self.grade_here(workspace, gates).gate_failed is not None

    def close(self) -> None:
        safefs.remove_tree(self.root)


def run_filters(task: Task, settings: FilterSettings, *, sandbox: dict | None = None) -> FilterReport:
    """Run every filter on one compiled task and report each result (code checks only; a rubric is
    left to the judge at run time)."""
    report = FilterReport()
    if settings.paths_mentioned:
        missing = unnamed_paths(task)
        if missing:
            return report.fail("paths", f"the instruction never mentions {', '.join(missing)}")
        report.results["paths"] = True
    if not settings.trials:
        return report
    trials = FilterTrials(task, worker_sandbox(sandbox))
    try:
        return _graded_filters(trials, settings, report)
    except InfraError as exc:
        graded = ("oracle", "determinism", "nop", "tamper", "lazy", "mutations")
        name = next((n for n in graded if n not in report.results), "oracle")
        return report.fail(name, f"the {name} trial could not run: {exc}", None)
    finally:
        trials.close()


def _graded_filters(trials: FilterTrials, settings: FilterSettings, report: FilterReport) -> FilterReport:
    verdict, trajectory, workspace = trials.oracle()
    if trajectory.outcome in ("agent_crash", "agent_timeout", "failed", "timeout") and trajectory.error:
        return report.fail("oracle", f"the reference solution failed: {trajectory.error}", verdict.reward)
    if verdict.reward < 1 - 1e-9:
        return report.fail(
            "oracle",
            f"the reference solution scores {verdict.reward:.3f} (failing: {failing_checks(verdict.to_dict())})",
            verdict.reward,
        )
    report.results["oracle"] = verdict.reward
    if settings.determinism:
        again = trials.grade(workspace, trajectory)
        if verdict_essence(again) != verdict_essence(verdict):
            diff = [
                f"{a[0]}: {a[2]!r} then {b[2]!r}"
                for a, b in zip(verdict_essence(verdict), verdict_essence(again))
                if a != b
            ]
            return report.fail("determinism", "grading the same workspace twice differs: " + "; ".join(diff[:3]))
        report.results["determinism"] = True
    nop = trials.nop()
    if nop.reward > settings.nop_max + 1e-9:
        return report.fail(
            "nop",
            f"doing nothing scores {nop.reward:.3f} > {settings.nop_max} "
            f"(passing: {failing_checks(nop.to_dict(), passing=True)})",
            nop.reward,
        )
    report.results["nop"] = nop.reward
    if settings.tamper:
        if trials.tamper_gated():
            report.results["tamper"] = 0.0
            report.results["tamper_by"] = "input gate"
        else:
            tamper, _, _ = trials.oracle(truncated=True)
            if tamper.reward > nop.reward + 1e-9:
                return report.fail(
                    "tamper",
                    f"truncating the inputs and answering for what is left scores "
                    f"{tamper.reward:.3f}, more than doing nothing ({nop.reward:.3f}); "
                    f"passing: {failing_checks(tamper.to_dict(), passing=True)}",
                    tamper.reward,
                )
            report.results["tamper"] = tamper.reward
            report.results["tamper_by"] = "trial"
    if settings.lazy:
        lazy_filter(trials.lazy(workspace), settings.lazy_max, report)
        if not report.passed:
            return report
    if settings.mutations:
        problems = mutation_problems(
            trials.task, trials.pristine, workspace, trajectory=trajectory.to_dict(), sandbox=trials.sandbox
        )
        if problems:
            more = f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""
            return report.fail("mutations", "; ".join(problems[:2]) + more, len(problems))
        report.results["mutations"] = True
    return report


def lazy_filter(scores: list[lazy_agents.LazyScore], most: float, report: FilterReport) -> FilterReport:
    """Record the best lazy score and its variant; fail when it passes `most`."""
    top = lazy_agents.worst(scores)
    if top is not None and top.reward > most + 1e-9:
        report.results["lazy_by"] = top.variant
        return report.fail(
            "lazy", f"a lazy agent scores more than {most}: {top.describe()} ({lazy_agents.FIX})", top.reward
        )
    report.results["lazy"] = top.reward if top else 0.0
    report.results["lazy_by"] = top.variant if top else None
    return report
