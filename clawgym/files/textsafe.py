"""Make untrusted text (agent output, file names, grader output) safe to show.

Anything an agent controls can reach a terminal or a report. These helpers
turn control characters, terminal escape sequences and bidi overrides into
visible escapes so that the text can neither drive the terminal nor forge
extra lines or reorder what the reader sees.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["printable", "quote_path", "markup_safe"]

_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}

# Bidi embeddings/overrides/isolates and marks, line/paragraph separators.
_INVISIBLE_FORMAT = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029")

_UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(ch: str) -> str:
    """Return a visible escape for one character."""
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_unsafe(ch: str) -> bool:
    """True for characters that must never reach a display raw."""
    if ch in _INVISIBLE_FORMAT:
        return True
    return unicodedata.category(ch) in ("Cc", "Cs")


def printable(text: str, *, multiline: bool = False) -> str:
    """Show control characters in *text* as visible escapes.

    C0 controls, DEL, C1 controls, lone surrogates, bidi overrides/isolates
    and Unicode line separators become ``\\n``, ``\\x1b``, ``\\u202e``, ...
    With ``multiline=True``, newline and tab are kept as they are (carriage
    return is still escaped so it cannot overwrite a line).
    """
    if not isinstance(text, str):
        text = str(text)
    if not _UNSAFE_RE.search(text):
        return text

    def repl(match: re.Match[str]) -> str:
        ch = match.group(0)
        if multiline and ch in "\n\t":
            return ch
        return _escape_char(ch)

    return _UNSAFE_RE.sub(repl, text)


def quote_path(name: str) -> str:
    """Show a file name unambiguously, C-style quoted like git's quotePath.

    Plain names are returned unchanged. Names containing a control or
    invisible formatting character, a backslash, a double quote, a
    non-ASCII space or leading/trailing whitespace (or the empty name) are
    returned in double quotes with those characters escaped.
    """
    if not isinstance(name, str):
        name = str(name)
    needs_quotes = name == "" or name != name.strip()
    out: list[str] = []
    for ch in name:
        if ch in '\\"':
            needs_quotes = True
            out.append("\\" + ch)
        elif _is_unsafe(ch) or (ch != " " and unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cf")):
            needs_quotes = True
            out.append(_escape_char(ch))
        else:
            out.append(ch)
    if not needs_quotes:
        return name
    return '"' + "".join(out) + '"'


def markup_safe(text: object, *, multiline: bool = False) -> str:
    """Return *text* ready to embed in a rich markup string.

    Applies :func:`printable` and then escapes rich markup, so neither
    terminal escapes nor ``[bold]``/``[link=...]`` tags are interpreted.
    """
    from rich.markup import escape

    return escape(printable("" if text is None else str(text), multiline=multiline))
