"""Read PinchBench task files (`tasks/<id>.md`) and the suite's `tasks/manifest.yaml`. Reading never runs anything.

A task file is YAML front matter (`id`, `name`, `category`, `grading_type`, `timeout_seconds`,
`workspace_files`, optionally `grading_weights`, `multi_session` + `sessions`, `prerequisites`)
followed by markdown sections by `## ` heading: Prompt, Expected Behavior, Grading Criteria,
Automated Checks (the first fenced python block is the grader), LLM Judge Rubric, Additional Notes.

A `## ` heading that names none of those sections does not end the Prompt: the whole prompt is
kept, headings inside it included (the original runner's parser cuts the prompt at the first
`## ` heading; the import warns where that happens). Fences are respected: a heading inside a
fenced block is text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from .clawgym_format import Rejected

TASKS = "tasks"
ASSETS = "assets"
MANIFEST = "manifest.yaml"
TEMPLATE = "TASK_TEMPLATE.md"
GRADING_TYPES = ("automated", "llm_judge", "hybrid")
DEFAULT_TIMEOUT = 120
DEFAULT_WEIGHTS = (0.5, 0.5)  # automated, llm_judge
SECTIONS = (
    "prompt",
    "expected behavior",
    "grading criteria",
    "automated checks",
    "llm judge rubric",
    "additional notes",
)
# bootstrap files the runner keeps when it wipes the workspace before a task
BOOTSTRAP_FILES = ("SOUL.md", "BOOTSTRAP.md", "USER.md", "IDENTITY.md", "HEARTBEAT.md", "TOOLS.md")

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([\w+-]*)")
_WEIGHT = re.compile(r"\(\s*weight\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*\)", re.I)
_PYTHON = ("python", "py", "python3")
_BULLET = re.compile(r"^[ \t]*[-*+][ \t]+\[[ xX]\][ \t]+(.+?)[ \t]*$")


@dataclass
class Section:
    """One `## ` section: its heading as written, its body, and the line of the heading (1-based)."""

    title: str
    body: str
    line: int
    inner_headings: list[str] = field(default_factory=list)  # `## ` headings kept inside (Prompt only)


@dataclass
class Criterion:
    """One criterion of the LLM judge rubric: its `###` heading, the `(Weight: X%)` it states, its text."""

    title: str
    weight: float | None
    text: str


@dataclass
class WorkspaceFile:
    """One `workspace_files` entry: `{source, dest}` (source relative to assets/) or `{path, content}`."""

    dest: str
    source: str | None = None
    content: str | None = None


@dataclass
class Session:
    """One prompt of a multi-session task; `new_session` starts a fresh conversation in the original."""

    id: str
    prompt: str
    new_session: bool = False


@dataclass
class PinchTask:
    """What one task file says (paths relative to the repository, POSIX style)."""

    path: Path
    raw: bytes
    front: dict[str, Any]
    sections: dict[str, Section]
    files: list[WorkspaceFile]
    sessions: list[Session]
    prerequisites: list[str]
    grader: str | None  # the first python block of Automated Checks, verbatim
    grader_line: int | None  # its first line in the file
    rubric: list[Criterion]
    warnings: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.front["id"])

    @property
    def name(self) -> str:
        return str(self.front.get("name") or self.id)

    @property
    def category(self) -> str:
        return str(self.front.get("category") or "")

    @property
    def grading_type(self) -> str:
        return str(self.front["grading_type"])

    @property
    def timeout(self) -> float:
        value = self.front.get("timeout_seconds", DEFAULT_TIMEOUT)
        return float(value)

    @property
    def weights(self) -> tuple[float, float]:
        """(automated, llm_judge) weights of a hybrid task, 0.5 / 0.5 unless the front matter says otherwise."""
        w = self.front.get("grading_weights")
        if not isinstance(w, dict):
            return DEFAULT_WEIGHTS
        return (float(w.get("automated", DEFAULT_WEIGHTS[0])), float(w.get("llm_judge", DEFAULT_WEIGHTS[1])))

    def text(self, section: str) -> str:
        """The body of a section (`prompt`, `expected behavior`, ...), empty when absent."""
        s = self.sections.get(section)
        return s.body if s else ""

    @property
    def prompt(self) -> str:
        return self.text("prompt")

    @property
    def criteria_bullets(self) -> list[str]:
        """The `- [ ]` items of Grading Criteria."""
        return [m.group(1) for ln in self.text("grading criteria").splitlines() if (m := _BULLET.match(ln))]


# ---------------------------------------------------------------------------------------------
# Parsing


def split_front_matter(text: str, where: str) -> tuple[str, str, int]:
    """(front matter YAML, markdown body, line of the body's first line); Rejected without front matter."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise Rejected(
            f"{where}:1: no YAML front matter (the file must start with a line '---', then the "
            "front matter with id, name, category, grading_type, then a line '---')"
        )
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 2
    raise Rejected(f"{where}:1: the front matter is never closed (add a line '---' after it)")


def split_sections(body: str, first_line: int) -> dict[str, Section]:
    """The known `## ` sections of the body, by lower-case title; unknown headings end a section
    other than Prompt (they start an unknown section, kept under its own title)."""
    sections: dict[str, Section] = {}
    current: Section | None = None
    buf: list[str] = []
    fence: str | None = None

    def close() -> None:
        if current is not None:
            current.body = "\n".join(buf).strip()
            sections.setdefault(current.title.lower(), current)

    for n, line in enumerate(body.split("\n")):
        f = _FENCE.match(line)
        if fence is not None:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not f.group(2):
                fence = None
            buf.append(line)
            continue
        if f:
            fence = f.group(1)
            buf.append(line)
            continue
        h = _HEADING.match(line)
        if h and len(h.group(1)) == 2:
            title = h.group(2).strip().rstrip(":").strip()
            known = title.lower() in SECTIONS
            if known or current is None or current.title.lower() != "prompt":
                close()
                current, buf = Section(title, "", first_line + n), []
                continue
            current.inner_headings.append(title)
        buf.append(line)
    close()
    return sections


def first_python_block(text: str) -> tuple[str, int] | None:
    """(code, index of its first line within `text`) of the first ```python fenced block."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        f = _FENCE.match(line)
        if f and f.group(2).lower() in _PYTHON:
            fence = f.group(1)
            for j in range(i + 1, len(lines)):
                g = _FENCE.match(lines[j])
                if g and g.group(1)[0] == fence[0] and len(g.group(1)) >= len(fence) and not g.group(2):
                    return "\n".join(lines[i + 1 : j]) + "\n", i + 1
            return "\n".join(lines[i + 1 :]) + "\n", i + 1
    return None


def parse_rubric(text: str) -> list[Criterion]:
    """Criteria from `### ` headings of the rubric (one criterion of the whole text when it has none)."""
    if not text.strip():
        return []
    parts: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        h = _HEADING.match(line)
        if h and len(h.group(1)) == 3:
            parts.append((h.group(2).strip(), []))
        elif parts:
            parts[-1][1].append(line)
    if not parts:
        return [Criterion("Rubric", None, text.strip())]
    out = []
    for title, body in parts:
        m = _WEIGHT.search(title)
        out.append(Criterion(title, float(m.group(1)) if m else None, "\n".join(body).strip()))
    return out


def _rel(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Rejected(f"{where}: `{key}` is {value!r}, expected a relative path")
    p = PurePosixPath(value.strip())
    if p.is_absolute() or ".." in p.parts or str(p) in ("", "."):
        raise Rejected(f"{where}: `{key}` {value!r} leaves its folder (expected a relative path without '..')")
    return p.as_posix()


def _files(entries: Any, where: str) -> list[WorkspaceFile]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise Rejected(f"{where}: `workspace_files` is a {type(entries).__name__}, expected a list")
    out = []
    for i, e in enumerate(entries):
        here = f"{where}: workspace_files[{i}]"
        if not isinstance(e, dict):
            raise Rejected(f"{here} is {e!r}, expected {{source, dest}} or {{path, content}}")
        if "content" in e:
            content = e["content"]
            if not isinstance(content, str):
                content = "" if content is None else str(content)
            out.append(WorkspaceFile(_rel(e.get("path") or e.get("dest"), here, "path"), content=content))
        elif "source" in e:
            src = _rel(e["source"], here, "source")
            out.append(WorkspaceFile(_rel(e.get("dest") or src, here, "dest"), source=src))
        else:
            raise Rejected(f"{here} has neither `source` (with `dest`) nor `content` (with `path`)")
    return out


def _sessions(front: dict[str, Any], where: str) -> list[Session]:
    raw = front.get("sessions")
    if not front.get("multi_session") and raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise Rejected(
            f"{where}: multi_session is set but `sessions` is {raw!r}, expected a list of {{id, prompt, new_session?}}"
        )
    out = []
    for i, s in enumerate(raw):
        if not isinstance(s, dict) or not isinstance(s.get("prompt"), str) or not s["prompt"].strip():
            raise Rejected(f"{where}: sessions[{i}] needs a non-empty `prompt`")
        out.append(Session(str(s.get("id") or f"session_{i + 1}"), s["prompt"].strip(), bool(s.get("new_session"))))
    return out


def read_task_file(path: Path, repo: Path) -> PinchTask:
    """Parse one task file; raises Rejected (with file:line) when it cannot be imported."""
    where = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else path.name
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise Rejected(f"{where}: not UTF-8 text (bad byte at offset {e.start})") from None
    text = text.replace("\r\n", "\n")
    fm, body, body_line = split_front_matter(text, where)
    try:
        front = yaml.safe_load(fm) if fm.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        raise Rejected(
            f"{where}:{line}: the front matter is not valid YAML ({getattr(e, 'problem', None) or e}); "
            "fix it so it parses"
        ) from None
    if not isinstance(front, dict):
        raise Rejected(f"{where}:2: the front matter is a {type(front).__name__}, expected a mapping")
    for key in ("id", "grading_type"):
        if not isinstance(front.get(key), (str, int)) or not str(front.get(key)).strip():
            raise Rejected(
                f"{where}: front matter `{key}` is {'missing' if key not in front else repr(front[key])}, "
                "expected a non-empty string"
            )
    front["id"] = str(front["id"]).strip()
    if front["grading_type"] not in GRADING_TYPES:
        raise Rejected(f"{where}: grading_type {front['grading_type']!r} is none of {', '.join(GRADING_TYPES)}")
    t = front.get("timeout_seconds", DEFAULT_TIMEOUT)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0:
        raise Rejected(f"{where}: timeout_seconds is {t!r}, expected a positive number of seconds")
    w = front.get("grading_weights")
    if w is not None and (
        not isinstance(w, dict)
        or any(
            isinstance(w.get(k), bool) or not isinstance(w.get(k, 0), (int, float)) or w.get(k, 0) < 0
            for k in ("automated", "llm_judge")
        )
    ):
        raise Rejected(f"{where}: grading_weights is {w!r}, expected {{automated: W, llm_judge: W}} with W >= 0")
    prereq = front.get("prerequisites") or []
    if isinstance(prereq, str):
        prereq = [prereq]
    if not isinstance(prereq, list):
        raise Rejected(f"{where}: prerequisites is {prereq!r}, expected a list such as ['npm:<package>', 'cli:gh']")
    sections = split_sections(body, body_line)
    task = PinchTask(
        path=path,
        raw=raw,
        front=front,
        sections=sections,
        files=_files(front.get("workspace_files"), where),
        sessions=_sessions(front, where),
        prerequisites=[str(p) for p in prereq],
        grader=None,
        grader_line=None,
        rubric=parse_rubric(sections["llm judge rubric"].body) if "llm judge rubric" in sections else [],
    )
    checks = sections.get("automated checks")
    if checks is not None:
        block = first_python_block(checks.body)
        if block is not None:
            task.grader = block[0]
            lines = text.split("\n")  # the block's first line in the file, for messages
            start = next(
                (
                    i
                    for i in range(checks.line, len(lines))
                    if (f := _FENCE.match(lines[i])) and f.group(2).lower() in _PYTHON
                ),
                checks.line,
            )
            task.grader_line = start + 2
    return task


# ---------------------------------------------------------------------------------------------
# The suite


@dataclass
class Manifest:
    """`tasks/manifest.yaml`: the run order, what runs first, the core subset, category overrides."""

    raw: bytes | None = None
    order: list[str] = field(default_factory=list)
    run_first: list[str] = field(default_factory=list)
    core: list[str] = field(default_factory=list)
    categories: dict[str, str] = field(default_factory=dict)  # task id -> category


def _ids(value: Any) -> list[str]:
    if isinstance(value, list):
        return [
            str(v["id"] if isinstance(v, dict) and "id" in v else v)
            for v in value
            if isinstance(v, (str, int)) or (isinstance(v, dict) and "id" in v)
        ]
    return []


def read_manifest(tasks_dir: Path) -> tuple[Manifest, list[str]]:
    """The manifest (empty when there is none) and warnings about it."""
    path = tasks_dir / MANIFEST
    if not path.is_file():
        return Manifest(), []
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        return Manifest(raw=raw), [f"{TASKS}/{MANIFEST} cannot be read ({e}): run order and category overrides ignored"]
    if not isinstance(data, dict):
        return Manifest(raw=raw), [f"{TASKS}/{MANIFEST} is not a mapping: ignored"]
    m = Manifest(raw=raw, run_first=_ids(data.get("run_first")), core=_ids(data.get("core")))
    for key in ("tasks", "order", "run_order"):
        if isinstance(data.get(key), list):
            m.order = _ids(data[key])
            break
    cats = data.get("categories")
    if isinstance(cats, dict):
        for k, v in cats.items():
            if isinstance(v, list):  # category: [ids]
                for tid in _ids(v):
                    m.categories[tid] = str(k)
            elif isinstance(v, str):  # id: category
                m.categories[str(k)] = v
    return m, []


def find_tasks_dir(repo: Path) -> Path:
    """The folder holding the task files: REPO/tasks, or REPO itself when it is that folder."""
    if (repo / TASKS).is_dir():
        return repo / TASKS
    return repo


def task_files(tasks_dir: Path) -> list[Path]:
    """`task_*.md` files (the template excluded), in name order."""
    return sorted(p for p in tasks_dir.glob("task_*.md") if p.is_file() and p.name != TEMPLATE)
