"""`clawgym render`: show one compiled task instance in the terminal."""

from __future__ import annotations

import json

from rich.console import Console
from rich.panel import Panel
from rich.tree import Tree

from ..compile.compiler import STEP_KINDS
from ..spec.task import Task, thaw


def print_task(task: Task, console: Console, *, show_files: bool = False) -> None:
    console.print(
        f"[bold]{task.name}[/bold] seed {task.seed}  hash {task.hash[:16]}  "
        f"category {task.category_label}  persona {task.persona}",
        highlight=False,
    )
    if task.params:
        console.print("params: " + json.dumps(thaw(task.params), ensure_ascii=False), highlight=False)
    console.print(Panel(task.instruction.strip(), title="instruction", expand=False))
    tree = Tree(f"workspace ({len(task.files)} files, mounted at {task.mount})")
    for path, content in sorted(task.files.items()):
        tree.add(f"{path}  [dim]{len(content)} B[/dim]")
    console.print(tree)
    if show_files:
        for path, content in sorted(task.files.items()):
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                continue
            console.print(Panel(text, title=path, expand=False), highlight=False, markup=False)
    console.print(f"solution: {len(task.solution)} step(s)")
    for i, step in enumerate(task.solution):
        kind = next(k for k in STEP_KINDS if k in step)
        body = (
            f"{step['write']['path']} ({len(step['write']['content'])} chars)"
            if kind == "write"
            else json.dumps(step[kind], ensure_ascii=False)
            if kind in ("message", "cron")
            else step[kind]
        )
        first = str(body).strip().splitlines()[0] if str(body).strip() else ""
        console.print(f"  {i + 1}. {kind}: {first[:100]}", highlight=False, markup=False)
    console.print(f"checks: {len(task.checks)}")
    for check in task.checks:
        shown = {k: v for k, v in thaw(check).items() if k != "type"}
        text = json.dumps(shown, ensure_ascii=False)
        console.print(
            f"  - {check['type']} {text[:160]}{'…' if len(text) > 160 else ''}", highlight=False, markup=False
        )
