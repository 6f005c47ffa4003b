"""A task set for other trainers: task instances from specs, a synthesized dataset or a benchmark,
each with the prompt our claw agent starts from.

Sources (any mix):
- `bench:3` (or `bench:2`, `bench:1`, `bench:FOLDER`): every instance of a benchmark version;
- a synthesized dataset folder (it holds `manifest.jsonl`; `split=` keeps one split);
- a task spec file, a folder of them, or a glob, compiled at every seed of `seeds`.

Benchmark instances and synthesized tasks are concrete (their seed is fixed when they are made),
so they are taken at seed 0 only. Tasks with follow-up user messages are left out with the reason:
a trainer's rollout loop has no way to send the user's next message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import ClawgymError
from ..spec.task import Task, thaw

BENCH_PREFIX = "bench:"


@dataclass(frozen=True)
class TaskSet:
    """Compiled task instances by id (`NAME.sSEED`), in a stable order, and what was left out."""

    tasks: dict[str, Task]
    skipped: tuple[tuple[str, str], ...] = ()  # (instance id, why)
    sources: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, instance: str) -> Task:
        try:
            return self.tasks[instance]
        except KeyError:
            raise ClawgymError(
                f"instance {instance!r} is not in this task set ({len(self.tasks)} instances from "
                f"{', '.join(self.sources)})",
                hint="build the dataset and the environments from the same TaskSet",
            ) from None


def instance_id(task: Task) -> str:
    return f"{task.name}.s{task.seed}"


def _bench_specs(value: str) -> list[Path]:
    from ..bench.layout import bench_folder
    from ..bench.discover import discover

    return [i.spec for i in discover(bench_folder(value or None))]


def _dataset_specs(folder: Path, split: str | None) -> list[Path]:
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [folder / r["path"] for r in rows if split is None or r.get("split") == split]


def _spec_paths(source: str, base: Path) -> list[Path]:
    from ..run.plan import expand_task_paths

    found = expand_task_paths([source], base)
    if not found:
        raise ClawgymError(
            f"task source {source!r} names no task spec (a .yaml file, a folder of them, a glob), "
            "no synthesized dataset (a folder with manifest.jsonl) and no benchmark (bench:3)",
            hint="pass e.g. specs/tasks, datasets/my-synth or bench:3",
        )
    return found


def load_taskset(
    sources: str | Sequence[str],
    *,
    seeds: Iterable[int] = (0,),
    split: str | None = None,
    limit: int | None = None,
    base: str | Path = ".",
) -> TaskSet:
    """Compile every instance `sources` name (see the module docstring); `limit` keeps the first N."""
    from ..compile.batch import compile_many

    sources = [sources] if isinstance(sources, str) else list(sources)
    seeds = list(seeds)
    concrete: list[Path] = []
    families: list[Path] = []
    for source in sources:
        path = Path(base) / source
        if source.startswith(BENCH_PREFIX):
            concrete += _bench_specs(source[len(BENCH_PREFIX) :])
        elif path.is_dir() and (path / "manifest.jsonl").is_file():
            concrete += _dataset_specs(path, split)
        else:
            families += _spec_paths(source, Path(base))
    tasks = compile_many(concrete, [0]) if concrete else []
    tasks += compile_many(families, seeds) if families else []
    kept: dict[str, Task] = {}
    skipped: list[tuple[str, str]] = []
    for task in tasks:
        key = instance_id(task)
        if task.followups:
            skipped.append((key, "it has follow-up user messages, which a trainer's rollout loop cannot send"))
        elif key not in kept:
            kept[key] = task
    if limit is not None:
        kept = dict(list(kept.items())[:limit])
    if not kept:
        raise ClawgymError(
            f"no task instance to offer from {', '.join(sources)}"
            + (f" ({len(skipped)} left out: {skipped[0][1]})" if skipped else ""),
            hint="check the sources and `split`",
        )
    return TaskSet(kept, tuple(skipped), tuple(sources))


def tool_names(task: Task, overrides: dict[str, Any] | None = None) -> list[str]:
    """The claw tools this task offers (the task's enable/disable, then the agent's overrides)."""
    from ..agent.claw.tools import select_tools

    return select_tools(thaw(task.tools or {}), overrides)


def prompt_messages(task: Task, overrides: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The conversation our claw agent opens with: its system prompt (the workspace's bootstrap
    files, skills and clock, built from the task's files exactly as a trial's first turn sees them)
    and the instruction as the user's message."""
    from ..agent.claw.paths import Workspace
    from ..agent.claw.prompt import build_system_prompt

    workspace = Workspace(Path("/nonexistent-workspace"), task.mount)  # every read comes from `files`
    system = build_system_prompt(workspace, task.clock, tool_names(task, overrides), files=task.files)
    return [{"role": "system", "content": system}, {"role": "user", "content": task.instruction}]
