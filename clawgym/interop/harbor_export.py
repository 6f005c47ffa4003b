"""`clawgym export harbor SPEC... --out OUT`: task specs → Harbor (Terminal-Bench 2) task folders.

Each spec, compiled at one seed, becomes `OUT/<name>/`:

- `instruction.md`: the rendered instruction; `task.toml`: metadata, timeouts and resources;
- `environment/Dockerfile` + `environment/workspace/`: a public Python image with the task's
  workspace files copied to WORKDIR = the task's mount (only what the agent may see);
- `solution/solve.sh`: the reference solution steps as one bash script;
- `tests/test.sh`: grades the final workspace with the task's own checks, vendored beside it
  (`clawgym.zip` = the clawgym package, `task.json` = the compiled checks with their expected
  values, `original/` = the pristine workspace, `task_files/` = grading scripts), and writes
  `/logs/verifier/reward.txt` and `reward.json` (see harbor_grade.py). Harbor copies tests/ in
  only after the agent finished, so expected values and check code never reach the agent.

Tasks Harbor cannot express are refused with a reason per task: reference steps that are
simulated tool calls (`message`, `cron`), checks that grade recorded tool calls, an offline web
corpus, checks of plugin types, and tasks that already are Harbor tasks (`harbor_tests`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import ClawgymError
from ..files.atomic import write_lines
from ..files.textsafe import printable
from ..spec.task import Task, thaw
from .folders import swap_in
from .portable import JSONSCHEMA_PIN, Refused, find_specs, grader_needs, grading_refusals, write_bundle

IMAGE = "python:3.12-slim-bookworm"
AUTHOR = "clawgym export"
REPORT = "export-report.jsonl"


@dataclass
class Outcome:
    """What happened to one spec."""

    spec: str
    status: str  # exported | refused
    name: str | None = None  # the folder under OUT
    reasons: list[str] = field(default_factory=list)  # refusal reasons, or notes on an export


# ---------------------------------------------------------------------------------------------
# What Harbor cannot express


def refusal_reasons(task: Task) -> list[str]:
    """Every reason `task` cannot become a Harbor task (empty: it can)."""
    reasons = []
    for i, step in enumerate(task.solution):
        for kind in ("message", "cron"):
            if kind in step:
                reasons.append(
                    f"solution step {i + 1} is a `{kind}` step (a simulated tool call recorded in "
                    "the trajectory), which solution/solve.sh cannot express"
                )
    reasons += grading_refusals(task, payload_ok=False)
    if task.tools.get("corpus"):
        reasons.append("the task's offline web (tools.corpus) has no Harbor counterpart")
    return reasons


# ---------------------------------------------------------------------------------------------
# The folder


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def task_toml(task: Task, spec_rel: str, tags: Iterable[str] = ()) -> str:
    limits = task.limits
    sections: list[tuple[str, dict[str, Any]]] = [
        ("task", {"name": task.name}),
        (
            "metadata",
            {
                "author": AUTHOR,
                "title": task.title or task.name,
                "category": task.category or None,
                "subcategory": task.subcategory or None,
                "difficulty": task.difficulty or None,
                "tags": [*dict.fromkeys([*map(str, tags), "clawgym"])],
                "clawgym_spec": spec_rel,
                "clawgym_seed": task.seed,
                "clawgym_hash": task.hash,
            },
        ),
        ("verifier", {"timeout_sec": float(limits.get("verify_seconds", 300))}),
        ("agent", {"timeout_sec": float(limits.get("seconds", 600))}),
        (
            "environment",
            {
                "cpus": 1,
                "memory_mb": int(limits.get("memory_mb", 2048)),
                "gpus": 0,
                "allow_internet": bool(task.network),
            },
        ),
    ]
    lines = [f"# Exported by ClawGym from {spec_rel} (seed {task.seed}).", 'version = "1.0"']
    for title, values in sections:
        lines += ["", f"[{title}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items() if v is not None]
    return "\n".join(lines) + "\n"


def _delimiter(kind: str, i: int, text: str) -> str:
    """A heredoc delimiter found nowhere in `text` (derived from it, so exports are reproducible)."""
    salt = 0
    while True:
        digest = hashlib.sha256(f"{salt}:{text}".encode()).hexdigest()[:6].upper()
        word = f"CLAWGYM_{kind}_{i}_{digest}"
        if word not in text:
            return word
        salt += 1


def _heredoc(command: str, body: str, kind: str, i: int) -> str:
    word = _delimiter(kind, i, body)
    return f"{command} <<'{word}'\n{body if body.endswith(chr(10)) else body + chr(10)}{word}"


def solve_script(task: Task) -> str:
    """The reference solution as one bash script; each step in a subshell starting at the mount."""
    mount = shlex.quote(task.mount)
    out = [
        "#!/bin/bash",
        f"# Reference solution of {task.id}, exported by ClawGym.",
        "# Each step runs in its own subshell in the workspace, as the oracle agent runs it.",
        'fail() { echo "solve.sh: step $1 failed (exit status $2)" >&2; exit 1; }',
        "",
    ]
    for i, step in enumerate(task.solution, 1):
        label = str(step.get("name") or "").replace("\n", " ")
        if "exec" in step:
            body, kind = str(step["exec"]).rstrip("\n"), "exec"
        elif "python" in step:
            body, kind = _heredoc("python3 -", str(step["python"]), "PY", i), "python"
        elif "script" in step:
            interp = "python3 -" if step.get("interpreter") == "python3" else "bash -s"
            body, kind = _heredoc(interp, str(step["source"]), "SCRIPT", i), f"script {step['script']}"
        else:
            path, content = str(step["write"]["path"]), str(step["write"]["content"])
            q = shlex.quote(path)
            if content.endswith("\n") or not content:
                write = _heredoc(f"cat > {q}", content, "FILE", i) if content else f": > {q}"
            else:  # a heredoc always ends with a newline: strip the one the file does not have
                write = "printf '%s' \"$(" + _heredoc("cat", content, "FILE", i) + '\n)" > ' + q
            body, kind = f'mkdir -p "$(dirname {q})" && {write}', f"write {path}"
        out += [
            f"# step {i}: {kind}" + (f" ({label})" if label else ""),
            f"cd {mount} || exit 1",
            "(",
            body,
            f") </dev/null || fail {i} $?",
            "",
        ]
    out.append("exit 0")
    return "\n".join(out) + "\n"


def test_script(task: Task) -> str:
    mount = shlex.quote(task.mount)
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"# Grades the final workspace with the ClawGym checks of {task.id} (clawgym export harbor).",
                "# clawgym.zip holds the clawgym package, task.json the compiled checks and expected values,",
                "# original/ the pristine workspace, task_files/ the grading scripts. Only python3 is needed.",
                "mkdir -p /logs/verifier",
                'TESTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
                f'exec python3 "$TESTS/clawgym.zip" --tests "$TESTS" --workspace {mount} --logs /logs/verifier',
            ]
        )
        + "\n"
    )


def dockerfile(task: Task, needs_jsonschema: bool, spec_rel: str) -> str:
    lines = [
        f"# Exported by ClawGym from {spec_rel} (seed {task.seed}): the agent's workspace, nothing else.",
        f"FROM {IMAGE}",
    ]
    if needs_jsonschema:
        lines.append(f"RUN pip install --no-cache-dir {JSONSCHEMA_PIN}")
    lines += [f"WORKDIR {task.mount}", f"COPY workspace/ {task.mount.rstrip('/')}/"]
    return "\n".join(lines) + "\n"


def write_folder(task: Task, target: Path, spec_rel: str, tags: Iterable[str] = ()) -> list[str]:
    """Write the Harbor folder of `task` at `target` (replaced atomically); returns notes."""
    from ..compile.workspace import write_files

    notes = []
    _, needs_jsonschema = grader_needs([thaw(c) for c in task.checks])
    if task.rubric:
        notes.append(f"rubric ({len(task.rubric)} criteria) left out: Harbor's reward is the code checks' reward")
    if needs_jsonschema:
        notes.append(
            f"the image installs {JSONSCHEMA_PIN} with pip for json_schema checks, so importing this "
            "folder back into ClawGym is refused (its build needs the network)"
        )
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "environment").mkdir(parents=True)
        (tmp / "instruction.md").write_text(
            task.instruction if task.instruction.endswith("\n") else task.instruction + "\n", encoding="utf-8"
        )
        (tmp / "task.toml").write_text(task_toml(task, spec_rel, tags), encoding="utf-8")
        (tmp / "environment" / "Dockerfile").write_text(dockerfile(task, needs_jsonschema, spec_rel), encoding="utf-8")
        write_files(task.files, task.executables, tmp / "environment" / "workspace")
        if task.solution:
            (tmp / "solution").mkdir()
            (tmp / "solution" / "solve.sh").write_text(solve_script(task), encoding="utf-8")
            os.chmod(tmp / "solution" / "solve.sh", 0o755)
        else:
            notes.append("no reference solution: solution/ left out")
        tests = tmp / "tests"
        write_bundle(task, tests)
        (tests / "test.sh").write_text(test_script(task), encoding="utf-8")
        os.chmod(tests / "test.sh", 0o755)
        swap_in(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return notes


# ---------------------------------------------------------------------------------------------
# Specs in, folders out


def _spec_rel(task: Task, library_root: Path) -> str:
    """The spec file relative to its library root (never a path of this machine)."""
    try:
        return Path(task.spec_file).resolve().relative_to(library_root.resolve()).as_posix()
    except ValueError:
        return Path(task.spec_file).name


def export_one(spec_path: Path, out: Path, seed: int, taken: set[str]) -> Outcome:
    """Export one spec; never raises for a bad spec or a task Harbor cannot express."""
    from ..compile.compiler import compile_task, load_task_spec

    outcome = Outcome(spec=str(spec_path), status="refused")
    try:
        spec = load_task_spec(spec_path)
        task = compile_task(spec, seed)
        outcome.name = task.name
        reasons = refusal_reasons(task)
        if task.name in taken:
            reasons.append(f"another exported spec is also named {task.name!r}")
        if reasons:
            outcome.reasons = reasons
            return outcome
        outcome.reasons = write_folder(
            task, out / task.name, _spec_rel(task, spec.library.root), spec.data.get("tags") or ()
        )
        taken.add(task.name)
    except Refused as e:
        outcome.reasons = [str(e)]
        return outcome
    except ClawgymError as e:
        outcome.reasons = [e.format()]
        return outcome
    outcome.status = "exported"
    return outcome


def export_command(specs: list[Path], out: Path, *, seed: int = 0, console: Any = None) -> list[Outcome]:
    """The CLI: export every spec, print refusals and notes, write the report, print the summary."""
    paths = find_specs(specs)
    if not paths:
        raise ClawgymError(
            f"no task specs found in {', '.join(map(str, specs))}",
            hint="give task spec files (kind: Task) or folders holding them",
        )
    out.mkdir(parents=True, exist_ok=True)
    outcomes, taken = [], set()
    for path in paths:
        outcome = export_one(path, out, seed, taken)
        outcomes.append(outcome)
        if console is not None:
            label = "exported" if outcome.status == "exported" else "refused "
            console.print(
                printable(
                    f"{label} {outcome.name or path}"
                    + (f" → {out / outcome.name}" if outcome.status == "exported" else "")
                ),
                highlight=False,
                markup=False,
            )
            for reason in outcome.reasons:
                console.print(
                    printable(f"  {'note' if outcome.status == 'exported' else 'why '}: {reason}"),
                    highlight=False,
                    markup=False,
                )
    report = out / REPORT
    write_lines(report, (asdict(o) for o in outcomes))
    done = sum(o.status == "exported" for o in outcomes)
    if console is not None:
        console.print(
            f"{len(outcomes)} spec(s): {done} exported, {len(outcomes) - done} refused; "
            f"Harbor folders in {out}, report in {report}",
            highlight=False,
            markup=False,
        )
    return outcomes
