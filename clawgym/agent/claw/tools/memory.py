"""memory_search, memory_get, session_status: the agent's notes and a status card, all offline."""

from __future__ import annotations

import re
from typing import Any

from . import RunState, ToolError, arg_num, arg_str, as_json

WINDOW = 20  # longest chunk, in lines
SNIPPET = 700  # characters of a chunk shown in a result
_TOKEN = re.compile(r"[a-z0-9]+(?:[._'-][a-z0-9]+)*")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def memory_files(state: RunState) -> list[str]:
    files = ["MEMORY.md"] if state.workspace.is_file("MEMORY.md") else []
    return files + state.workspace.list_files("memory", ".md")


def chunks(text: str) -> list[tuple[int, int, str]]:
    """(startLine, endLine, text) per paragraph; paragraphs longer than WINDOW lines are split."""
    out: list[tuple[int, int, str]] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        for i in range(0, len(block), WINDOW):
            part = block[i : i + WINDOW]
            out.append((part[0][0], part[-1][0], "\n".join(line for _, line in part)))
        block.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            block.append((number, line))
        elif block:
            flush()
    if block:
        flush()
    return out


class Index:
    """A BM25 index (rank_bm25's BM25Plus, which keeps idf positive on tiny corpora) over docs."""

    def __init__(self, docs: list[str]) -> None:
        from rank_bm25 import BM25Plus

        self.toks = [tokens(d) for d in docs]
        self.bm25 = BM25Plus([t or ["\0"] for t in self.toks]) if docs else None

    def rank(self, query: str) -> list[tuple[int, float]]:
        """(doc index, score) for docs sharing at least one term with `query`, best first."""
        q = tokens(query)
        if not q or self.bm25 is None:
            return []
        scores = self.bm25.get_scores(q)
        qs = set(q)
        hits = [(i, float(scores[i])) for i, t in enumerate(self.toks) if qs.intersection(t)]
        return sorted(hits, key=lambda h: (-h[1], h[0]))


def cached_index(state: RunState, name: str, key: Any, docs: Any) -> Index:
    """The run's index `name`, rebuilt only when `key` (the indexed content) changed."""
    hit = state.cache.get(name)
    if hit is not None and hit[0] == key:
        return hit[1]
    index = Index(docs() if callable(docs) else docs)
    state.cache[name] = (key, index)
    return index


def memory_search(state: RunState, args: dict[str, Any]) -> str:
    query = arg_str(args, "query")
    if not query.strip():
        raise ToolError("argument 'query' is empty")
    top = arg_num(args, "maxResults", 6, minimum=1)
    min_score = arg_num(args, "minScore", 0.0, integer=False)
    files = memory_files(state)
    contents = tuple((rel, state.workspace.read_bytes(rel, 8 << 20)) for rel in files)
    hit = state.cache.get("memory")
    if hit is None or hit[0] != contents:
        entries = [
            (rel, a, b, t) for rel, data in contents for a, b, t in chunks(data.decode("utf-8", errors="replace"))
        ]
        state.cache["memory"] = (contents, entries)
    entries = state.cache["memory"][1]
    ranked = cached_index(state, "memory-bm25", contents, lambda: [e[3] for e in entries]).rank(query)
    results = []
    for i, score in ranked:
        if score < min_score or len(results) >= top:
            continue
        path, start, end, text = entries[i]
        snippet = text if len(text) <= SNIPPET else text[:SNIPPET] + " ..."
        results.append({"path": path, "startLine": start, "endLine": end, "score": round(score, 4), "snippet": snippet})
    return as_json({"query": query, "results": results, "files": len(files), "provider": "bm25"})


def memory_get(state: RunState, args: dict[str, Any]) -> str:
    path = arg_str(args, "path")
    rel = state.workspace.rel(path)
    if not (rel == "MEMORY.md" or (rel.startswith("memory/") and rel.endswith(".md"))):
        raise ToolError(f"memory_get only reads MEMORY.md and memory/*.md, not {path}; use read for other files")
    start = arg_num(args, "from", 1, minimum=1)
    count = arg_num(args, "lines", None, minimum=1)
    lines = state.workspace.read_bytes(rel, 8 << 20).decode("utf-8", errors="replace").splitlines()
    if lines and start > len(lines):
        raise ToolError(f"'from' {start} is past the end of {rel} ({len(lines)} lines)")
    part = lines[start - 1 : start - 1 + count] if count else lines[start - 1 :]
    return as_json(
        {"path": rel, "from": start, "to": start - 1 + len(part), "totalLines": len(lines), "text": "\n".join(part)}
    )


def session_status(state: RunState, args: dict[str, Any]) -> str:
    tokens_budget = f" of {state.max_tokens_total}" if state.max_tokens_total else ""
    left = max(state.seconds_left(), 0.0)
    return "\n".join(
        [
            "Session status",
            f"Current time: {state.task.clock} (UTC)",
            f"Model: {state.model or 'unknown'}",
            f"Turns: {state.turn} used of {state.max_turns}",
            f"Tokens: {state.tokens_used} used{tokens_budget}",
            f"Time left: {left:.0f} s",
            f"Workspace: {state.workspace.mount}",
        ]
    )
