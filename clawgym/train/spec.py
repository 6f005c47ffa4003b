"""The TrainSpec: every knob of a training run, loaded from a `kind: Train` YAML file and validated.

Defaults come from the JSON Schema (`clawgym/schemas/train.v1.json`), paths are resolved against
the spec's folder, and the result is a plain, read-only object the training loop reads top to
bottom. Problems are reported all at once with file:line and key path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem, SpecError
from ..run.plan import expand_task_paths, parse_seeds
from ..spec.load import load_file
from ..spec.validate import raw_schema, resolve, validate_document


def with_defaults(schema: dict, value: Any) -> Any:
    """`value` with the schema's defaults filled in, recursively for objects."""
    schema = resolve(schema)
    if not isinstance(value, dict) or schema.get("type") not in ("object", ["object", "null"]):
        return value
    out = dict(value)
    for key, sub in (schema.get("properties") or {}).items():
        sub = resolve(sub)
        if key not in out and "default" in sub:
            out[key] = sub["default"]
        if key in out:
            out[key] = with_defaults(sub, out[key])
    return out


def spec_template(value: str | None, base: Path) -> str | None:
    """A spec's `chat_template`: Jinja text, or a file path relative to the spec's folder."""
    if value and "{" not in value and (base / value).is_file():
        return (base / value).read_text(encoding="utf-8")
    return value


@dataclass(frozen=True)
class TrainSpec:
    """A validated training run (see the schema for what each field means)."""

    name: str
    file: Path
    model: str
    chat_template: str | None
    data: dict[str, Any]
    sources: tuple[Path, ...]
    optim: dict[str, Any]
    precision: str
    gradient_checkpointing: bool
    kernels: dict[str, Any]
    lora: dict[str, Any] | None
    seed: int
    eval: dict[str, Any]
    eval_tasks: tuple[Path, ...]
    eval_seeds: tuple[int, ...]
    checkpoint: dict[str, Any]
    log: dict[str, Any]
    out: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


def load_train_spec(path: str | Path, *, out: str | Path | None = None) -> TrainSpec:
    """Load and validate a Train spec; SpecError lists every problem."""
    doc = load_file(path)
    problems = validate_document(doc, expected_kind="Train")
    if problems:
        raise SpecError(problems)
    data = with_defaults(raw_schema("train"), doc.data)
    base = Path(doc.file).resolve().parent
    sources = tuple((base / s) for s in data["data"]["sources"])
    missing = [(i, s) for i, s in enumerate(sources) if not s.exists()]
    problems = [
        Problem(
            f"no such file or folder: {data['data']['sources'][i]}",
            **doc.where(("data", "sources", i)),
            hint="sources are relative to the spec file",
        )
        for i, _ in missing
    ]
    try:
        eval_tasks = tuple(expand_task_paths(list(data["eval"]["tasks"]), base)) if data["eval"]["tasks"] else ()
        eval_seeds = tuple(parse_seeds(data["eval"]["seeds"]))
    except SpecError as exc:
        problems += exc.problems
        eval_tasks, eval_seeds = (), ()
    if problems:
        raise SpecError(problems)
    template = spec_template(data.get("chat_template"), base)
    return TrainSpec(
        name=data["name"],
        file=Path(doc.file),
        model=data["model"],
        chat_template=template,
        data=data["data"],
        sources=sources,
        optim=data["optim"],
        precision=data["precision"],
        gradient_checkpointing=data["gradient_checkpointing"],
        kernels=data["kernels"],
        lora=data["lora"],
        seed=data["seed"],
        eval=data["eval"],
        eval_tasks=eval_tasks,
        eval_seeds=eval_seeds,
        checkpoint=data["checkpoint"],
        log=data["log"],
        out=Path(out or data.get("out") or Path("runs") / "train" / data["name"]),
        raw=data,
    )
