"""The RLSpec: every knob of a GRPO run, loaded from a `kind: RL` YAML file and validated.

Defaults come from `clawgym/schemas/rl.v1.json`; task paths and seeds are resolved and checked up
front (file:line and key path for every problem, all at once), so a run never fails an hour in on
a typo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records.outcomes import evaluation_rules, training_rules
from ..errors import Problem, SpecError
from ..run.plan import expand_task_paths, parse_seeds
from ..spec.load import load_file
from ..spec.validate import raw_schema, validate_document
from .spec import spec_template, with_defaults


@dataclass(frozen=True)
class RLSpec:
    """A validated GRPO run (see the schema for what each field means)."""

    name: str
    file: Path
    model: str
    chat_template: str | None
    tasks: tuple[Path, ...]
    seeds: tuple[int, ...]
    rollout: dict[str, Any]
    reward: dict[str, Any]
    loss: dict[str, Any]
    optim: dict[str, Any]
    precision: str
    gradient_checkpointing: bool
    lora: dict[str, Any] | None
    seed: int
    eval: dict[str, Any]
    eval_tasks: tuple[Path, ...]
    eval_seeds: tuple[int, ...]
    checkpoint: dict[str, Any]
    log: dict[str, Any]
    out: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    training_rules: dict[str, str] = field(default_factory=training_rules)  # outcome -> reward | drop | mask
    evaluation_rules: dict[str, str] = field(default_factory=evaluation_rules)  # for its evaluation runs


def load_rl_spec(path: str | Path, *, out: str | Path | None = None) -> RLSpec:
    """Load and validate an RL spec; SpecError lists every problem."""
    doc = load_file(path)
    problems = validate_document(doc, expected_kind="RL")
    problems += _engine_url_problems(doc)
    if problems:
        raise SpecError(problems)
    data = with_defaults(raw_schema("rl"), doc.data)
    base = Path(doc.file).resolve().parent
    problems = []
    tasks = tuple(expand_task_paths(list(data["tasks"]), base))
    for i, pattern in enumerate(data["tasks"]):
        if not expand_task_paths([pattern], base):
            problems.append(
                Problem(
                    f"no task spec matches {pattern!r}",
                    **doc.where(("tasks", i)),
                    hint="task paths and globs are relative to the spec file",
                )
            )
    eval_tasks = tuple(expand_task_paths(list(data["eval"]["tasks"]), base))
    seeds: tuple[int, ...] = ()
    eval_seeds: tuple[int, ...] = ()
    for where, value in ((("seeds",), data["seeds"]), (("eval", "seeds"), data["eval"]["seeds"])):
        try:
            parsed = tuple(parse_seeds(value))
        except (TypeError, ValueError):
            problems.append(
                Problem(
                    f"cannot read seeds {value!r}",
                    **doc.where(where),
                    hint="write seeds as '0-99', '0,1,2' or a list of integers",
                )
            )
            continue
        if where == ("seeds",):
            seeds = parsed
        else:
            eval_seeds = parsed
    if problems:
        raise SpecError(problems)
    template = spec_template(data.get("chat_template"), base)
    return RLSpec(
        name=data["name"],
        file=Path(doc.file),
        model=data["model"],
        chat_template=template,
        tasks=tasks,
        seeds=seeds,
        rollout=data["rollout"],
        reward=data["reward"],
        loss=data["loss"],
        optim=data["optim"],
        precision=data["precision"],
        gradient_checkpointing=data["gradient_checkpointing"],
        lora=data["lora"],
        seed=data["seed"],
        eval=data["eval"],
        eval_tasks=eval_tasks,
        eval_seeds=eval_seeds,
        checkpoint=data["checkpoint"],
        log=data["log"],
        out=Path(out or data.get("out") or Path("runs") / "rl" / data["name"]),
        raw=data,
        training_rules=training_rules((data.get("outcomes") or {}).get("training")),
        evaluation_rules=evaluation_rules((data.get("outcomes") or {}).get("evaluation")),
    )


def _engine_url_problems(doc: Any) -> list[Problem]:
    """A managed engine (`rollout.server.type: vllm`) given a URL."""
    problems: list[Problem] = []
    data = doc.data if isinstance(doc.data, dict) else {}
    server = (data.get("rollout") or {}).get("server") if isinstance(data.get("rollout"), dict) else None
    if not isinstance(server, dict):
        return problems
    if server.get("type") == "vllm" and server.get("base_url"):
        problems.append(
            Problem(
                "rollout.server type vllm starts its own engine and takes no base_url",
                **doc.where(("rollout", "server", "base_url")),
                hint="drop base_url, or write type: openai to use a server that is already running",
            )
        )
    return problems
