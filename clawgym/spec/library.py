"""Find and load the specs a task refers to by name: personas/, skills/ and workspaces/.

The library root is the nearest folder at or above a spec file that holds at least one of those
three folders (falling back to the current directory). Each referenced spec is loaded and
validated once per process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import Problem, SpecError, did_you_mean
from .load import Document, load_file, load_text
from .validate import validate_document

LIBRARY_DIRS = ("personas", "skills", "workspaces")


@dataclass(frozen=True)
class FileTree:
    """Files read from a folder: {posix relative path: bytes} and which of them are executable."""

    files: dict[str, bytes] = field(default_factory=dict)
    executables: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SkillEntry:
    """A loaded skill: its spec, folder, and the files mounted at skills/<name>/ in a workspace."""

    spec: dict
    folder: Path
    tree: FileTree
    description: str


@dataclass(frozen=True)
class WorkspaceEntry:
    """A loaded workspace template: its document (templates are rendered per task) and static files."""

    doc: Document
    folder: Path
    static: FileTree = field(default_factory=FileTree)


def _with_archive(tree: FileTree, archive: Path, doc: Document) -> FileTree:
    """`tree` plus the regular files of a tar archive (paths inside it, executable bits kept)."""
    import tarfile

    files, executables = dict(tree.files), set(tree.executables)
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                name = member.name[2:] if member.name.startswith("./") else member.name
                if not member.isfile() or not name or ".." in name.split("/"):
                    continue
                handle = tar.extractfile(member)
                files[name] = handle.read() if handle is not None else b""
                if member.mode & 0o111:
                    executables.add(name)
    except (OSError, tarfile.TarError) as e:
        raise SpecError(
            [
                Problem(
                    f"cannot read the workspace archive {archive.name}: {e}",
                    **doc.where(("archive",)),
                    hint="give a tar file next to workspace.yaml",
                )
            ]
        ) from None
    return FileTree(dict(sorted(files.items())), frozenset(executables))


def find_root(start: Path) -> Path:
    """Nearest folder at or above `start` that holds personas/, skills/ or workspaces/."""
    start = start.resolve()
    for folder in [start, *start.parents]:
        if any((folder / d).is_dir() for d in LIBRARY_DIRS):
            return folder
    return Path.cwd().resolve()


def read_tree(folder: Path, skip: tuple[str, ...] = ()) -> FileTree:
    """All regular files under `folder`, in sorted order, keeping the executable bit."""
    out: dict[str, bytes] = {}
    executables: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if rel in skip or name.endswith((".pyc", "~")):
                continue
            out[rel] = path.read_bytes()
            if os.access(path, os.X_OK):
                executables.add(rel)
    return FileTree(out, frozenset(executables))


class Library:
    """Named personas, skills and workspace templates under one root folder."""

    def __init__(self, root: Path):
        self.root = root
        self._personas: dict[str, dict] = {}
        self._skills: dict[str, SkillEntry] = {}
        self._workspaces: dict[str, WorkspaceEntry] = {}

    def _available(self, folder: str, suffix: str = "") -> list[str]:
        base = self.root / folder
        if not base.is_dir():
            return []
        if suffix:
            return sorted(p.name[: -len(suffix)] for p in base.glob(f"*{suffix}"))
        return sorted(p.name for p in base.iterdir() if p.is_dir())

    def _missing(self, kind: str, name: str, folder: str, expected: str, where: dict, suffix: str = "") -> SpecError:
        hint = did_you_mean(name, self._available(folder, suffix)) or f"create {expected}"
        return SpecError.one(f"unknown {kind} {name!r}: {expected} does not exist", hint=hint, **where)

    def persona(self, name: str, where: dict) -> dict:
        if name not in self._personas:
            path = self.root / "personas" / f"{name}.yaml"
            if not path.is_file():
                raise self._missing("persona", name, "personas", f"personas/{name}.yaml", where, ".yaml")
            doc = self._load(path, "Persona", name)
            self._personas[name] = doc.data
        return self._personas[name]

    def skill(self, name: str, where: dict) -> SkillEntry:
        if name not in self._skills:
            folder = self.root / "skills" / name
            if not (folder / "skill.yaml").is_file():
                raise self._missing("skill", name, "skills", f"skills/{name}/skill.yaml", where)
            doc = self._load(folder / "skill.yaml", "Skill", name)
            description = self._check_skill_md(folder, name)
            tree = read_tree(folder, skip=("skill.yaml",))
            self._skills[name] = SkillEntry(doc.data, folder, tree, description)
        return self._skills[name]

    def workspace(self, name: str, where: dict) -> WorkspaceEntry:
        if name not in self._workspaces:
            folder = self.root / "workspaces" / name
            if not (folder / "workspace.yaml").is_file():
                raise self._missing("workspace", name, "workspaces", f"workspaces/{name}/workspace.yaml", where)
            doc = self._load(folder / "workspace.yaml", "Workspace", name)
            static_dir = folder / doc.data.get("static", "files")
            static = read_tree(static_dir) if static_dir.is_dir() else FileTree()
            if doc.data.get("archive"):
                static = _with_archive(static, folder / doc.data["archive"], doc)
            self._workspaces[name] = WorkspaceEntry(doc, folder, static)
        return self._workspaces[name]

    def _load(self, path: Path, kind: str, name: str) -> Document:
        doc = load_file(self._display(path))
        problems = validate_document(doc, expected_kind=kind)
        if not problems and doc.data.get("name") != name:
            problems.append(
                Problem(
                    f"name {doc.data.get('name')!r} does not match the file name {name!r}",
                    **doc.where(("name",)),
                    hint=f"set 'name: {name}' or rename the file",
                )
            )
        if problems:
            raise SpecError(problems)
        return doc

    def _check_skill_md(self, folder: Path, name: str) -> str:
        path = folder / "SKILL.md"
        shown = self._display(path)
        if not path.is_file():
            raise SpecError.one(
                "missing SKILL.md",
                file=shown,
                hint="a skill folder holds SKILL.md: YAML front matter (name, description), then instructions",
            )
        text = path.read_text(encoding="utf-8")
        if not text.startswith("---\n") or "\n---" not in text[4:]:
            raise SpecError.one(
                "SKILL.md must start with YAML front matter between '---' lines",
                file=shown,
                line=1,
                hint="add '---', 'name: ...', 'description: ...', '---' at the top",
            )
        front = text[4 : text.index("\n---", 4)]
        doc = load_text(front, shown)
        meta = doc.data if isinstance(doc.data, dict) else {}
        problems = []
        if meta.get("name") != name:
            problems.append(
                Problem(
                    f"front matter name {meta.get('name')!r} does not match the folder {name!r}",
                    file=shown,
                    line=doc.line(("name",)) + 1,
                    key="name",
                    hint=f"set 'name: {name}'",
                )
            )
        desc = meta.get("description")
        if not isinstance(desc, str) or not desc.strip() or len(desc) > 1024:
            problems.append(
                Problem(
                    "front matter needs a 'description' of 1 to 1024 characters",
                    file=shown,
                    line=doc.line(("description",)) + 1,
                    key="description",
                    hint="say what the skill does and when to use it",
                )
            )
        if problems:
            raise SpecError(problems)
        return desc

    def _display(self, path: Path) -> str:
        try:
            return os.path.relpath(path)
        except ValueError:  # pragma: no cover - other drive on Windows
            return str(path)


@lru_cache(maxsize=None)
def library_for(root: Path) -> Library:
    """The shared Library object of a root folder."""
    return Library(root)
