"""read, write, edit: workspace files, through the escape-proof host-side access of `paths`."""

from __future__ import annotations

from typing import Any

from . import RunState, ToolError, arg_num, arg_str

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
MAX_FILE = 64 << 20  # larger files are refused (use exec with head/sed)


def _text(state: RunState, rel: str) -> str:
    data = state.workspace.read_bytes(rel, MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise ToolError(
            f"{rel} is larger than {MAX_FILE >> 20} MB; look at parts of it with exec (head, tail, sed -n) instead"
        )
    if b"\0" in data[:8192]:
        raise ToolError(
            f"{rel} is a binary file ({len(data)} bytes); inspect it with exec (file, xxd, python3) instead"
        )
    return data.decode("utf-8", errors="replace")


def read(state: RunState, args: dict[str, Any]) -> str:
    """Text of a file from line `offset` (1-based), at most `limit` lines, capped at 2000 lines / 50 KB."""
    rel = state.workspace.rel(arg_str(args, "path"))
    offset = arg_num(args, "offset", 1, minimum=1)
    limit = arg_num(args, "limit", None, minimum=1)
    text = _text(state, rel)
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total == 0:
        return "(empty file)"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {rel} ({total} lines)")
    want = lines[offset - 1 : offset - 1 + limit] if limit else lines[offset - 1 :]
    out, size, cut = [], 0, None
    for i, line in enumerate(want):
        n = len(line.encode("utf-8", errors="replace"))
        if i >= MAX_LINES or size + n > MAX_BYTES:
            cut = "2000-line" if i >= MAX_LINES else "50 KB"
            break
        out.append(line)
        size += n
    body = "".join(out)
    last = offset - 1 + len(out)
    if cut is not None:
        if not out:  # a single line longer than 50 KB
            return (
                want[0][:MAX_BYTES] + f"\n\n[Line {offset} alone is over 50 KB; only its start is shown. "
                f"Use exec (cut, head -c) to see the rest. Next: offset={offset + 1}.]"
            )
        return body.rstrip("\n") + (
            f"\n\n[Output truncated at the {cut} limit: showing lines {offset}-{last} "
            f"of {total}. Continue with offset={last + 1}.]"
        )
    if limit and last < total:
        return body.rstrip("\n") + f"\n\n[{total - last} more lines in the file. Continue with offset={last + 1}.]"
    return body


def write(state: RunState, args: dict[str, Any]) -> str:
    """Create or replace a file (parent folders created)."""
    path = arg_str(args, "path")
    content = arg_str(args, "content")
    rel = state.workspace.rel(path)
    data = content.encode("utf-8")
    state.workspace.write_bytes(rel, data)
    return f"Successfully wrote {len(data)} bytes to {path}"


def edit(state: RunState, args: dict[str, Any]) -> str:
    """Replace one exact occurrence of `oldText` by `newText`."""
    path = arg_str(args, "path")
    old = arg_str(args, "oldText", required=False) or arg_str(args, "old_string", required=False)
    new = arg_str(args, "newText", required=False)
    new = new if new is not None else arg_str(args, "new_string", required=False)
    if not old:
        raise ToolError("missing required argument 'oldText' (the exact text to replace, non-empty)")
    if new is None:
        raise ToolError("missing required argument 'newText'")
    rel = state.workspace.rel(path)
    text = _text(state, rel)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"the text to replace was not found in {path}; it must match exactly, "
            "including whitespace and line breaks (read the file first)"
        )
    if count > 1:
        raise ToolError(
            f"the text to replace occurs {count} times in {path}; include more surrounding "
            "text so that it matches exactly once"
        )
    state.workspace.write_bytes(rel, text.replace(old, new, 1).encode("utf-8"))
    return f"Successfully replaced the text in {path}"
