"""Trajectory datasets in other formats: OpenAI chat fine-tuning JSONL, ShareGPT JSONL, HF datasets.

`clawgym export trajectories` writes our own `clawgym.trajectory/v1` lines, OpenAI rows
(`{"messages", "tools", "metadata"}`) or ShareGPT rows (see `clawgym.interop.sharegpt`);
`clawgym import trajectories` reads any of them, or a dataset saved with `save_to_disk`, back into
`clawgym.trajectory/v1` lines for the trainers.

Every exported row carries a flat `metadata` object (task id, name, hash, seed, category, reward,
status, outcome, agent, trial id, trajectory format; scalars only, so `datasets` can load the file)
from which an import recovers the task provenance and puts reward and status into `verdict` as
`collect_run` does. A row without it gets an unknown provenance: task `{"name": <file stem>,
"id": "<stem>:<line>", "source": "<file>:<line>"}`.

Normalisation (the same on export and import, so a round trip gives the same messages): a message
keeps role, content, tool_calls, tool_call_id and name; tool-call arguments become JSON strings
(text that is not JSON is kept as it is); content given as a list of text parts becomes its text
(a list with other parts is kept). Trajectories without messages (a trial that failed before its
agent ran, or a scripted agent) have nothing to train on: the chat formats skip and count them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from rich.console import Console

from ..errors import ClawgymError, PrerequisiteError
from ..files.atomic import write_lines
from ..records.store import collect_run, parse_line, to_hf_dataset, write_jsonl
from ..records.trajectory import Trajectory

EXPORT_FORMATS = ("clawgym", "openai", "sharegpt")
IMPORT_FORMATS = ("clawgym", "openai", "sharegpt", "hf")
ROLES = ("system", "developer", "user", "assistant", "tool")
ACCEPTED = (
    'clawgym trajectories (lines with format/task/agent), OpenAI rows ({"messages": [...]}), '
    'ShareGPT rows ({"conversations": [...]}), as JSONL or a JSON array, '
    "or a Hugging Face dataset folder written by save_to_disk"
)
OPENAI_SHAPE = 'an OpenAI row is {"messages": [{"role": "user", "content": "..."}, ...], "tools": [...]}'


from .rows import (
    arguments_text,  # noqa: F401
    build_trajectory,
    chat_message,  # noqa: F401
    chat_messages,
    metadata_of,  # noqa: F401
    parse_tools,
    row_shape,
    text_of,  # noqa: F401
    where_label,  # noqa: F401
)
from .sharegpt import from_sharegpt_row, to_sharegpt_row  # noqa: F401 - one place for every format


# ---------------------------------------------------------------------------------------------
# OpenAI rows


def to_openai_row(t: Trajectory) -> dict[str, Any]:
    """One OpenAI chat fine-tuning row: messages, tools (as recorded) and provenance metadata."""
    return {"messages": chat_messages(t.messages), "tools": list(t.tools or []), "metadata": metadata_of(t)}


def from_openai_row(d: Any, *, file: str | None = None, line: int | None = None, key: str | None = None) -> Trajectory:
    """A Trajectory from an OpenAI row (`messages`, optional `tools` and `metadata`)."""
    where = {"file": file, "line": line}
    prefix = f"{key}." if key else ""
    if not isinstance(d, dict) or not isinstance(d.get("messages"), list):
        raise ClawgymError(
            f'expected an object with a "messages" list, got {row_shape(d, "messages")}',
            hint=OPENAI_SHAPE,
            key=key,
            **where,
        )
    for i, m in enumerate(d["messages"]):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            what = f"unknown role {m.get('role')!r}" if isinstance(m, dict) else f"not an object ({type(m).__name__})"
            raise ClawgymError(
                what,
                key=f"{prefix}messages[{i}]",
                hint=f'a message is {{"role": one of {", ".join(ROLES)}, "content": ...}}',
                **where,
            )
        for k, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                raise ClawgymError(
                    "a tool call needs a function name",
                    key=f"{prefix}messages[{i}].tool_calls[{k}]",
                    hint='a tool call is {"id": ..., "type": "function", "function": '
                    '{"name": ..., "arguments": "{...}"}}',
                    **where,
                )
    tools = parse_tools(d.get("tools"), key=f"{prefix}tools", **where)
    return build_trajectory(chat_messages(d["messages"]), tools, d.get("metadata"), key=key, **where)


# ---------------------------------------------------------------------------------------------
# Reading


def detect_format(path: Path) -> str:
    """clawgym, openai, sharegpt or hf, from a folder's files or a file's first non-empty row."""
    path = Path(path)
    if path.is_dir():
        if any((path / n).is_file() for n in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return "hf"
        raise ClawgymError(
            "unknown trajectory format: a folder without dataset_info.json, state.json or dataset_dict.json",
            file=str(path),
            hint=f"accepted: {ACCEPTED}",
        )
    for row, where in _json_rows(path):
        if isinstance(row, dict):
            if str(row.get("format") or "").startswith("clawgym.trajectory/") or {"task", "agent"} <= set(row):
                return "clawgym"
            if "messages" in row:
                return "openai"
            if "conversations" in row:
                return "sharegpt"
        got = f"keys {', '.join(sorted(row)) or 'none'}" if isinstance(row, dict) else type(row).__name__
        raise ClawgymError(
            f"unknown trajectory format (first row has {got})", hint=f"accepted: {ACCEPTED}", file=str(path), **where
        )
    return "clawgym"  # an empty file: nothing to read in any format


def _json_rows(path: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(row, where) for each non-empty line of a JSONL file, or each item of a JSON array file."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise ClawgymError(f"cannot read trajectories: {e.strerror or e}", file=str(path)) from None
    with fh:
        head = fh.read(4096).lstrip()
        fh.seek(0)
        if head.startswith("["):
            try:
                items = json.load(fh)
            except json.JSONDecodeError as e:
                raise ClawgymError(
                    f"not a JSON array: {e.msg}",
                    file=str(path),
                    line=e.lineno,
                    hint="a .json file must hold one array of rows; or write one row a line",
                ) from None
            for i, item in enumerate(items):
                yield item, {"key": f"[{i}]"}
            return
        for lineno, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise ClawgymError(
                    f"not a JSON object: {e.msg} (column {e.colno})",
                    file=str(path),
                    line=lineno,
                    hint="each line must hold one whole row",
                ) from None
            yield row, {"line": lineno}


def _from_sharegpt(row: Any, **where: Any) -> Trajectory:
    return from_sharegpt_row(row, **where)


def _read_file(path: Path, fmt: str) -> Iterator[Trajectory | None]:
    """Trajectories of a JSONL/JSON file (None for a row without messages, skipped)."""
    if fmt == "clawgym":
        for row, where in _json_rows(path):
            yield parse_line(json.dumps(row), str(path), where.get("line"))
        return
    convert: Callable[..., Trajectory] = from_openai_row if fmt == "openai" else _from_sharegpt
    for row, where in _json_rows(path):
        t = convert(row, file=str(path), **where)
        yield t if t.messages else None


def _read_hf(path: Path) -> Iterator[Trajectory | None]:
    """Rows of a dataset saved with `save_to_disk` (every split of a DatasetDict, in order)."""
    try:
        import datasets
    except ImportError:
        raise PrerequisiteError(
            "reading a Hugging Face dataset needs the `datasets` package", hint="pip install datasets"
        ) from None
    try:
        loaded = datasets.load_from_disk(str(path))
    except (OSError, ValueError) as e:
        raise ClawgymError(
            f"cannot load the dataset: {e}", file=str(path), hint="pass a folder written by Dataset.save_to_disk"
        ) from None
    splits = loaded.items() if isinstance(loaded, datasets.DatasetDict) else [("", loaded)]
    for split, ds in splits:
        if "messages" not in ds.column_names:
            raise ClawgymError(
                f"dataset has no messages column (columns: {', '.join(ds.column_names)})",
                file=str(path),
                hint="export with `clawgym export --hf`, or save rows in OpenAI form",
            )
        for i, row in enumerate(ds):
            key = f"{split}[{i}]" if split else f"rows[{i}]"
            meta = (
                row.get("metadata")
                if isinstance(row.get("metadata"), dict)
                else {k: v for k, v in row.items() if k not in ("messages", "tools")}
            )
            messages = [
                {k: v for k, v in m.items() if v is not None or k == "content"} if isinstance(m, dict) else m
                for m in row["messages"] or []
            ]
            t = from_openai_row(
                {"messages": messages, "tools": row.get("tools"), "metadata": meta}, file=str(path), key=key
            )
            yield t if t.messages else None


def _read(path: Path, fmt: str = "auto") -> tuple[str, Iterator[Trajectory | None]]:
    path = Path(path)
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in IMPORT_FORMATS:
        raise ClawgymError(f"unknown trajectory format {fmt!r}", hint=f"use auto, {', '.join(IMPORT_FORMATS)}")
    if (fmt == "hf") != path.is_dir():
        raise ClawgymError(
            f"{'a folder' if path.is_dir() else 'a file'} cannot be read as {fmt}",
            file=str(path),
            hint="hf reads a dataset folder; clawgym, openai and sharegpt read JSONL files",
        )
    return fmt, _read_hf(path) if fmt == "hf" else _read_file(path, fmt)


def read_any(path: Path, fmt: str = "auto") -> Iterator[Trajectory]:
    """Trajectories of a clawgym/OpenAI/ShareGPT JSONL file or a saved HF dataset (rows without messages
    in the chat formats are skipped)."""
    return (t for t in _read(path, fmt)[1] if t is not None)


# ---------------------------------------------------------------------------------------------
# Writing and the commands


def _rows(trajs: Iterable[Trajectory], fmt: str, skipped: Counter) -> Iterator[dict[str, Any]]:
    """Chat rows of `trajs`; those without messages or not representable are counted in `skipped`."""
    if fmt == "openai":
        convert: Callable[[Trajectory], dict[str, Any]] = to_openai_row
    else:
        convert = to_sharegpt_row
    for t in trajs:
        if not t.messages:
            skipped["no messages"] += 1
            continue
        try:
            yield convert(t)
        except ClawgymError as e:
            skipped[f"{(t.task or {}).get('id')}: {e.problems[0].what}"] += 1


def export_command(
    run_dirs: list[Path],
    *,
    out_jsonl: Path | None,
    fmt: str = "clawgym",
    hf_dir: Path | None = None,
    min_reward: float | None = None,
    statuses: Iterable[str] = (),
    categories: Iterable[str] = (),
    console: Console,
) -> None:
    """`clawgym export trajectories`: collect finished trials, filter, write JSONL and/or an HF dataset."""
    if not out_jsonl and not hf_dir:
        raise ClawgymError("nothing to write", hint="give --out FILE.jsonl and/or --hf FOLDER")
    if fmt not in EXPORT_FORMATS:
        raise ClawgymError(f"unknown export format {fmt!r}", hint=f"use {', '.join(EXPORT_FORMATS)}")
    trajs, total = [], 0
    for d in run_dirs:
        trajs += collect_run(
            Path(d), min_reward=min_reward, status=tuple(statuses) or None, category=tuple(categories) or None
        )
        total += sum(1 for _ in (Path(d) / "trials").glob("*/record.json"))
    if out_jsonl:
        skipped: Counter = Counter()
        count = (
            write_jsonl(out_jsonl, trajs) if fmt == "clawgym" else write_lines(out_jsonl, _rows(trajs, fmt, skipped))
        )
        console.print(f"wrote {count} trajectories to {out_jsonl} ({fmt})", markup=False, highlight=False)
        for why, n in sorted(skipped.items()):
            console.print(f"skipped {n}: {why}", markup=False, highlight=False)
    if hf_dir:
        to_hf_dataset(trajs).save_to_disk(str(hf_dir))
        console.print(f"saved a dataset of {len(trajs)} rows to {hf_dir}", markup=False, highlight=False)
    console.print(f"filtered out {total - len(trajs)} of {total} trials", markup=False, highlight=False)


def import_command(sources: list[Path], out: Path, *, fmt: str = "auto", console: Console) -> None:
    """`clawgym import trajectories`: read every source and write clawgym.trajectory/v1 JSONL to `out`."""
    readers = [(Path(s), *_read(Path(s), fmt)) for s in sources]  # detect all before writing anything
    counts: list[list[int]] = [[0, 0] for _ in readers]

    def stream() -> Iterator[Trajectory]:
        for (_, _, rows), tally in zip(readers, counts):
            for t in rows:
                tally[t is None] += 1
                if t is not None:
                    yield t

    total = write_jsonl(out, stream())
    for (src, kind, _), (n, skipped) in zip(readers, counts):
        extra = f", skipped {skipped} without messages" if skipped else ""
        console.print(f"imported {n} from {src} ({kind}){extra}", markup=False, highlight=False)
    console.print(
        f"wrote {total} trajectories to {out}; skipped {sum(c[1] for c in counts)}", markup=False, highlight=False
    )
