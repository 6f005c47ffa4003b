"""The claw agent's system prompt: a short preamble, the tools, the workspace's bootstrap files (in
OpenClaw's order, with its size caps), the available skills and the current time."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

import yaml

from .paths import PathError, Workspace

BOOTSTRAP = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md")
OPTIONAL = ("BOOTSTRAP.md", "MEMORY.md")  # shown only when present (no [MISSING] marker)
FILE_CAP = 20_000
TOTAL_CAP = 150_000
HEAD, TAIL = 0.7, 0.2
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)

PREAMBLE = """You are a personal assistant agent working on your user's own computer, inside their \
workspace folder ({mount}). You act by calling tools; each call's result comes back to you. Work step \
by step until the request is fully done, then reply with a short summary of what you did and no tool call.

Tools: {tools}.
- Paths are relative to the workspace (or absolute inside it); nothing outside the workspace is reachable.
- Read before you change files; put deliverables exactly where the request asks.
- exec runs shell commands (python3 and the usual command-line tools are there; there is no network).
- Only files persist: if something should be remembered, write it to a file."""

SKILLS_NOTE = """## Skills
Skills are instruction packs in the workspace. Before doing work that a skill covers, read its \
SKILL.md with the read tool and follow it; do not guess its content from the description. \
Available skills (name: description; location):"""


@dataclass
class BootFile:
    name: str
    text: str | None  # None: missing
    truncated: bool = False


def cap_text(text: str, name: str, cap: int = FILE_CAP) -> tuple[str, bool]:
    """Keep the head (70%) and tail (20%) of an over-long file, with a marker between."""
    if len(text) <= cap:
        return text, False
    head, tail = text[: int(cap * HEAD)], text[len(text) - int(cap * TAIL) :]
    marker = (
        f"\n\n[... {name} is {len(text)} characters; the middle {len(text) - len(head) - len(tail)} "
        f"were left out here. Read the file for all of it. ...]\n\n"
    )
    return head + marker + tail, True


class _Source:
    """Where the prompt's files come from: the workspace on disk, through the escape-proof reads of
    `paths`, or (`files`) the exact files it holds, in memory: a trial's workspace right after the
    runner wrote the task's files into it (`Sandbox.initial_files`)."""

    def __init__(self, ws: Workspace, files: Mapping[str, bytes] | None = None):
        self.ws, self.files = ws, files

    def read(self, rel: str, limit: int) -> bytes | None:
        if self.files is not None:
            data = self.files.get(rel)
            return None if data is None else bytes(data[:limit])
        try:
            return self.ws.read_bytes(self.ws.rel(rel), limit)
        except PathError:
            return None

    def skill_names(self) -> list[str]:
        if self.files is not None:
            return sorted(
                {rel.split("/")[1] for rel in self.files if rel.startswith("skills/") and rel.count("/") >= 2}
            )
        root = self.ws.root / "skills"
        if root.is_symlink() or not root.is_dir():
            return []
        return sorted(entry.name for entry in root.iterdir())


def bootstrap_files(ws: Workspace, files: Mapping[str, bytes] | None = None) -> list[BootFile]:
    source = _Source(ws, files)
    out = []
    for name in BOOTSTRAP + OPTIONAL:
        data = source.read(name, 4 << 20)
        if data is None:
            if name not in OPTIONAL:
                out.append(BootFile(name, None))
            continue
        text, cut = cap_text(data.decode("utf-8", errors="replace"), name)
        out.append(BootFile(name, text, cut))
    return out


@functools.lru_cache(maxsize=512)
def _front_matter(text: str) -> Any:
    """Parsed YAML front matter (cached: the same skills appear in many trials); None if invalid."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def skills(ws: Workspace, files: Mapping[str, bytes] | None = None) -> list[dict[str, str]]:
    """name, description and location of each `skills/<name>/SKILL.md` with valid front matter."""
    found = []
    source = _Source(ws, files)
    for name in source.skill_names():
        rel = f"skills/{name}/SKILL.md"
        data = source.read(rel, 256 << 10)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        match = _FRONT.match(text)
        meta = _front_matter(match.group(1)) if match else None
        if not isinstance(meta, dict) or not meta.get("description"):
            continue
        found.append(
            {
                "name": str(meta.get("name") or name),
                "description": " ".join(str(meta["description"]).split())[:1024],
                "location": rel,
            }
        )
    return found


def build_system_prompt(
    ws: Workspace, clock: str, tools: list[str], extra: str | None = None, files: Mapping[str, bytes] | None = None
) -> str:
    """The system prompt from the workspace's files (`files`: exactly what it holds, when known)."""
    parts = [PREAMBLE.format(mount=ws.mount, tools=", ".join(tools))]
    skill_list = skills(ws, files)
    if skill_list:
        parts.append(
            SKILLS_NOTE + "\n" + "\n".join(f"- {s['name']}: {s['description']} ({s['location']})" for s in skill_list)
        )
    parts.append(f"## Current time\n{clock} (UTC). Use this as 'now' for dates, deadlines and schedules.")
    shown, budget = [], TOTAL_CAP
    for f in bootstrap_files(ws, files):
        if f.text is None:
            shown.append(f"### {f.name}\n[MISSING] {f.name} does not exist in this workspace.")
            continue
        text = f.text
        if len(text) > budget:
            text, _ = cap_text(text, f.name, max(budget, 0))
            text = (
                text
                if budget > 0
                else f"[... {f.name} left out: the injected files reached "
                f"{TOTAL_CAP} characters. Read it with the read tool. ...]"
            )
        budget -= len(text)
        shown.append(f"### {f.name}\n{text.rstrip()}")
    parts.append(
        "## Workspace files\nThese files from the workspace set up who you are, who you work "
        "for and how; they are loaded for you at every turn.\n\n" + "\n\n".join(shown)
    )
    if extra:
        parts.append(extra.strip())
    return "\n\n".join(parts) + "\n"


def describe_prompt(ws: Workspace) -> dict[str, Any]:
    """What went into the prompt (for tests and debugging)."""
    return {"files": [(f.name, f.text is not None, f.truncated) for f in bootstrap_files(ws)], "skills": skills(ws)}
