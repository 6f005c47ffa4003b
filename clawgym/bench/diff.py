"""`clawgym diff BASE_REV`: which task instances a change adds, changes or removes, by content hash.

A spec edit can change many instances, or none (a comment, a reordered key); a template edit can
change what the agent sees in ways the YAML diff hides. So both sides are compiled: BASE_REV's
files are exported with `git archive` into a temporary folder (the user's working tree and index
are never touched), the working tree is the other side, instances are matched by task name and
seed, and their hashes compared. For a changed instance the rendered instruction and the checks
(as YAML) are diffed, and the input files that changed are named.
"""

from __future__ import annotations

import difflib
import io
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ClawgymError, Problem
from ..spec.task import Task, thaw

_SAME_FIELDS = ("instruction", "checks", "rubric", "files", "spec_file", "hash", "id")


def git(args: list[str], cwd: Path) -> bytes:
    """Run git; a failure is a ClawgymError with git's own message."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=300)
    except FileNotFoundError:
        raise ClawgymError("git is not installed", hint="install git to compare against a revision") from None
    if out.returncode != 0:
        raise ClawgymError(f"git {args[0]} failed: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout


def repo_root(cwd: Path) -> Path:
    """The top folder of the git checkout holding `cwd`."""
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise ClawgymError(f"{cwd} is not inside a git repository",
                           hint="run 'clawgym diff' from a git checkout of your specs")
    return Path(out.stdout.strip())


def resolve_rev(rev: str, root: Path) -> str:
    """The commit id of `rev`, or a ClawgymError naming it."""
    out = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root,
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        raise ClawgymError(f"revision {rev!r} does not exist in {root}",
                           hint="give a commit, branch or tag, e.g. HEAD~1 or main; see 'git log --oneline'")
    return out.stdout.strip()


def export_rev(commit: str, root: Path, dest: Path) -> None:
    """Write the tree of `commit` into `dest` (git archive; nothing in the checkout changes)."""
    data = git(["archive", "--format=tar", commit], root)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - Python before 3.11.4
            tar.extractall(dest)


@dataclass
class Side:
    """The compiled instances of one side, by key (name@seed), and the specs that did not compile."""

    tasks: dict[str, Task] = field(default_factory=dict)
    specs: dict[str, str] = field(default_factory=dict)  # key -> spec path relative to the root
    broken: list[Problem] = field(default_factory=list)


def spec_files(base: Path, paths: list[str]) -> list[Path]:
    """YAML files under `paths` (relative to `base`); paths missing on this side give nothing."""
    out: list[Path] = []
    for rel in paths:
        p = base / rel
        if p.is_dir():
            out += sorted(f for f in p.rglob("*.y*ml") if f.suffix in (".yaml", ".yml"))
        elif p.is_file():
            out.append(p)
    return list(dict.fromkeys(out))


def collect(base: Path, paths: list[str], seeds: list[int]) -> Side:
    """Compile every task spec under `paths`: seed 0, plus `seeds` for specs whose instances vary."""
    from ..compile.batch import compile_files
    from ..spec.load import load_file

    files = spec_files(base, paths)
    all_seeds = sorted({0, *seeds})
    side = Side()
    for compiled in compile_files(files, all_seeds):
        if compiled.problems:
            side.broken += compiled.problems
            continue
        rel = compiled.path.relative_to(base).as_posix()
        varies = None
        for task in compiled.tasks:
            if task.seed != 0:
                if varies is None:
                    data = load_file(compiled.path).data
                    varies = bool(data.get("params")) or isinstance(data.get("persona"), list)
                if not varies:
                    continue
            key = task.id
            if key in side.tasks:
                key = f"{rel}:{task.id}"  # two specs with one task name: keep both apart
            side.tasks[key] = task
            side.specs[key] = rel
    for problem in side.broken:
        if problem.file:
            try:
                problem.file = Path(problem.file).relative_to(base).as_posix()
            except ValueError:
                pass
    return side


@dataclass
class Change:
    key: str
    spec: str
    instruction_diff: list[str]
    checks_diff: list[str]
    files: dict[str, list[str]]     # added / removed / changed input paths
    other: list[str]                # other fields that changed (solution, limits, grading scripts...)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "spec": self.spec, "instruction_diff": self.instruction_diff,
                "checks_diff": self.checks_diff, "files": self.files, "other": self.other}


@dataclass
class Diff:
    base: str
    added: list[tuple[str, str]]
    removed: list[tuple[str, str]]
    changed: list[Change]
    unchanged: int
    broken_base: list[Problem]
    broken_head: list[Problem]

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "added": [{"key": k, "spec": s} for k, s in self.added],
                "removed": [{"key": k, "spec": s} for k, s in self.removed],
                "changed": [c.to_dict() for c in self.changed], "unchanged": self.unchanged,
                "broken": {"base": [p.format() for p in self.broken_base],
                           "head": [p.format() for p in self.broken_head]}}


def _checks_yaml(task: Task) -> str:
    data: dict[str, Any] = {"checks": thaw(task.checks)}
    if task.rubric:
        data["rubric"] = thaw(task.rubric)
        data["rubric_weight"] = task.rubric_weight
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def _udiff(a: str, b: str, name: str) -> list[str]:
    return [line.rstrip("\n") for line in difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), f"a/{name}", f"b/{name}")]


def compare_tasks(key: str, spec: str, old: Task, new: Task) -> Change:
    """What changed between two compiled versions of one instance."""
    import hashlib

    digest = {side: {p: hashlib.sha256(b).hexdigest() for p, b in t.files.items()} for side, t in
              (("old", old), ("new", new))}
    a, b = digest["old"], digest["new"]
    files = {"added": sorted(set(b) - set(a)), "removed": sorted(set(a) - set(b)),
             "changed": sorted(p for p in set(a) & set(b) if a[p] != b[p])}
    old_d, new_d = old.to_dict(with_files=False), new.to_dict(with_files=False)
    other = sorted(k for k in set(old_d) | set(new_d) if k not in _SAME_FIELDS and old_d.get(k) != new_d.get(k))
    if dict(old.extra_hashed) != dict(new.extra_hashed):
        other.append("grading scripts")
    if old.executables != new.executables:
        other.append("executable bits")
    if old.rubric_weight != new.rubric_weight and "rubric weight" not in other:
        other.append("rubric weight")
    return Change(key, spec, _udiff(old.instruction, new.instruction, f"{key}/instruction"),
                  _udiff(_checks_yaml(old), _checks_yaml(new), f"{key}/checks.yaml"), files, other)


def diff_since(rev: str, *, paths: list[str], seeds: list[int], cwd: Path) -> Diff:
    """Compare the task instances under `paths` at `rev` with the working tree of `cwd`'s checkout."""
    root = repo_root(cwd)
    commit = resolve_rev(rev, root)
    rel_paths = []
    for p in paths:
        full = (cwd / p).resolve()
        try:
            rel_paths.append(full.relative_to(root.resolve()).as_posix())
        except ValueError:
            raise ClawgymError(f"--paths {p} is outside the repository {root}") from None
    with tempfile.TemporaryDirectory(prefix="clawgym-diff-") as tmp:
        export_rev(commit, root, Path(tmp))
        base = collect(Path(tmp), rel_paths, seeds)
    head = collect(root, rel_paths, seeds)
    added = [(k, head.specs[k]) for k in head.tasks if k not in base.tasks]
    removed = [(k, base.specs[k]) for k in base.tasks if k not in head.tasks]
    changed, same = [], 0
    for key, task in head.tasks.items():
        old = base.tasks.get(key)
        if old is None:
            continue
        if old.hash == task.hash:
            same += 1
        else:
            changed.append(compare_tasks(key, head.specs[key], old, task))
    return Diff(rev, sorted(added), sorted(removed), sorted(changed, key=lambda c: c.key), same,
                base.broken, head.broken)


def print_diff(diff: Diff, console: Any, *, full: bool = True) -> None:
    """The listing, then for each changed instance its diffs (unless `full` is False)."""
    changed = [(c.key, c.spec) for c in diff.changed]
    for label, items, style in (("added", diff.added, "green"), ("changed", changed, "yellow"),
                                ("removed", diff.removed, "red")):
        for key, spec in items:
            console.print(f"{label:<8} {key}  ({spec})", style=style, markup=False, highlight=False)
    for side, problems in (("at " + diff.base, diff.broken_base), ("now", diff.broken_head)):
        for problem in problems:
            console.print(f"{'broken':<8} {side}: {problem.format()}", style="red", markup=False, highlight=False)
    console.print(f"{len(diff.added)} added, {len(diff.changed)} changed, {len(diff.removed)} removed, "
                  f"{diff.unchanged} unchanged since {diff.base}", highlight=False, markup=False)
    if not full:
        return
    for change in diff.changed:
        console.rule(change.key, style="yellow")
        for kind in ("added", "removed", "changed"):
            if change.files[kind]:
                console.print(f"input files {kind}: {', '.join(change.files[kind])}", markup=False, highlight=False)
        if change.other:
            console.print(f"also changed: {', '.join(change.other)}", markup=False, highlight=False)
        for line in change.instruction_diff + change.checks_diff:
            style = ("bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                     else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else None)
            console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
