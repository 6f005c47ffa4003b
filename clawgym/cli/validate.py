"""`clawgym validate`: schemas, references, rendering on several seeds, and the oracle/nop lint."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from ..compile.batch import compile_files
from ..errors import Problem, SpecError
from ..run.lint import static_problems
from ..run.plan import parse_seeds, plan_from_run_spec
from ..spec.library import find_root, library_for
from ..spec.load import load_file
from ..spec.validate import validate_document
from ..spec.task import Task


_SPEC_KEY = re.compile(r"^(?:apiVersion|kind)\s*:", re.M)


def spec_files(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(spec files, skipped data files): YAML files named directly or found under folders (sorted,
    unique). Found under a folder, a YAML file with neither `apiVersion:` nor `kind:` at the top
    level is data (an imported task's input file, say), not a spec, and is skipped."""
    out: dict[Path, None] = {}
    skipped: list[Path] = []
    for path in paths:
        if path.is_dir():
            for f in sorted(list(path.rglob("*.yaml")) + list(path.rglob("*.yml"))):
                if any(part.startswith(".") for part in f.parts):
                    continue
                try:
                    text = f.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = "kind:"  # unreadable: let loading report it
                if _SPEC_KEY.search(text):
                    out[f] = None
                else:
                    skipped.append(f)
        else:
            out[path] = None
    return list(out), skipped


def validate_other(path: Path) -> str | None:
    """Validate one non-task spec file (Run, Synth, compose catalog, Persona, Skill, Workspace); returns its kind."""
    doc = load_file(path)
    kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
    if kind == "Run":
        plan_from_run_spec(doc)
        return kind
    if kind == "Synth":
        from ..synth.check import check_synth_spec

        check_synth_spec(path)
        return kind
    if kind in ("ComposeDomains", "ComposeOperations"):  # the two files of a catalog check each other
        from ..synth.compose.catalog import load_catalog

        try:
            load_catalog(str(path.parent.resolve()))
        except SpecError as exc:  # each file reports its own problems (the other's when it has none)
            own = [p for p in exc.problems if p.file and Path(p.file).resolve() == path.resolve()]
            raise SpecError(own or list(exc.problems)) from None
        return kind
    problems = validate_document(doc)
    if problems:
        raise SpecError(problems)
    lib = library_for(find_root(path.resolve().parent))
    name, where = doc.data["name"], doc.where(("name",))
    if kind == "Persona" and path.parent.name == "personas":
        lib.persona(name, where)
    elif kind == "Skill":
        lib.skill(path.parent.name, where)
    elif kind == "Workspace":
        lib.workspace(path.parent.name, where)
    return kind


def validate_paths(paths: list[Path], *, static: bool, seeds: str, jobs: int, console: Console) -> None:
    """Validate every spec under `paths`; raise SpecError listing every problem found.

    Task specs are compiled for every seed (in parallel processes for large batches) and their
    checks' static rules applied; then, unless `static`, graded like synthesis grades a task: the
    oracle must score 1.0, the nop agent at most 0.1 and the tamper agent no more than nop.
    A summary line is always printed last.
    """
    seed_list = parse_seeds(seeds)
    problems: list[Problem] = []
    tasks: list[Task] = []
    failed: set[str] = set()
    files, skipped = spec_files(paths)
    if skipped:
        console.print(
            f"skipped {len(skipped)} YAML data file(s) without apiVersion or kind, e.g. {skipped[0]}",
            highlight=False,
            markup=False,
        )
    compiled = {c.path: c for c in compile_files(files, seed_list)}
    for path in files:
        result = compiled[path]
        try:
            if result.problems:
                raise SpecError(result.problems)
            kind = result.kind if result.kind == "Task" else validate_other(path)
            found = static_problems(result.tasks)
            if found:
                raise SpecError(found)
            tasks += result.tasks
            count = f", {len(result.tasks)} instances" if result.tasks else ""
            console.print(f"[green]ok[/green]   {path} ({kind}{count})", highlight=False)
        except SpecError as exc:
            problems += exc.problems
            failed.add(str(path))
            console.print(f"[red]fail[/red] {path}", highlight=False)
    if tasks and not static and not problems:
        from ..run.lint import lint_report

        console.print(
            f"grading {len(tasks)} task instances: oracle must score 1.0, nop at most 0.1, tamper no more than nop...",
            highlight=False,
        )
        report = lint_report(tasks, jobs=jobs)
        problems += report.problems
        bad = {p.file for p in report.problems}
        for spec_file in dict.fromkeys(t.spec_file for t in tasks):
            mark = "[red]fail[/red]" if spec_file in bad else "[green]ok[/green]  "
            console.print(f"{mark} {spec_file} ({report.scores(spec_file)})", highlight=False)
            if spec_file in bad:
                failed.add(spec_file)
    summary = _summary(len(files), len(failed), len(problems), len(tasks), static)
    if problems:
        raise ValidationFailed(problems, summary)
    console.print(f"[green]{summary}[/green]", highlight=False)


def _summary(files: int, failed: int, problems: int, instances: int, static: bool) -> str:
    if problems:
        return (
            f"{problems} problem{'s' if problems != 1 else ''} found in {failed} of {files} "
            f"file{'s' if files != 1 else ''}"
        )
    graded = "" if static or not instances else f"; {instances} instances: oracle 1.0, nop <= 0.1, tamper <= nop"
    return f"{files} file{'s' if files != 1 else ''} valid{graded}"


class ValidationFailed(SpecError):
    """The problems `clawgym validate` found, with the summary line printed after them."""

    def __init__(self, problems: list[Problem], summary: str):
        super().__init__(problems)
        self.summary = summary
