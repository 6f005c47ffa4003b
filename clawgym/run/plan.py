"""Turn a Run spec (or a task spec plus command-line options) into the list of trials to run."""

from __future__ import annotations

import glob
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compile.batch import compile_many
from ..errors import Problem, SpecError
from .trial import Trial
from ..spec.load import Document
from ..spec.render import RenderError, render_text
from ..spec.validate import validate_document
from ..spec.task import Task
from ..records.outcomes import evaluation_rules


@dataclass
class RunPlan:
    """Everything a run needs: trials, concurrency, sandbox, output folder and provenance."""

    name: str
    trials: list[Trial]
    out: Path
    concurrency: int = 4
    sandbox: dict[str, Any] | None = None
    pass_threshold: float = 1.0
    judge: dict[str, Any] | None = None
    retries: int = 2  # extra tries for a trial whose outcome's evaluation rule is `retry`
    retry_backoff: float = 1.0  # seconds before the first retry, doubled each time
    max_sandboxes: int | None = None  # live sandboxes at once (default: concurrency)
    max_model_requests: int | None = None  # model requests in flight at once (default: no cap)
    trial_timeout: float | None = None  # seconds per trial (default: task limit + 600)
    executor: dict[str, Any] | None = None  # {type: local|ray, ...}
    shared_inputs: bool | None = None  # trials of one instance copy one prepared tree (None: when any has several)
    source: dict[str, Any] = field(default_factory=dict)
    outcome_rules: dict[str, str] = field(default_factory=evaluation_rules)  # outcome -> score|exclude|retry

    def shares_inputs(self) -> bool:
        """Whether trials start from one prepared tree per instance: as set, else when some instance
        has several trials (attempts, agents, GRPO groups)."""
        if self.shared_inputs is not None:
            return self.shared_inputs
        return len({t.task.hash for t in self.trials}) < len(self.trials)

    @property
    def tasks(self) -> list[Task]:
        seen: dict[str, Task] = {}
        for t in self.trials:
            seen.setdefault(t.task.hash, t.task)
        return list(seen.values())


def parse_seeds(value: Any) -> list[int]:
    """Seeds from a list, `{count, start}`, or CLI text such as '0,1,2' or '0-4'."""
    if isinstance(value, dict):
        start = int(value.get("start", 0))
        return list(range(start, start + int(value["count"])))
    if isinstance(value, list):
        return [int(v) for v in value]
    seeds: list[int] = []
    for part in str(value).split(","):
        part = part.strip()
        if "-" in part[1:]:
            lo, hi = part.split("-", 1) if not part.startswith("-") else part.rsplit("-", 1)
            seeds += list(range(int(lo), int(hi) + 1))
        elif part:
            seeds.append(int(part))
    return seeds


def expand_task_paths(patterns: list[str], base: Path, exclude: list[str] = ()) -> list[Path]:
    """Task spec files matching the patterns (relative to `base`), sorted and unique."""
    excluded = {Path(p).resolve() for pat in exclude for p in glob.glob(str(base / pat), recursive=True)}
    found: dict[Path, None] = {}
    for pattern in patterns:
        full = base / pattern
        matches = [Path(p) for p in sorted(glob.glob(str(full), recursive=True))]
        if full.is_dir():
            matches = sorted(full.rglob("*.yaml"))
        for m in matches:
            if m.is_file() and m.resolve() not in excluded:
                found[m] = None
    return list(found)


def _check_agent_labels(doc: Document, agents: list[dict]) -> None:
    """Every agent and policy type is installed, an agent's policy config fits its policy's schema,
    and no two agents share a label (they would write the same trial folders: each needs its own
    `name`)."""
    from ..agent import agent_label

    from ..errors import ClawgymError
    from ..registry import get
    from ..spec.validate import validate_plugin

    seen: dict[str, int] = {}
    problems = []
    for i, agent in enumerate(agents):
        for key, kind, value in (
            ((), "agent", agent.get("type")),
            (("policy",), "policy", (agent.get("policy") or {}).get("type")),
        ):
            if isinstance(value, str):
                try:
                    get(kind, value)
                except ClawgymError as e:  # an unknown agent or policy type: said now, not by every trial
                    problems.append(
                        Problem(e.problems[0].what, **doc.where(("agents", i, *key, "type")), hint=e.problems[0].hint)
                    )
                else:
                    if kind == "policy":  # its settings, at their lines (e.g. a vllm policy's engine:)
                        problems += validate_plugin("policy", agent["policy"], doc, ("agents", i, "policy"))
        label = agent_label(agent)
        if label in seen:
            problems.append(
                Problem(
                    f"agent {i} has the same label {label!r} as agent {seen[label]}: their trials "
                    "would share results folders",
                    **doc.where(("agents", i)),
                    hint=f"give each a distinct name, e.g. name: {label}-{i}",
                )
            )
        seen.setdefault(label, i)
    if problems:
        raise SpecError(problems)


def _check_agent_binds(doc: Document, agents: list[dict], tasks: list, paths: list[Path], out: str | None) -> None:
    """Agent configs may bind only their own folders (see agent/binds.py); all problems at once, at their lines."""
    from ..agent.binds import bind_problems

    out_prefix = str(out or doc.data.get("out") or "runs/").split("{{")[0] or "."
    protected = [
        *{p.resolve().parent for p in paths},
        *{Path(t.task_dir) for t in tasks if t.task_dir},
        Path(out_prefix).resolve(),
    ]
    mounts = sorted({t.mount for t in tasks})
    problems = []
    for i, agent in enumerate(agents):
        if not isinstance(agent, dict) or not (agent.get("ro_binds") or agent.get("install")):
            continue
        seen = set()
        for mount in mounts or [None]:
            for key, what, hint in bind_problems(agent, mount=mount, protected=protected):
                if (key, what) not in seen:
                    seen.add((key, what))
                    problems.append(Problem(what, hint=hint, **doc.where(("agents", i, *key))))
    if problems:
        raise SpecError(problems)


def plan_from_run_spec(doc: Document, *, out: str | None = None) -> RunPlan:
    """Build the plan for a `kind: Run` document."""
    problems = validate_document(doc, expected_kind="Run")
    if problems:
        raise SpecError(problems)
    data = doc.data
    base = doc.folder
    paths = expand_task_paths(data["tasks"], base, data.get("exclude", []))
    if not paths:
        raise SpecError.one(
            "no task spec files match these patterns",
            **doc.where(("tasks",)),
            hint="patterns are relative to the run spec; '**' matches folders",
        )
    seeds = parse_seeds(data.get("seeds", [0]))
    agents = data.get("agents") or [{"type": "oracle"}]
    _check_agent_labels(doc, agents)
    tasks = compile_many(paths, seeds)
    _check_agent_binds(doc, agents, tasks, paths, out)
    trials = [
        Trial(task, agent, attempt)
        for task in tasks
        for agent in agents
        for attempt in range(int(data.get("attempts", 1)))
    ]
    try:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out_dir = out or render_text(
            data.get("out", "runs/{{ name }}/{{ timestamp }}"), {"name": data["name"], "timestamp": stamp}
        )
    except RenderError as exc:
        raise SpecError.one(exc.what, **doc.where(("out",)), hint=exc.hint)
    return RunPlan(
        name=data["name"],
        trials=trials,
        out=Path(out_dir),
        concurrency=int(data.get("concurrency", 4)),
        sandbox=data.get("sandbox"),
        pass_threshold=float(data.get("pass_threshold", 1.0)),
        judge=data.get("judge"),
        retries=int((data.get("retries") or {}).get("max", 2)),
        retry_backoff=float((data.get("retries") or {}).get("backoff", 1.0)),
        max_sandboxes=data.get("max_sandboxes"),
        max_model_requests=data.get("max_model_requests"),
        trial_timeout=data.get("trial_timeout"),
        executor=data.get("executor"),
        source={"spec_file": doc.file, "spec_sha256": _sha(doc.file), "spec": data},
        outcome_rules=evaluation_rules((data.get("outcomes") or {}).get("evaluation")),
    )


def plan_for_task(
    doc: Document,
    *,
    agents: list[dict],
    seeds: list[int],
    attempts: int = 1,
    concurrency: int = 4,
    out: str | None = None,
    sandbox: dict | None = None,
) -> RunPlan:
    """Build the plan for a single task spec run from the command line."""
    tasks = compile_many([Path(doc.file)], seeds, docs={Path(doc.file): doc})
    name = doc.data["name"]
    trials = [Trial(t, a, i) for t in tasks for a in agents for i in range(attempts)]
    return RunPlan(
        name=name,
        trials=trials,
        out=Path(out or f"runs/{name}"),
        concurrency=concurrency,
        sandbox=sandbox,
        source={"spec_file": doc.file, "spec_sha256": _sha(doc.file), "agents": agents, "seeds": seeds},
    )


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
