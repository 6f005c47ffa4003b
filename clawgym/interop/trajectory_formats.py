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
from ..jsonl import write_lines
from ..trajectories import collect_run, parse_line, reward_of, status_of, to_hf_dataset, write_jsonl
from ..trajectory import FORMAT, OUTCOMES, Trajectory

EXPORT_FORMATS = ("clawgym", "openai", "sharegpt")
IMPORT_FORMATS = ("clawgym", "openai", "sharegpt", "hf")
ROLES = ("system", "developer", "user", "assistant", "tool")
ACCEPTED = ("clawgym trajectories (lines with format/task/agent), OpenAI rows ({\"messages\": [...]}), "
            "ShareGPT rows ({\"conversations\": [...]}), as JSONL or a JSON array, "
            "or a Hugging Face dataset folder written by save_to_disk")
OPENAI_SHAPE = 'an OpenAI row is {"messages": [{"role": "user", "content": "..."}, ...], "tools": [...]}'


def __getattr__(name: str) -> Any:
    """`to_sharegpt_row` and `from_sharegpt_row` live in `.sharegpt`, which builds on this module."""
    if name in ("to_sharegpt_row", "from_sharegpt_row"):
        from . import sharegpt

        return getattr(sharegpt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# Messages


def text_of(content: Any) -> str | None:
    """Content as plain text: a list of parts gives the text of its text parts, joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text") or "") if isinstance(p, dict) else str(p)
                       for p in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def _content(content: Any) -> Any:
    """OpenAI content: text, None, or a list of parts when some part is not text (kept as it is)."""
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type", "text") != "text" for p in content):
        return content
    return text_of(content)


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON string OpenAI uses (a string is kept, even when not JSON)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def chat_message(m: dict[str, Any], turn: int = 0) -> dict[str, Any]:
    """One message in the normalised OpenAI form; a tool call without id gets `call_<turn>_<k>`."""
    out: dict[str, Any] = {"role": m.get("role"), "content": _content(m.get("content"))}
    if m.get("tool_calls"):
        out["tool_calls"] = []
        for k, call in enumerate(m["tool_calls"]):
            fn = call.get("function") or {}
            out["tool_calls"].append({"id": call.get("id") or f"call_{turn}_{k}",
                                      "type": call.get("type") or "function",
                                      "function": {"name": fn.get("name"),
                                                   "arguments": arguments_text(fn.get("arguments"))}})
    for key in ("tool_call_id", "name"):
        if m.get(key) is not None:
            out[key] = m[key]
    return out


def chat_messages(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalised messages, assistant turns counted from 0 for generated call ids."""
    out, turn = [], 0
    for m in messages:
        out.append(chat_message(m, turn))
        turn += m.get("role") == "assistant"
    return out


# ---------------------------------------------------------------------------------------------
# Provenance


def metadata_of(t: Trajectory) -> dict[str, Any]:
    """The flat provenance object written with every row (the same keys on every row)."""
    task, verdict, agent = t.task or {}, t.verdict or {}, t.agent or {}
    return {"format": t.format or FORMAT, "task_id": task.get("id") or task.get("name"),
            "task_name": task.get("name"), "task_hash": task.get("hash"), "seed": task.get("seed"),
            "category": task.get("category"), "reward": reward_of(t),
            "status": status_of(t) or ("error" if t.outcome == "error" else None), "outcome": t.outcome,
            "agent": agent.get("name") or agent.get("type"), "agent_type": agent.get("type"),
            "trial_id": verdict.get("trial_id")}


def where_label(file: str | None, line: int | None, key: str | None) -> str:
    """`file:line` (or `file key` for rows without lines) for messages and unknown provenance."""
    return f"{file}:{line}" if line else f"{file} {key}" if key else str(file)


def build_trajectory(messages: list[dict[str, Any]], tools: list[dict[str, Any]], metadata: Any, *,
                     file: str | None = None, line: int | None = None, key: str | None = None) -> Trajectory:
    """A Trajectory from chat messages, tools and (optional) provenance metadata."""
    meta = metadata if isinstance(metadata, dict) else {}
    task_id, name, seed = meta.get("task_id") or None, meta.get("task_name") or None, meta.get("seed")
    task_id = None if task_id is None else str(task_id)
    if task_id or name:
        if not name:  # clawgym ids are name@seed
            name = task_id.rsplit("@", 1)[0] if seed is not None and task_id.endswith(f"@{seed}") else task_id
        task = {"name": name, "id": task_id or name}
        task.update({k: meta[src] for k, src in (("hash", "task_hash"), ("seed", "seed"), ("category", "category"))
                     if meta.get(src) not in (None, "")})
    else:
        stem = Path(file).stem if file else "imported"
        task = {"name": stem, "id": f"{stem}:{line or key}",
                "source": where_label(file, line, key)}
    agent_type = meta.get("agent_type") or meta.get("agent") or "imported"
    t = Trajectory(task=task, agent={"type": agent_type, "name": meta.get("agent") or agent_type},
                   messages=messages, tools=tools,
                   outcome=meta.get("outcome") if meta.get("outcome") in OUTCOMES else "completed")
    if meta.get("reward") is not None or meta.get("status"):
        t.verdict = {"status": meta.get("status"), "reward": meta.get("reward")}
        if meta.get("trial_id"):
            t.verdict["trial_id"] = meta["trial_id"]
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant" and not last.get("tool_calls"):
        t.final_message = text_of(last.get("content"))
    return t


def parse_tools(tools: Any, **where: Any) -> list[dict[str, Any]]:
    """Tool schemas from a list or a JSON string of one (None or "" give no tools)."""
    if tools in (None, ""):
        return []
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as e:
            raise ClawgymError(f"tools is not JSON: {e.msg} (column {e.colno})",
                               hint="tools must be a list of function-tool schemas, or a JSON string of one",
                               **where) from None
    if not isinstance(tools, list) or not all(isinstance(x, dict) for x in tools):
        raise ClawgymError(f"tools must be a list of objects, got {type(tools).__name__}",
                           hint='e.g. [{"type": "function", "function": {"name": ..., "parameters": {...}}}]',
                           **where)
    return tools


# ---------------------------------------------------------------------------------------------
# OpenAI rows


def row_shape(d: Any, field: str) -> str:
    """What a row that lacks a proper `field` list holds, for error messages."""
    if not isinstance(d, dict):
        return type(d).__name__
    if field in d:
        return f"{field} of type {type(d[field]).__name__}"
    return f"keys {', '.join(sorted(map(str, d))) or 'none'}"


def to_openai_row(t: Trajectory) -> dict[str, Any]:
    """One OpenAI chat fine-tuning row: messages, tools (as recorded) and provenance metadata."""
    return {"messages": chat_messages(t.messages), "tools": list(t.tools or []), "metadata": metadata_of(t)}


def from_openai_row(d: Any, *, file: str | None = None, line: int | None = None,
                    key: str | None = None) -> Trajectory:
    """A Trajectory from an OpenAI row (`messages`, optional `tools` and `metadata`)."""
    where = {"file": file, "line": line}
    prefix = f"{key}." if key else ""
    if not isinstance(d, dict) or not isinstance(d.get("messages"), list):
        raise ClawgymError(f"expected an object with a \"messages\" list, got {row_shape(d, 'messages')}",
                           hint=OPENAI_SHAPE, key=key, **where)
    for i, m in enumerate(d["messages"]):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            what = f"unknown role {m.get('role')!r}" if isinstance(m, dict) else f"not an object ({type(m).__name__})"
            raise ClawgymError(what, key=f"{prefix}messages[{i}]", hint=f"a message is {{\"role\": one of "
                               f"{', '.join(ROLES)}, \"content\": ...}}", **where)
        for k, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                raise ClawgymError("a tool call needs a function name", key=f"{prefix}messages[{i}].tool_calls[{k}]",
                                   hint='a tool call is {"id": ..., "type": "function", "function": '
                                        '{"name": ..., "arguments": "{...}"}}', **where)
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
        raise ClawgymError("unknown trajectory format: a folder without dataset_info.json, state.json or "
                           "dataset_dict.json", file=str(path), hint=f"accepted: {ACCEPTED}")
    for row, where in _json_rows(path):
        if isinstance(row, dict):
            if str(row.get("format") or "").startswith("clawgym.trajectory") or {"task", "agent"} <= set(row):
                return "clawgym"
            if "messages" in row:
                return "openai"
            if "conversations" in row:
                return "sharegpt"
        got = f"keys {', '.join(sorted(row)) or 'none'}" if isinstance(row, dict) else type(row).__name__
        raise ClawgymError(f"unknown trajectory format (first row has {got})", hint=f"accepted: {ACCEPTED}",
                           file=str(path), **where)
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
                raise ClawgymError(f"not a JSON array: {e.msg}", file=str(path), line=e.lineno,
                                   hint="a .json file must hold one array of rows; or write one row a line") from None
            for i, item in enumerate(items):
                yield item, {"key": f"[{i}]"}
            return
        for lineno, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise ClawgymError(f"not a JSON object: {e.msg} (column {e.colno})", file=str(path), line=lineno,
                                   hint="each line must hold one whole row") from None
            yield row, {"line": lineno}


def _from_sharegpt(row: Any, **where: Any) -> Trajectory:
    from .sharegpt import from_sharegpt_row

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
        raise PrerequisiteError("reading a Hugging Face dataset needs the `datasets` package",
                                hint="pip install datasets") from None
    try:
        loaded = datasets.load_from_disk(str(path))
    except (OSError, ValueError) as e:
        raise ClawgymError(f"cannot load the dataset: {e}", file=str(path),
                           hint="pass a folder written by Dataset.save_to_disk") from None
    splits = loaded.items() if isinstance(loaded, datasets.DatasetDict) else [("", loaded)]
    for split, ds in splits:
        if "messages" not in ds.column_names:
            raise ClawgymError(f"dataset has no messages column (columns: {', '.join(ds.column_names)})",
                               file=str(path), hint="export with `clawgym export --hf`, or save rows in OpenAI form")
        for i, row in enumerate(ds):
            key = f"{split}[{i}]" if split else f"rows[{i}]"
            meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else \
                {k: v for k, v in row.items() if k not in ("messages", "tools")}
            messages = [{k: v for k, v in m.items() if v is not None or k == "content"}
                        if isinstance(m, dict) else m for m in row["messages"] or []]
            t = from_openai_row({"messages": messages, "tools": row.get("tools"), "metadata": meta},
                                file=str(path), key=key)
            yield t if t.messages else None


def _read(path: Path, fmt: str = "auto") -> tuple[str, Iterator[Trajectory | None]]:
    path = Path(path)
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in IMPORT_FORMATS:
        raise ClawgymError(f"unknown trajectory format {fmt!r}", hint=f"use auto, {', '.join(IMPORT_FORMATS)}")
    if (fmt == "hf") != path.is_dir():
        raise ClawgymError(f"{'a folder' if path.is_dir() else 'a file'} cannot be read as {fmt}", file=str(path),
                           hint="hf reads a dataset folder; clawgym, openai and sharegpt read JSONL files")
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
        from .sharegpt import to_sharegpt_row as convert
    for t in trajs:
        if not t.messages:
            skipped["no messages"] += 1
            continue
        try:
            yield convert(t)
        except ClawgymError as e:
            skipped[f"{(t.task or {}).get('id')}: {e.problems[0].what}"] += 1


def export_command(run_dirs: list[Path], *, out_jsonl: Path | None, fmt: str = "clawgym", hf_dir: Path | None = None,
                   min_reward: float | None = None, statuses: Iterable[str] = (), categories: Iterable[str] = (),
                   console: Console) -> None:
    """`clawgym export trajectories`: collect finished trials, filter, write JSONL and/or an HF dataset."""
    if not out_jsonl and not hf_dir:
        raise ClawgymError("nothing to write", hint="give --out FILE.jsonl and/or --hf FOLDER")
    if fmt not in EXPORT_FORMATS:
        raise ClawgymError(f"unknown export format {fmt!r}", hint=f"use {', '.join(EXPORT_FORMATS)}")
    trajs, total = [], 0
    for d in run_dirs:
        trajs += collect_run(Path(d), min_reward=min_reward, status=tuple(statuses) or None,
                             category=tuple(categories) or None)
        total += sum(1 for _ in (Path(d) / "trials").glob("*/record.json"))
    if out_jsonl:
        skipped: Counter = Counter()
        count = write_jsonl(out_jsonl, trajs) if fmt == "clawgym" else write_lines(out_jsonl, _rows(trajs, fmt, skipped))
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
    console.print(f"wrote {total} trajectories to {out}; skipped {sum(c[1] for c in counts)}",
                  markup=False, highlight=False)
