"""Parts of a text the text checks can be told to look at: a message's body without its header
lines, and the longest run of patterns that match in a given order."""

from __future__ import annotations

import re

# "To: ...", "**Subject:** ...", "Cc : ..." (case-insensitive, Markdown emphasis allowed)
_HEADER = re.compile(
    r"^[ \t]*[*_]{0,2}(?:to|from|cc|bcc|subject|date|reply-to|sent)[ \t]*[*_]{0,2}[ \t]*:", re.IGNORECASE
)


def message_body(text: str) -> str:
    """`text` without its leading header lines (To:, From:, Cc:, Bcc:, Subject:, Date:, Reply-To:,
    Sent:, with their indented continuation lines) and the blank line after them; unchanged when it
    does not start with one."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    while end < len(lines) and (
        _HEADER.match(lines[end]) or (end > start and lines[end][:1] in (" ", "\t") and lines[end].strip())
    ):
        end += 1
    if end == start:
        return text
    if end < len(lines) and not lines[end].strip():
        end += 1
    return "\n".join(lines[end:])


def longest_in_order(text: str, patterns: list[re.Pattern]) -> list[int]:
    """Indices of the largest set of `patterns` that match `text` in their given order, each match
    starting at or after the end of the one before (earliest ends kept, as in a longest increasing
    subsequence)."""
    best: list[tuple[int, list[int]]] = [(0, [])]  # best[n]: the chain of n patterns ending earliest
    for i, rx in enumerate(patterns):
        for n in range(len(best) - 1, -1, -1):
            end, chain = best[n]
            m = rx.search(text, end)
            if m is None:
                continue
            found = (m.end(), [*chain, i])
            if n + 1 == len(best):
                best.append(found)
            elif found[0] < best[n + 1][0]:
                best[n + 1] = found
    return best[-1][1]
