"""`clawgym bench review`: show one instance as a reviewer needs it, and record the decision in git.

A review is only worth what it reviewed, so every record carries the content hash of the instance
it saw; a record of an older hash is shown as stale (the instance changed since). Records are
appended to `review.yaml` beside the instance, newest last, so a pull request shows them as added
lines next to the spec change they judge. Human reviews go under `reviews`, model reviews under
`llm_reviews` (see `llm_review.py`).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..errors import ClawgymError, SpecError
from ..spec.load import load_text
from ..spec.task import Task, thaw
from .layout import CALIBRATION_FILE, REVIEW_FILE
from .review_rubric import check_decision

DECISIONS = ("accept", "reject", "comment")
HEADER = "# Reviews of this instance, newest last (written by 'clawgym bench review'; each names the hash it saw)\n"
_TARGET_KEYS = ("path", "paths", "pattern", "script", "run")
_QUIET_KEYS = {"type", "weight", "gate", "name", *_TARGET_KEYS}


# ---------------------------------------------------------------------------------------------
# The record file


class _Dumper(yaml.SafeDumper):
    """Multi-line text as literal blocks: raw model answers and long comments stay readable in a diff."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and all(line == line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def read_reviews(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """{"reviews": [...], "llm_reviews": [...]} of an instance folder (empty lists without a file)."""
    path = Path(folder) / REVIEW_FILE
    if not path.is_file():
        return {"reviews": [], "llm_reviews": []}
    text = path.read_text(encoding="utf-8")
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        return {"reviews": [], "llm_reviews": []}
    try:
        data = load_text(text, str(path)).data  # dates stay strings
    except SpecError as exc:
        raise ClawgymError(
            exc.problems[0].what,
            file=str(path),
            line=exc.problems[0].line,
            hint="fix or remove the broken lines; the file only holds review records",
        )
    if data is None:
        data = {}
    if not isinstance(data, dict) or not all(isinstance(data.get(k) or [], list) for k in ("reviews", "llm_reviews")):
        raise ClawgymError(
            "expected a mapping with 'reviews' and 'llm_reviews' lists",
            file=str(path),
            hint="the file is written by 'clawgym bench review'",
        )
    return {**data, "reviews": list(data.get("reviews") or []), "llm_reviews": list(data.get("llm_reviews") or [])}


def append_record(folder: Path, kind: str, entry: dict[str, Any]) -> Path:
    """Append one record under `kind` ('reviews' or 'llm_reviews') and rewrite the file."""
    data = read_reviews(folder)
    data[kind].append(entry)
    path = Path(folder) / REVIEW_FILE
    data = {k: v for k, v in data.items() if v != []}  # no empty lists: less noise in a diff
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(HEADER + text, encoding="utf-8")
    tmp.replace(path)
    return path


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_user(cwd: Path | None = None) -> str | None:
    """`git config user.name`, or None where git or the setting is missing."""
    try:
        out = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, cwd=cwd, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def human_review(
    decision: str, reviewer: str, task: Task, comment: str = "", rubric: dict[str, str] | None = None
) -> dict[str, Any]:
    """One human review record, with its scores against the review rubric when given."""
    if decision not in DECISIONS:
        raise ClawgymError(f"unknown decision {decision!r}", hint=f"one of: {', '.join(DECISIONS)}")
    if not reviewer.strip():
        raise ClawgymError(
            "a review needs the reviewer's name", hint="pass --reviewer NAME or set git config user.name"
        )
    if decision != "accept" and not comment.strip():
        raise ClawgymError(f"a '{decision}' review needs a comment saying why", hint="pass --comment TEXT")
    check_decision(decision, rubric or {})
    record = {
        "decision": decision,
        "reviewer": reviewer.strip(),
        "date": now(),
        "hash": task.hash,
        "comment": comment.strip(),
    }
    if rubric:
        record["rubric"] = dict(rubric)
    return record


def is_stale(record: dict[str, Any], task: Task) -> bool:
    """True when the record judged another version of the instance."""
    return record.get("hash") != task.hash


def latest_decision(folder: Path, task: Task) -> dict[str, Any] | None:
    """The newest accept or reject of the instance as it is now (None when there is none)."""
    current = [
        r
        for r in read_reviews(folder)["reviews"]
        if r.get("decision") in ("accept", "reject") and not is_stale(r, task)
    ]
    return current[-1] if current else None


# ---------------------------------------------------------------------------------------------
# What the reviewer sees


def _short(value: Any, limit: int = 110) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def workspace_tree(task: Task) -> Tree:
    """The compiled task's files as a folder tree with sizes."""
    tree = Tree(f"workspace: {len(task.files)} files, mounted at {task.mount}")
    nodes: dict[str, Tree] = {"": tree}
    for path in sorted(task.files):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in nodes:
                nodes[folder] = nodes["/".join(parts[: depth - 1])].add(Text(parts[depth - 1] + "/", style="bold"))
        label = Text(parts[-1]).append(f"  {len(task.files[path])} B", style="dim")
        if path in task.executables:
            label.append(" (executable)", style="dim")
        nodes["/".join(parts[:-1])].add(label)
    return tree


def checks_table(task: Task) -> Table:
    """One row per check: type, what it looks at, what it expects, weight and gate."""
    table = Table(title=f"checks ({len(task.checks)})", title_justify="left", show_lines=False)
    for col in ("#", "type", "target", "expected / settings", "weight", "gate"):
        table.add_column(col, overflow="fold")
    for i, check in enumerate(task.checks, 1):
        c = thaw(check)
        target = ", ".join(
            str(c[k]) if not isinstance(c[k], list) else ", ".join(map(str, c[k])) for k in _TARGET_KEYS if k in c
        )
        rest = {k: v for k, v in c.items() if k not in _QUIET_KEYS}
        table.add_row(
            str(i),
            Text(c["type"]),
            Text(_short(target, 60)),
            Text(_short(rest) if rest else ""),
            str(c.get("weight", 1)),
            "gate" if c.get("gate") else "",
        )
    return table


def rubric_table(task: Task) -> Table | None:
    if not task.rubric:
        return None
    table = Table(
        title=f"rubric (weight {task.rubric_weight} of the reward, scored by an LLM judge)", title_justify="left"
    )
    table.add_column("#")
    table.add_column("criterion", overflow="fold")
    table.add_column("weight")
    for i, crit in enumerate(task.rubric, 1):
        table.add_row(str(i), Text(str(crit["criterion"])), str(crit.get("weight", 1)))
    return table


def calibration_view(folder: Path, task: Task) -> Any:
    """calibration.yaml as a key/value table (nested values compact), with a note when it is stale."""
    path = Path(folder) / CALIBRATION_FILE
    if not path.is_file():
        return "[yellow]not calibrated yet[/yellow] (run 'clawgym bench calibrate')"
    try:
        data = load_text(path.read_text(encoding="utf-8"), str(path)).data
    except SpecError as exc:
        return Text(f"unreadable {CALIBRATION_FILE}: {exc.problems[0].format()}", style="red")
    if not isinstance(data, dict):
        return f"[red]{CALIBRATION_FILE} is not a mapping[/red]"
    table = Table(title="calibration", title_justify="left", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        table.add_row(Text(str(key)), Text(_short(value, 160)))
    seen = data.get("hash") or data.get("instance_hash")
    if seen and seen != task.hash:
        table.caption = "[red]stale: calibrated on another version of this instance; re-run calibrate[/red]"
    return table


def reviews_table(folder: Path, task: Task) -> Table | None:
    data = read_reviews(folder)
    if not data["reviews"] and not data["llm_reviews"]:
        return None
    table = Table(title="earlier reviews", title_justify="left")
    for col in ("by", "date", "decision", "state", "comment"):
        table.add_column(col, overflow="fold")
    for r in data["reviews"]:
        state = "[yellow]stale[/yellow]" if is_stale(r, task) else "current"
        table.add_row(
            Text(str(r.get("reviewer", "?"))),
            str(r.get("date", "?")),
            Text(str(r.get("decision", "?"))),
            state,
            Text(_short(r.get("comment") or "", 80)),
        )
    for r in data["llm_reviews"]:
        state = "[yellow]stale[/yellow]" if is_stale(r, task) else "current"
        model = (r.get("policy") or {}).get("model") or (r.get("policy") or {}).get("type", "?")
        outcome = (
            ("unusable answer: " + str(r["parse_error"]))
            if r.get("parse_error")
            else str((r.get("review") or {}).get("recommendation", "?"))
        )
        table.add_row(
            Text(f"llm {model}"),
            str(r.get("date", "?")),
            Text(_short(outcome, 60)),
            state,
            Text(_short((r.get("review") or {}).get("summary", ""), 80)),
        )
    return table


def show_instance(console: Console, key: str, folder: Path, task: Task) -> None:
    """Everything a reviewer needs on one screen: instruction, files, checks, rubric, calibration, reviews."""
    console.rule(Text(key, style="bold"))
    console.print(
        f"task {task.name}  category {task.category_label}  persona {task.persona}  "
        f"hash {task.hash[:16]}  spec {Path(folder) / 'task.yaml'}",
        highlight=False,
        markup=False,
    )
    console.print(Panel(Text(task.instruction.strip()), title="instruction", expand=False))
    console.print(workspace_tree(task))
    console.print(checks_table(task))
    rubric = rubric_table(task)
    if rubric is not None:
        console.print(rubric)
    console.print(calibration_view(folder, task))
    earlier = reviews_table(folder, task)
    if earlier is not None:
        console.print(earlier)
