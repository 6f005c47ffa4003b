"""The judge's evidence: everything the agent left behind, as blocks that nothing inside can end.

Each piece of evidence (the final reply, the simulated actions, each file created, changed or
deleted) is a `Block`: a label of ours and lines of escaped agent data. Rendered, a block lies
between lines carrying a marker drawn from `secrets` per request and checked to occur nowhere in
the evidence; texts are one-line JSON strings with every control, line separator and invisible
format character escaped, and file names are quoted (`quote_path`). So no agent-written text can
start a line of the prompt, close a block or add a line of ours.
"""

from __future__ import annotations

import json
import os
import secrets
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import safefs
from ..files.textsafe import quote_path

MAX_FILE_CHARS = 6000
MAX_FILES_CHARS = 30000
MAX_MESSAGE_CHARS = 6000
MAX_EFFECTS_CHARS = 4000
MAX_SCAN_BYTES = 2_000_000
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))  # escaped even inside JSON strings


@dataclass
class Block:
    """One piece of evidence: `label` is ours; every line of `lines` is one line of escaped agent data."""

    label: str
    lines: list[str]


def _escape_hidden(text: str) -> str:
    """JSON text with controls, invisible format characters and line separators as \\u escapes."""
    if text.isascii():
        return text.replace("\x7f", "\\u007f")
    out = []
    for ch in text:
        if unicodedata.category(ch) not in _HIDDEN:
            out.append(ch)
        elif (code := ord(ch)) < 0x10000:
            out.append(f"\\u{code:04x}")
        else:  # a surrogate pair, as JSON writes characters past the BMP
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    return "".join(out)


def _data(value: Any) -> str:
    """`value` as one line of JSON that no character of it can break or hide."""
    return _escape_hidden(json.dumps(value, ensure_ascii=False, default=str))


def _fit(text: str, room: int) -> tuple[str, int]:
    """(the JSON string of the longest prefix of `text` whose encoding fits `room`, its length)."""
    n = min(len(text), room)
    while True:
        encoded = _data(text[:n])
        if len(encoded) <= room + 2 or n == 0:
            return encoded, n
        n = min(n - 1, n * room // len(encoded))


def _shown(label: str, n: int, total: int) -> str:
    return label if n >= total else f"{label}, first {n} of {total} characters shown (the rest cut)"


def _text_of(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _files(root: Path) -> dict[str, Path]:
    """Regular files below `root` (never through a link; bounded like grading, see safefs)."""
    out: dict[str, Path] = {}
    if root is None or not Path(root).is_dir():
        return out
    try:
        for entry in safefs.walk(root):
            if entry.kind == "file":
                out[entry.rel] = Path(root) / entry.rel
    except safefs.TreeTooLarge:
        pass  # such a workspace fails its gate before the judge is asked; show what was listed
    return out


def _file_blocks(workspace: Path, original: Path | None, max_file_chars: int, max_total_chars: int) -> list[Block]:
    """The files the agent created, changed or deleted (all files without `original`), capped."""
    now, before = _files(workspace), _files(original) if original is not None else {}
    blocks, used = [], 0
    for rel in sorted(now):
        path = now[rel]
        try:
            size = os.stat(path, follow_symlinks=False).st_size
            same_size = rel in before and before[rel].stat().st_size == size  # the original's size is ours
            data = safefs.read_under(workspace, rel, size) if size <= MAX_SCAN_BYTES or same_size else None
            if same_size and before[rel].read_bytes() == data:
                continue
            data = data if size <= MAX_SCAN_BYTES else None
        except (OSError, ValueError):
            continue
        label, name = "file " + ("changed" if rel in before else "created"), f"path: {quote_path(rel)}"
        text = None if data is None else _text_of(data)
        room = min(max_file_chars, max_total_chars - used)
        if text is None:
            blocks.append(Block(f"{label}, binary or too large ({size} bytes), not shown", [name]))
        elif room <= 200:
            blocks.append(Block(f"{label}, {len(text)} characters, not shown: prompt budget used up", [name]))
        else:
            encoded, n = _fit(text, room)
            used += len(encoded)
            blocks.append(Block(_shown(label, n, len(text)), [name, f"text: {encoded}"]))
    blocks += [Block("file deleted", [f"path: {quote_path(rel)}"]) for rel in sorted(set(before) - set(now))]
    return blocks


def _clip_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f" [... {len(value) - limit} more characters cut]"
    if isinstance(value, dict):
        return {k: _clip_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clip_strings(v, limit) for v in value]
    return value


def _effect_blocks(trajectory: dict) -> list[Block]:
    """The simulated actions, one JSON line each, while they fit MAX_EFFECTS_CHARS."""
    effects = {k: v for k, v in ((trajectory or {}).get("side_effects") or {}).items() if v}
    items = [{str(k): item} for k, v in effects.items() for item in (v if isinstance(v, list) else [v])]
    if not items:
        return []
    lines: list[str] = []
    for item in items:
        line = _data(_clip_strings(item, MAX_EFFECTS_CHARS // 4))
        if sum(map(len, lines)) + len(line) > MAX_EFFECTS_CHARS:
            break
        lines.append(line)
    label = "simulated actions (messages sent, jobs scheduled, pages fetched), one JSON object a line"
    if len(lines) < len(items):
        label += f", first {len(lines)} of {len(items)} shown (the rest cut)"
    return [Block(label, lines)]


def evidence_blocks(
    trajectory: dict, workspace: Path, original: Path | None, max_file_chars: int, max_files_chars: int
) -> dict[str, list[Block]]:
    """The evidence blocks by section: "final", "effects" and "files"."""
    final = str((trajectory or {}).get("final_message") or "")
    encoded, n = _fit(final, MAX_MESSAGE_CHARS)
    return {
        "final": [Block(_shown("final reply", n, len(final)), [f"text: {encoded}"])] if final else [],
        "effects": _effect_blocks(trajectory),
        "files": _file_blocks(workspace, original, max_file_chars, max_files_chars),
    }


def block_lines(blocks: list[Block]) -> str:
    return "\n".join(line for b in blocks for line in b.lines)


def render_blocks(blocks: list[Block], marker: str, empty: str = "") -> str:
    begin, end = f"<<<BEGIN EVIDENCE {marker}: ", f"<<<END EVIDENCE {marker}>>>"
    return "\n".join("\n".join([f"{begin}{b.label}>>>", *b.lines, end]) for b in blocks) or empty


def new_marker(evidence: str) -> str:
    """A fresh random marker (from `secrets`) that occurs nowhere in `evidence`."""
    while True:
        marker = secrets.token_hex(16)
        if marker not in evidence.lower():
            return marker


NO_FILES = "(no file was created, changed or deleted)"


def changed_files(
    workspace: Path,
    original: Path | None = None,
    *,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_FILES_CHARS,
) -> str:
    """The files the agent created, changed or deleted (all files without `original`) as evidence
    blocks; binary and huge files are listed, not shown; each file and the total are capped."""
    blocks = _file_blocks(workspace, original, max_file_chars, max_total_chars)
    return render_blocks(blocks, new_marker(block_lines(blocks)), NO_FILES)
