"""`clawgym diff BASE_REV`: which task instances a change adds, changes or removes, by content hash.

A spec edit can change many instances, or none (a comment, a reordered key); a template edit can
change what the agent sees in ways the YAML diff hides. So both sides are compiled: BASE_REV's
files are exported with `git archive` into a temporary folder (the user's working tree and index
are never touched), the working tree is the other side, instances are matched by task name and
seed, and their hashes compared. Only the spec files the change can affect are compiled (their
own file or a file next to them changed; everything when a shared file such as a persona
changed). Each changed spec file's own change (the YAML diff of params, checks, files...) comes
with its rendered effect on a few seeds: the params drawn, the input files, the instruction and
the checks. `diff_format.py` prints it as text or as markdown for a pull-request comment.
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
from ..files.textsafe import split_lines

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
        raise ClawgymError(
            f"{cwd} is not inside a git repository", hint="run 'clawgym diff' from a git checkout of your specs"
        )
    return Path(out.stdout.strip())


def resolve_rev(rev: str, root: Path) -> str:
    """The commit id of `rev`, or a ClawgymError naming it."""
    out = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root, capture_output=True, text=True
    )
    if out.returncode != 0 or not out.stdout.strip():
        raise ClawgymError(
            f"revision {rev!r} does not exist in {root}",
            hint="give a commit, branch or tag, e.g. HEAD~1 or main; see 'git log --oneline'",
        )
    return out.stdout.strip()


def export_rev(commit: str, root: Path, dest: Path, paths: list[str] | None = None) -> None:
    """Write the tree of `commit` (only `paths` that exist there, when given) into `dest` (git
    archive; nothing in the checkout changes)."""
    if paths is not None:
        paths = [
            p
            for p in paths
            if subprocess.run(["git", "cat-file", "-e", f"{commit}:{p}"], cwd=root, capture_output=True).returncode == 0
        ]
        if not paths:
            return
    data = git(["archive", "--format=tar", commit, *(["--", *paths] if paths else [])], root)
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


def collect(base: Path, paths: list[str], seeds: list[int], only: set[str] | None = None) -> Side:
    """Compile every task spec under `paths` (only those whose path relative to `base` is in
    `only`, when given): seed 0, plus `seeds` for specs whose instances vary."""
    from ..compile.batch import compile_files
    from ..spec.load import load_file

    files = spec_files(base, paths)
    if only is not None:
        files = [f for f in files if f.relative_to(base).as_posix() in only]
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
    files: dict[str, list[str]]  # added / removed / changed input paths
    other: list[str]  # other fields that changed (solution, limits, grading scripts...)
    params: dict[str, list[Any]] = field(default_factory=dict)  # name -> [old, new] where they differ
    lines: dict[str, list[int]] = field(default_factory=dict)  # changed text file -> [old, new] line counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "spec": self.spec,
            "params": self.params,
            "instruction_diff": self.instruction_diff,
            "checks_diff": self.checks_diff,
            "files": self.files,
            "lines": self.lines,
            "other": self.other,
        }


@dataclass
class SpecChange:
    """A spec file's own change: which top-level sections differ and their YAML diff."""

    spec: str
    status: str  # added, removed or changed
    sections: list[str]
    diff: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "status": self.status, "sections": self.sections, "diff": self.diff}


def _yaml_of(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def spec_change(rel: str, old: Path | None, new: Path | None) -> SpecChange | None:
    """The YAML diff of each top-level section (params, vars, files, checks...) that differs;
    None when the parsed spec is the same (a comment or a reordered key changed)."""
    if old is None or new is None:
        return SpecChange(rel, "added" if old is None else "removed", [], [])
    a, b = _yaml_of(old), _yaml_of(new)
    keys = list(dict.fromkeys([*b, *a]))
    sections = [k for k in keys if a.get(k) != b.get(k)]
    if not sections:
        return None
    lines: list[str] = []
    for key in sections:
        dump = {
            side: yaml.safe_dump({key: d[key]}, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)
            if key in d
            else ""
            for side, d in (("a", a), ("b", b))
        }
        lines += _udiff(dump["a"], dump["b"], f"{rel} {key}")
    return SpecChange(rel, "changed", sections, lines)


@dataclass
class Diff:
    base: str
    added: list[tuple[str, str]]
    removed: list[tuple[str, str]]
    changed: list[Change]
    unchanged: int
    broken_base: list[Problem]
    broken_head: list[Problem]
    specs: list[SpecChange] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    not_compiled: int = 0  # spec files left out: nothing they depend on changed
    compiled_all: str | None = None  # why every spec was compiled (a shared file changed), if so

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "seeds": self.seeds,
            "specs": [c.to_dict() for c in self.specs],
            "not_compiled": self.not_compiled,
            "compiled_all": self.compiled_all,
            "added": [{"key": k, "spec": s} for k, s in self.added],
            "removed": [{"key": k, "spec": s} for k, s in self.removed],
            "changed": [c.to_dict() for c in self.changed],
            "unchanged": self.unchanged,
            "broken": {"base": [p.format() for p in self.broken_base], "head": [p.format() for p in self.broken_head]},
        }


def _checks_yaml(task: Task) -> str:
    data: dict[str, Any] = {"checks": thaw(task.checks)}
    if task.rubric:
        data["rubric"] = thaw(task.rubric)
        data["rubric_weight"] = task.rubric_weight
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def _udiff(a: str, b: str, name: str) -> list[str]:
    """Unified diff lines, split at newlines only (a `\\r` stays in its line; diff_format shows it escaped)."""
    return [
        line.rstrip("\n") for line in difflib.unified_diff(split_lines(a), split_lines(b), f"a/{name}", f"b/{name}")
    ]


def compare_tasks(key: str, spec: str, old: Task, new: Task) -> Change:
    """What changed between two compiled versions of one instance."""
    import hashlib

    digest = {
        side: {p: hashlib.sha256(b).hexdigest() for p, b in t.files.items()} for side, t in (("old", old), ("new", new))
    }
    a, b = digest["old"], digest["new"]
    files = {
        "added": sorted(set(b) - set(a)),
        "removed": sorted(set(a) - set(b)),
        "changed": sorted(p for p in set(a) & set(b) if a[p] != b[p]),
    }
    old_d, new_d = old.to_dict(with_files=False), new.to_dict(with_files=False)
    other = sorted(k for k in set(old_d) | set(new_d) if k not in _SAME_FIELDS and old_d.get(k) != new_d.get(k))
    if dict(old.extra_hashed) != dict(new.extra_hashed):
        other.append("grading scripts")
    if old.executables != new.executables:
        other.append("executable bits")
    if old.rubric_weight != new.rubric_weight and "rubric weight" not in other:
        other.append("rubric weight")
    params = {
        k: [thaw(old.params).get(k), thaw(new.params).get(k)]
        for k in dict.fromkeys([*new.params, *old.params])
        if old.params.get(k) != new.params.get(k)
    }
    other = [o for o in other if o != "params"]
    lines = {
        p: [old.files[p].count(b"\n"), new.files[p].count(b"\n")]
        for p in files["changed"]
        if b"\0" not in old.files[p][:4096] + new.files[p][:4096]
    }
    return Change(
        key,
        spec,
        _udiff(old.instruction, new.instruction, f"{key}/instruction"),
        _udiff(_checks_yaml(old), _checks_yaml(new), f"{key}/checks.yaml"),
        files,
        other,
        params,
        lines,
    )


#: Folders whose files every spec may read: a change there means every spec is compiled.
SHARED = ("personas/", "skills/", "workspaces/", "clawgym/")
LIBRARY = ("personas", "skills", "workspaces")  # what a spec at the base revision is compiled with


def changed_paths(commit: str, root: Path) -> list[str]:
    """Files that differ between `commit` and the working tree (staged, unstaged or untracked)."""
    tracked = git(["diff", "--name-only", "--no-renames", commit, "--"], root).decode().splitlines()
    untracked = git(["ls-files", "--others", "--exclude-standard"], root).decode().splitlines()
    return sorted(set(tracked) | set(untracked))


def affected_specs(changed: list[str], candidates: set[str]) -> tuple[set[str], str | None]:
    """The spec files (relative paths, among `candidates`) a change can affect, and why every one
    is when a shared file changed. A spec is affected by its own file and by any file in its
    folder or a folder below it (sources, grading scripts, templates kept next to it)."""
    shared = next((c for c in changed if c.startswith(SHARED)), None)
    if shared:
        return set(candidates), f"{shared} changed, which any spec may use"
    out = {c for c in changed if c in candidates}
    for path in changed:
        if path in candidates:
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        while folder:
            out |= {c for c in candidates if c.rsplit("/", 1)[0] == folder}
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
    return out, None


def diff_since(rev: str, *, paths: list[str], seeds: list[int], cwd: Path) -> Diff:
    """Compare the task instances under `paths` at `rev` with the working tree of `cwd`'s checkout,
    compiling only the spec files the change can affect."""
    root = repo_root(cwd)
    commit = resolve_rev(rev, root)
    rel_paths = []
    for p in paths:
        full = (cwd / p).resolve()
        try:
            rel_paths.append(full.relative_to(root.resolve()).as_posix())
        except ValueError:
            raise ClawgymError(f"--paths {p} is outside the repository {root}") from None
    changed_files = changed_paths(commit, root)
    with tempfile.TemporaryDirectory(prefix="clawgym-diff-") as tmp:
        export_rev(commit, root, Path(tmp), [*rel_paths, *LIBRARY])
        old_specs = {f.relative_to(tmp).as_posix() for f in spec_files(Path(tmp), rel_paths)}
        new_specs = {f.relative_to(root).as_posix() for f in spec_files(root, rel_paths)}
        only, why_all = affected_specs(changed_files, old_specs | new_specs)
        only |= old_specs ^ new_specs
        spec_changes = [
            c
            for rel in sorted(only)
            if (
                c := spec_change(
                    rel, Path(tmp) / rel if rel in old_specs else None, root / rel if rel in new_specs else None
                )
            )
        ]
        base = collect(Path(tmp), rel_paths, seeds, only)
    head = collect(root, rel_paths, seeds, only)
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
    return Diff(
        rev,
        sorted(added),
        sorted(removed),
        sorted(changed, key=lambda c: c.key),
        same,
        base.broken,
        head.broken,
        spec_changes,
        sorted({0, *seeds}),
        len((old_specs | new_specs) - only),
        why_all,
    )
