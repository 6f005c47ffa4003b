"""Reading an imported task's instruction: sentences split into clauses, where each clause names inputs
(a path, a distinctive file name, a folder holding inputs, narrowed by the kind of file it speaks of),
what a later "it" / "them" refers to, and the inputs listed together ("a.md, b.md and c.md")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SOURCE_BEFORE = re.compile(
    r"\b(?:from|using|based on|according to|per|see|following|listed in|described in|"
    r"found in|given in|in line with|against|compared? (?:to|with)|with the \w+ (?:in|from)|"
    r"translating from|copy in|copies in|(?:is|are) in|(?:is|are) listed in|(?:is|are) kept in)"
    r"\s+(?:\S+\s+){0,3}?$"
)
_TYPE_WORDS = {
    r"\b(?:photos?|images?|pictures?|pics|jpe?gs?)\b": (".jpg", ".jpeg", ".png", ".heic", ".gif", ".webp"),
    r"\bshell scripts?\b": (".sh", ".bash"),
    r"\bpython (?:files|scripts|modules)\b": (".py",),
    r"\bpdfs?\b": (".pdf",),
    r"\bcsv files?\b|\bcsvs\b": (".csv",),
    r"\bmarkdown (?:files|notes)\b|\b\.md files\b": (".md",),
    r"\bjson files\b": (".json",),
    r"\byaml files\b": (".yaml", ".yml"),
    r"\blog files\b": (".log",),
    r"\bscans?\b": (".pdf", ".jpg", ".png"),
}
FILE_PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]*\.[A-Za-z0-9]{1,5}\b|(?<![\w/.-])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b"
)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "no.", "fig.", "cf.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSES = re.compile(
    r";\s*|\s+—\s+(?!except|apart|other than|with the exception)|\s+-{1,2}\s+(?!except|apart)|"
    r",\s*(?=(?:but|yet|however|though)\b)|"
    r",\s+(?=(?:do not|don't|never|leave|keep)\b)|\s+and\s+(?=(?:do not|don't|never|leave|make sure)\b)"
)
_COORD = re.compile(r"^\s*(?:,|and|or|&|, and|, or|as well as)\s*$")


@dataclass(eq=False)
class Mention:
    paths: list[str]  # the inputs it refers to
    start: int
    end: int
    level: str  # "file" or "folder" (or "rest" for "everything else")


@dataclass
class Clause:
    text: str
    quote: str
    mentions: list[Mention] = field(default_factory=list)
    antecedent: list[Mention] = field(default_factory=list)  # what "it" / "them" in the next clause refers to


def _sentences(instruction: str) -> list[str]:
    pieces, out = _SENTENCE_END.split(instruction), []
    for piece in (p for p in pieces if p and p.strip()):
        if out and out[-1].lower().endswith(_ABBREVIATIONS):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [p.strip() for p in out]


def split_clauses(instruction: str, inputs: list[str]) -> list[Clause]:
    out = []
    for sentence in _sentences(instruction):
        quote = _quote(sentence)
        for part in _CLAUSES.split(sentence):
            if part and part.strip():
                clause = Clause(part, quote, _mentions(part, inputs))
                clause.antecedent = _antecedent(clause, inputs)
                out.append(clause)
    return out


def _antecedent(clause: Clause, inputs: list[str]) -> list[Mention]:
    """The inputs a later pronoun refers to: the clause's first file that is not a source (none when the
    clause is about a new file, e.g. "Write scripts/new.py that reads config/keys.json")."""
    first_path = FILE_PATH.search(clause.text)
    if first_path and not any(p == first_path.group(0) or p.endswith("/" + first_path.group(0)) for p in inputs):
        if not clause.mentions or clause.mentions[0].start > first_path.start():
            return []
    lower = clause.text.lower()
    files = [m for m in clause.mentions if m.level == "file" and not is_source(lower, m)]
    if files:
        return group_starting_at(clause.mentions, files[0], lower)
    return group_starting_at(clause.mentions, clause.mentions[0], lower) if clause.mentions else []


def _mentions(text: str, inputs: list[str]) -> list[Mention]:
    """Where `text` names inputs: a path, a distinctive file name, or a folder holding inputs."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(paths: list[str], m: re.Match, level: str) -> None:
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            return
        taken.append((m.start(), m.end()))
        found.append(Mention(paths, m.start(), m.end(), level))

    for path in sorted(inputs, key=len, reverse=True):
        for m in re.finditer(rf"(?<![\w./-])(?:\./)?{re.escape(path)}(?![\w/-]|\.\w)", text):
            add([path], m, "file")
    names: dict[str, list[str]] = {}
    for path in inputs:
        names.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        if "/" in path:
            names.setdefault("/".join(path.split("/")[-2:]), []).append(path)
    for name, paths in sorted(names.items(), key=lambda kv: -len(kv[0])):
        for m in re.finditer(rf"(?<![\w./-]){re.escape(name)}(?![\w/-]|\.\w)", text):
            add(paths, m, "file")
        stem = name.rsplit(".", 1)[0]
        if "." in name and "/" not in name and len(stem) >= 4 and re.search(r"[A-Z_]", stem):
            for m in re.finditer(rf"(?<![\w./-]){re.escape(stem)}(?![\w/.-])", text):  # "the README", "CHANGELOG"
                add(paths, m, "file")
    folders: dict[str, list[str]] = {}
    for path in inputs:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folders.setdefault("/".join(parts[:i]), []).append(path)
    for folder, paths in sorted(folders.items(), key=lambda kv: -len(kv[0])):
        pattern = (
            rf"(?<![\w./-])(?:\./)?{re.escape(folder)}(?:/(?![\w-]|\.\w)|\s+(?:folder|directory|dir)\b)"
            rf"|\b(?:the|in|under|inside|within|from|of)\s+(?:the\s+)?{re.escape(folder)}\s+"
            rf"(?:folder|directory|dir|files)\b|(?<![\w./-]){re.escape(folder)}(?=/\*)"
        )
        if "/" in folder:
            pattern += rf"|(?<![\w./-]){re.escape(folder)}(?![\w/-]|\.\w)"
        else:  # a bare word ("tests", "data") counts where it can only mean the folder
            pattern += (
                rf"|\b(?:in|under|inside|within)\s+(?:the\s+)?{re.escape(folder)}\b(?![\w/.-])"
                rf"|\bthe\s+{re.escape(folder)}\s+themselves\b|\bmy\s+{re.escape(folder)}\s+folder\b"
            )
        for m in re.finditer(pattern, text, re.I):
            add(paths, m, "folder")
    return sorted(found, key=lambda m: m.start)


def _quote(sentence: str) -> str:
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= 140 else sentence[:137] + "..."


def is_source(lower: str, m: Mention) -> bool:
    return bool(_SOURCE_BEFORE.search(lower[: m.start]))


def group_starting_at(mentions: list[Mention], first: Mention, lower: str) -> list[Mention]:
    """`first` and the mentions listed right after it ("a.md, b.md and c.md")."""
    out = [first]
    i = mentions.index(first)
    while i + 1 < len(mentions) and _COORD.match(lower[mentions[i].end : mentions[i + 1].start]):
        i += 1
        out.append(mentions[i])
    return out


def group_ending_at(mentions: list[Mention], last: Mention, lower: str) -> list[Mention]:
    """`last` and the mentions listed right before it."""
    out = [last]
    i = mentions.index(last)
    while i > 0 and _COORD.match(lower[mentions[i - 1].end : mentions[i].start]):
        i -= 1
        out.insert(0, mentions[i])
    return out


def filtered(m: Mention, lower: str) -> list[str]:
    """A folder mention narrowed by the kind of file the clause speaks of ("the photos in downloads/")."""
    if m.level != "folder":
        return list(m.paths)
    near = lower[max(0, m.start - 60) : m.start]
    for pattern, suffixes in _TYPE_WORDS.items():
        if re.search(pattern, near):
            narrowed = [p for p in m.paths if p.lower().endswith(suffixes)]
            return narrowed or list(m.paths)
    token = re.search(r"\bthe\s+(\d{4}|[a-z]+-\d+)\s+(?:files|notes|ones|logs|reports|entries)\b", lower)
    if token:
        narrowed = [p for p in m.paths if token.group(1) in p.lower()]
        return narrowed or list(m.paths)
    return list(m.paths)
