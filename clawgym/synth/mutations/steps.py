"""The step gate: each step the reference declares is removed in turn, the rest runs in a fresh
sandbox on the pristine inputs, and the reward must drop below 1.0. A reference declares steps as
functions called from `main()`, one call per step (a call without arguments is the reader, not a
step), or, as one script, a comment line at the start of each step's block (`# step: NAME`,
`# step 2: NAME` or `# 2. NAME`; the code before the first is the reader). Anything else (the
hand-written families) declares no removable steps and is skipped with the reason."""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ...agent import make_agent
from ...errors import InfraError
from ...files import safefs
from ...files.tempdirs import make_temp
from ...records.trajectory import Trajectory
from ...run.trial import sandbox_limits
from ...sandbox import create_sandbox
from ...spec.task import Task, thaw
from .records import EPS, OK, PROBLEM, SKIPPED, Grading, Mutation


def run_reference(task: Task, pristine: Path, workspace: Path, sandbox: dict | None = None) -> Trajectory:
    """Copy `pristine` to `workspace` and run the task's reference solution there in a fresh sandbox."""
    shutil.copytree(pristine, workspace, symlinks=True)
    with create_sandbox(sandbox, workspace, limits=sandbox_limits(task), network=task.network, mount=task.mount) as box:
        trajectory = make_agent({"type": "oracle"}).run(task, box)
    if trajectory.outcome == "error":
        raise InfraError(trajectory.error or "the reference solution reported an infrastructure error")
    return trajectory


@dataclass(frozen=True)
class Step:
    """A step a reference declares: its number, its name, its lines (0-based, `last` included) and,
    where removing those lines would not remove the step, why."""

    number: int
    name: str
    first: int
    last: int
    unclean: str = ""


_MARK = re.compile(r"^#\s*(?:step\b\s*\d*\s*[:.)-]?|\d+[.)])\s*(?P<name>\S.*?)\s*$", re.I)


def declared_steps(code: str) -> tuple[list[Step], str]:
    """The steps a Python reference declares (see the module docstring), and why none where none."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [], f"the reference does not parse ({exc.msg}, line {exc.lineno})"
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    main = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"), None)
    if main is not None:
        calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        steps: list[Step] = []
        for stmt in main.body:
            value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Expr, ast.Assign)) else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in defs:
                if value.args or value.keywords:  # the reader takes no arguments: it is not a step
                    name, end = value.func.id, stmt.end_lineno or stmt.lineno
                    unclean = f"{name}() is called {calls.count(name)} times" if calls.count(name) > 1 else ""
                    steps.append(Step(len(steps) + 1, name, stmt.lineno - 1, end - 1, unclean))
        if steps:
            return steps, ""
    lines = code.splitlines()
    marks = [(i, m.group("name")) for i, line in enumerate(lines) if (m := _MARK.match(line))]
    if marks:
        ends = [i - 1 for i, _ in marks[1:]] + [len(lines) - 1]
        return [Step(n + 1, name, i, end) for n, ((i, name), end) in enumerate(zip(marks, ends))], ""
    return [], (
        "the reference declares no removable steps (neither a main() calling one function per step "
        "nor a '# step: NAME' comment opening each step's block)"
    )


def without_step(code: str, step: Step) -> str:
    """The reference with `step`'s lines removed."""
    lines = code.splitlines()
    return "\n".join(lines[: step.first] + lines[step.last + 1 :]) + "\n"


def _task_steps(task: Task) -> tuple[list[tuple[int, str, Step]], str]:
    """(index of the solution entry, its code, a step) for each declared step, or why none."""
    found: list[tuple[int, str, Step]] = []
    why = "the reference has no Python step"
    for k, entry in enumerate(task.solution):
        code = entry.get("python")
        if isinstance(code, str):
            steps, why = declared_steps(code)
            found += [(k, code, s) for s in steps]
    if not found and len(task.solution) > 1:
        why = f"a hand-written reference of {len(task.solution)} solution steps: {why}"
    return found, why


def step_mutations(task: Task, pristine: Path, *, sandbox: dict | None = None) -> list[Mutation]:
    """Remove each declared step of the reference in turn, run the rest on a copy of `pristine` in a
    fresh sandbox (`sandbox`: its spec, as for `create_sandbox`), and require the reward to drop."""
    found, why = _task_steps(task)
    if not found:
        return [Mutation("step", "remove each step", "reference", None, SKIPPED, why)]
    root = make_temp("mutations")
    out = []
    try:
        for k, code, step in found:
            label = f"step {step.number} '{step.name}'"
            if step.unclean:
                why = f"{label} cannot be removed cleanly: {step.unclean}"
                out.append(Mutation("step", f"remove {label}", step.name, None, SKIPPED, why))
                continue
            changed = without_step(code, step)
            try:
                compile(changed, "reference", "exec")
            except SyntaxError as exc:
                reason = f"{label} cannot be removed cleanly: the rest does not parse ({exc.msg}, line {exc.lineno})"
                out.append(Mutation("step", f"remove {label}", step.name, None, SKIPPED, reason))
                continue
            solution = [dict(e) for e in thaw(task.solution)]
            solution[k]["python"] = changed
            workspace = root / f"step-{k}-{step.number}"
            trajectory = run_reference(
                dataclasses.replace(task, solution=tuple(solution)), pristine, workspace, sandbox
            )
            verdict = Grading(task, pristine, trajectory.to_dict(), sandbox).verdict(workspace)
            last = (trajectory.error or "").strip().splitlines()[-1:]
            stops = f" (the rest then stops: {last[0][:160]})" if last else ""
            if verdict.reward < 1 - EPS:
                reason = f"{label} is graded: without it the reward is {verdict.reward:.3f}{stops}"
                out.append(Mutation("step", f"remove {label}", step.name, verdict.reward, OK, reason))
            else:
                reason = (
                    f"{label} can be dropped without changing any graded value: remove it from the chain "
                    "or make the data need it"
                )
                out.append(Mutation("step", f"remove {label}", step.name, verdict.reward, PROBLEM, reason))
            safefs.remove_tree(workspace)
    finally:
        safefs.remove_tree(root)
    return out
