"""Make untrusted text (agent output, file names, grader output) safe to show.

Anything an agent controls can reach a terminal or a report. These helpers
turn control characters, terminal escape sequences and bidi overrides into
visible escapes so that the text can neither drive the terminal nor forge
extra lines or reorder what the reader sees. Every surface a person reads (the
terminal tables, `workspace.diff`, markdown, HTML pages, dataset metadata)
goes through this one module: :func:`printable` for plain text, and
:func:`markdown_safe`, :func:`markdown_code`, :func:`html_safe` and
:func:`markup_safe` where the text is also embedded in markup.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["printable", "split_lines", "quote_path", "markup_safe", "markdown_safe", "markdown_code", "html_safe"]

_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}

# Bidi embeddings/overrides/isolates and marks, line/paragraph separators.
_INVISIBLE_FORMAT = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029")

# Those, controls and lone surrogates, and the invisible characters that can hide text: soft hyphen,
# zero-width space, word joiner and invisible operators, deprecated shaping controls, BOM,
# interlinear annotations and tag characters (which can carry hidden ASCII). Zero-width (non-)joiners
# and variation selectors stay: emoji and many scripts need them.
_UNSAFE_RE = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)


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

    C0 controls, DEL, C1 controls, lone surrogates, bidi overrides/isolates,
    Unicode line separators and invisible characters that can hide text
    (zero-width space, BOM, tag characters, ...) become ``\\n``, ``\\x1b``, ``\\u202e``, ...;
    bytes that were not valid UTF-8 (``bytes.decode(..., "surrogateescape")``)
    become ``\\xff``. With ``multiline=True``, newline and tab are kept as they
    are (carriage return is still escaped so it cannot overwrite a line).
    """
    if not isinstance(text, str):
        text = str(text)
    if not _UNSAFE_RE.search(text):
        return text

    def repl(match: re.Match[str]) -> str:
        ch = match.group(0)
        if multiline and ch in "\n\t":
            return ch
        if "\udc80" <= ch <= "\udcff":  # a byte that was not UTF-8, decoded with surrogateescape
            return f"\\x{ord(ch) - 0xDC00:02x}"
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


def split_lines(text: str) -> list[str]:
    """*text* split after each newline only, ends kept.

    Unlike ``str.splitlines`` a carriage return, form feed, NEL or U+2028
    stays inside its line, where :func:`printable` shows it: one line of a
    file is one line of a diff.
    """
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


_MARKDOWN = str.maketrans({"<": "&lt;", ">": "&gt;", "|": "\\|", "`": "\\`"})
_ENTITY = re.compile(r"&(?=#?\w+;)")


def markdown_safe(text: object) -> str:
    """One line of *text* as plain markdown, also inside a table cell.

    :func:`printable`, then HTML tags and character references (``&#x202e;``
    would bring the bidi override back) shown as text, table pipes and
    backticks escaped, and ``](`` broken so no link or image forms.
    """
    shown = _ENTITY.sub("&amp;", printable("" if text is None else str(text))).translate(_MARKDOWN)
    return shown.replace("](", "]\\(")


def markdown_code(text: object, *, table: bool = False) -> str:
    """*text* as one markdown code span that its own backticks cannot close.

    With ``table=True`` pipes are escaped too (a GFM table cell ends at a bare
    pipe, even inside a code span).
    """
    shown = printable("" if text is None else str(text))
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    if table:
        shown = shown.replace("|", "\\|")
    return f"{fence}{pad}{shown}{pad}{fence}"


def html_safe(text: object, *, multiline: bool = False) -> str:
    """*text* for an HTML page: :func:`printable` first (HTML escaping alone
    leaves bidi overrides and control characters), then HTML-escaped."""
    return html.escape(printable("" if text is None else str(text), multiline=multiline))
