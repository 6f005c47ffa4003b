"""Write a compiled task instance back out as a concrete task spec a person can review.

The concrete spec has no params, no vars and no Jinja: literal input files, the rendered
instruction, the reference solution and checks with their expected values. Workspace template,
persona and skills stay references (their files are rebuilt identically when it is compiled), so
the spec lists only the files the task itself adds or changes.
"""

from __future__ import annotations

from typing import Any

from ..spec.write import literal as _literal
from ..spec.task import Task, thaw

BOOTSTRAP_NAMES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")
_KEEP = ("title", "description", "category", "subcategory", "difficulty", "tags")


def _solution_step(step: dict) -> dict:
    out = dict(step)
    if "script" in out:  # a script file becomes its inline source
        kind = "python" if out.pop("interpreter", "bash") == "python3" else "exec"
        source = out.pop("source")
        out.pop("script")
        out[kind] = source if kind == "python" else f"bash <<'CLAWGYM_EOF'\n{source}\nCLAWGYM_EOF"
    return out


def concrete_spec(
    family: dict,
    task: Task,
    *,
    name: str,
    baseline: dict[str, bytes],
    baseline_executables: frozenset[str],
    extra: dict[str, Any] | None = None,
) -> dict:
    """The concrete spec (as data) for `task`, an instance of `family` (the family spec's data).

    `baseline` holds the files the workspace, persona, skills and bootstrap give on their own;
    only files that differ from it are written out.
    """
    spec: dict[str, Any] = {"apiVersion": "clawgym/v1", "kind": "Task", "name": name}
    spec.update({k: family[k] for k in _KEEP if k in family})
    spec.update(persona=task.persona, skills=list(task.skills))
    if family.get("operations"):
        spec["operations"] = list(family["operations"])
    spec["workspace"] = task.workspace
    files, bootstrap, memory = [], {}, {}
    for path in sorted(task.files):
        content = task.files[path]
        if baseline.get(path) == content and (path in task.executables) == (path in baseline_executables):
            continue
        text = content.decode("utf-8")  # synthesized inputs are text; binary would not be reviewable
        if path in BOOTSTRAP_NAMES:
            bootstrap[path] = _literal(text)
        elif path == "MEMORY.md":
            memory["long_term"] = _literal(text)
        elif path.startswith("memory/") and path.count("/") == 1 and path.endswith(".md"):
            memory.setdefault("daily", {})[path[7:-3]] = _literal(text)
        else:
            entry: dict[str, Any] = {"path": path, "content": text}
            if path in task.executables:
                entry["executable"] = True
            files.append(entry)
    if files:
        spec["files"] = files
    if bootstrap:
        spec["bootstrap"] = bootstrap
    if memory:
        spec["memory"] = memory
    spec["instruction"] = _literal(task.instruction)
    spec["solution"] = _literal([_solution_step(thaw(s)) for s in task.solution])
    spec["checks"] = _literal(thaw(task.checks))
    if task.rubric:
        spec["rubric"] = _literal(thaw(task.rubric))
        spec["rubric_weight"] = task.rubric_weight
    if family.get("limits"):
        spec["limits"] = thaw(family["limits"])
    if task.tools:
        spec["tools"] = _literal(thaw(task.tools))
    if family.get("clock"):
        spec["clock"] = task.clock
    if task.network:
        spec["network"] = True
    if family.get("mount"):
        spec["mount"] = task.mount
    spec.update(extra or {})
    return spec


def bare_spec(family: dict, task: Task) -> dict:
    """The task's references without its own content: what the baseline files come from."""
    bare: dict[str, Any] = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": "baseline",
        "category": task.category,
        "persona": task.persona,
        "skills": list(task.skills),
        "workspace": task.workspace,
    }
    if family.get("clock"):
        bare["clock"] = task.clock
    if family.get("mount"):
        bare["mount"] = task.mount
    bare.update(instruction="-", solution=[{"exec": "true"}], checks=[{"type": "file_exists", "path": "-"}])
    return bare
