"""Decide, per input file of an imported task, whether grading restores it from the pristine copy.

Published graders recompute their expected answers from the input files in the workspace, so an
agent that truncates the inputs and writes outputs consistent with the truncation scores 1.0.
Restoring the inputs before grading closes that hole, but only for files the agent is not asked
to change: a config it must fix, a journal it must append to, files it must move keep the agent's
version. The instruction is read clause by clause, the way its author meant it:

- prohibitions, of a file or of a whole folder ("Do not modify files under input/", "Leave
  everything in data/ as it is", "the files in config/ are read-only", "leave everything else
  untouched"), with their exceptions ("except config/local.yaml");
- "only X" ("only adjust config/config.json", "the only file you should edit is ..."): X is to
  change, every other input is protected;
- change requests on files or folders ("fix src/parser.py", "append to journal.md", "move every
  file in inbox/", "apply these changes in place to a.md and b.md", "update both files in place");
- what only looks like a request: nouns and adjectives ("the 3 most recent updates", "the change
  log", "the updated prices", "sorted by date"), new files written into an input folder, and
  changes whose result goes to another file ("sort data.csv and write it to output/x.csv").

A file-level statement beats a folder-level one, a prohibition of a file beats everything, and
when nothing asks for a change the file is restored (the safe side). Every decision records its
reason; the spec lists them so a reviewer can override any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

_VERBS = (r"edit|update|modify|fix|change|correct|rewrite|append|add|insert|remove|delete|rename|move|reorgani[sz]e|"
          r"organi[sz]e|sort|clean|replace|patch|refactor|bump|reformat|normali[sz]e|dedupe|deduplicate|"
          r"de-duplicate|overwrite|implement|complete|resolve|amend|adjust|tidy|fill|migrate|convert|rotate|archive|"
          r"prune|trim|strip|uncomment|comment|enable|disable|tick|mark|set|raise|lower|increase|decrease|"
          r"repair|restructure|rearrange|redact|anonymi[sz]e|mask|translate|regenerate|rebuild|refresh|upgrade|"
          r"downgrade|revise|rework|undo|revert|restore|truncate|drop|purge|wipe|erase|put|take|pull|extract|cut|"
          r"reorder|renumber|retitle|relabel|recategori[sz]e|recalculate|recompute|fill in|insert|empty|clear|reset|blank|"
          r"de-?duplicate|switch|zero")
_CHANGE = re.compile(rf"\b(?:{_VERBS})(?:s|es|d|ed|ing)?\b")
_VERB_ANY = rf"(?:{_VERBS})(?:s|es|d|ed|ing)?"
_TAKES_FROM = re.compile(r"^(?:remove|delete|take|pull|extract|cut|strip|drop|purge|erase|move|wipe)")
_NOUNISH_BEFORE = re.compile(r"(?:\b(?:the|a|an|any|these|those|this|that|its|their|his|her|our|your|my|each|every|no|"
                             r"recent|latest|last|new|first|next|previous|pending|open|most|all|of|few|many|several|"
                             r"daily|weekly|monthly|minor|major|small|big|large|planned|proposed|suggested|recorded|"
                             r"listed|required|requested|needed|past|\d+)\s+)$")
_DESCRIPTIVE_BEFORE = re.compile(r"\b(?:it|which|that|this|they|who|he|she|we|i|i've|we've|i have|we have|"
                                 r"would|could|might|does|did|"
                                 r"whether|if)\s+(?:\w+ly\s+)?$")
_NOUNISH_AFTER = re.compile(r"^\s+(?:log|logs|list|lists|history|histories|notes|note|summary|summaries|count|counts|"
                            r"request|requests|entries|entry|record|records|sets|ticket|tickets|report|reports|"
                            r"points|items|item|marks|date|dates|time|times|window|windows|sheet|sheets|rules?|"
                            r"policy|policies|of\b)\b(?![/.\w-])")
_NOT_A_CHANGE = re.compile(r"add(?:s|ing)?\s+(?:it\s+|them\s+|these\s+|those\s+|everything\s+|all\s+)?"
                           r"(?:up|together)\b|set(?:s)?\s+(?:up|aside)\b|put(?:s)?\s+together\b|"
                           r"take(?:s)?\s+(?:a look|into account|note)\b|pull(?:s)?\s+(?:up|in)\b|mark(?:s)?\s+down\b")
_NEG_LEAD = (r"\b(?:do not|don't|dont|never|must not|mustn't|should not|shouldn't|may not|cannot|can't|can not|"
             r"are not to|is not to|not allowed to|not permitted to|no need to|don't need to|do not need to|"
             r"you don't have to|without|nor)\s+(?!forget\b|hesitate\b|just\b)(?:\w+\s+){0,2}?")
_NEG_PRE = re.compile(_NEG_LEAD + rf"(?:{_VERB_ANY}|touch(?:ing)?|alter(?:ing)?|mess with|tamper with|write (?:to|into))\b"
                      r"|\b(?:leave|keep)\b[^;!?\n]{0,90}?\b(?:unchanged|untouched|unmodified|as is|as-is|as they are|as it is|"
                      r"as it was|as they were|intact|alone|the way (?:it is|they are)|in their original state|"
                      r"in its original state|where (?:it is|they are))\b"
                      r"|\b(?:hands off|keep your hands off|stay away from|steer clear of)\b"
                      r"|\btreat\b[^;!?\n]{0,60}?\bas (?:a )?(?:reference|read[- ]only)\b")
_NEG_POST = re.compile(r"^[^;!?\n]{0,40}?\b(?:is|are|stays?|remains?|must stay|must remain|should stay|should remain|"
                       r"needs? to stay|has to stay|have to stay|must be left|should be left|be left|is to stay|are to stay)"
                       r"\s+(?:\w+\s+){0,2}?(?:unchanged|untouched|unmodified|read-only|read only|intact|as is|"
                       r"as it (?:is|was)|as they (?:are|were)|alone|the same|exactly as)\b"
                       r"|^[^;!?\n]{0,40}?\b(?:is|are)\s+(?:\w+\s+)?(?:read-only|read only|fine|correct|right|ok|okay|"
                       r"reference only|for reference|off limits|off-limits|third-party and stays untouched)\b"
                       r"|^[^;!?\n]{0,30}?\b(?:must|should|may|can)(?: not|n't)\s+(?:be\s+)?(?:\w+\s+)?"
                       rf"(?:{_VERB_ANY}|touched|altered|change)\b"
                       r"|^[^;!?\n]{0,20}?\b(?:stays?|remains?)\s+(?:exactly\s+)?as\b|^\s+(?:itself\s+)?(?:should|must)\s+be\s+left\b")
_NOTHING = re.compile(r"\b(?:nothing|no file|no files|none of the files|none of them|no changes?)\b[^;!?\n]{0,60}?"
                      rf"\b(?:may|should|must|can|is to|are to|will|has to|have to|need to)\s+(?:\w+\s+)?(?:be\s+)?"
                      rf"(?:{_VERB_ANY}|differ|go|touched|altered)\b|\bno (?:changes|edits|modifications)\b[^;!?\n]{{0,40}}?"
                      r"\b(?:to|in|under|are needed|needed)\b|\b(?:nothing|none) (?:in|under|inside) ")
_ONLY = re.compile(
    r"\b(?:only|just)\s+(?:\w+\s+){0,1}?(?:edit|modify|change|touch|adjust|update|fix|patch|alter|write to|rewrite)\b"
    r"|\b(?:edit|modify|change|touch|adjust|update|fix|patch|alter|rewrite)\s+only\b"
    r"|\bthe only (?:file|files|thing|one)s? (?:you|that)?\s*(?:\w+\s+){0,3}?(?:edit|modify|change|touch|adjust|update|"
    r"fix|patch|alter)\b"
    r"|\b(?:limit|restrict|confine) (?:your|all|the)? ?(?:changes|edits|work)\s+to\b"
    r"|\b(?:restrict|confine|limit) yourself to\b|\bstick to\b|\bkeep (?:your )?(?:changes|edits) (?:to|within)\b"
    r"|\b(?:changes|edits) (?:should|must) (?:only )?(?:be )?(?:limited|confined|restricted) to\b"
    r"|\b(?:edit|modify|change|touch) nothing (?:but|except|other than)\b|\bnothing (?:but|except|other than)\b"
    r"|\bno (?:other )?files? (?:other than|except|but)\b"
    r"|\bonly\b(?=(?:[^;!?.]|\.(?=\S)){0,120}?\b(?:should|may|can|must|need to|needs to|is to|are to|will)\s+(?:be\s+)?"
    r"(?:change|changed|edited|modified|updated|touched)\b)"
    r"|\b(?:is|are) the (?:only|sole|one) (?:files?|ones?|thing)\b")
_EXCEPT = re.compile(r"\b(?:except(?: for)?|other than|apart from|besides|but not|aside from|save for|excluding|"
                     r"with (?:one|the) exception(?: of)?|the exception is)\b")
_EVERYTHING_ELSE = re.compile(r"\b(?:everything else|all other (?:files|inputs|documents)|any other (?:files?|inputs?)|"
                              r"the other (?:files|inputs)|the rest(?! of (?:each|the|this|that|every) (?:file|line|row|section)\b)"
                              r"(?: of the (?:files|inputs|workspace|repo))?|"
                              r"anything else|other files|all the others|every other file|the remaining (?:\w+ )?files|"
                              r"my other (?:\w+ )?files|the other (?:\w+ )?files)\b")
_IN_PLACE = re.compile(r"\bin[- ]place\b|\bdirectly (?:in|into)\b|\bright there\b|\bunder the same (?:file )?name\b|"
                       r"\bin the (?:same )?(?:file|files) (?:itself|themselves)\b|\bsave (?:it|them) back\b|"
                       r"\b(?:overwrite|overwriting) (?:it|them|the (?:original|file|files))\b")
_PRONOUN = re.compile(r"\b(?:it|them|this file|that file|these files|those files|the file|the files|both files|both|"
                      r"each of them|each one|either file|the original|the originals|the source file|the same file|"
                      r"each file|there|that line|that file)\b")
_PRONOUN_OBJECT = re.compile(r"^\s+(?:it|them|that|those|this|these|both|each one|each of them|the file|the files|"
                             r"both files|that line|that section|the same file|(?:it|them) there)\b")
_SOURCE_BEFORE = re.compile(r"\b(?:from|using|based on|according to|per|see|following|listed in|described in|"
                            r"found in|given in|in line with|against|compared? (?:to|with)|with the \w+ (?:in|from)|"
                            r"translating from|copy in|copies in|(?:is|are) in|(?:is|are) listed in|(?:is|are) kept in)"
                            r"\s+(?:\S+\s+){0,3}?$")
_POST_CHANGE = re.compile(rf"^\s*(?:itself\s+)?(?:should|must|needs? to|has to|have to|is to|are to|will have to)\s+(?:be\s+)?"
                          rf"(?:{_VERB_ANY}|become)\b|^\s+needs?\s+(?:\w+ing)\b|"
                          r"^\s+(?:is|are)\s+(?:out of date|outdated|wrong|broken|stale|incorrect|missing|a mess|messed up)|"
                          r"^(?:[^;!?.]|\.(?=\S)){0,40}?\bwhere you (?:should|must|need to|have to) " + _VERB_ANY + r"\b|"
                          r"^(?:[^;!?.]|\.(?=\S)){0,60}?\bwhich (?:needs|need|has to|have to|must|should)\s+(?:be\s+)?(?:the\s+)?"
                          r"(?:\w+\s+){0,3}")
_TYPE_WORDS = {r"\b(?:photos?|images?|pictures?|pics|jpe?gs?)\b": (".jpg", ".jpeg", ".png", ".heic", ".gif", ".webp"),
               r"\bshell scripts?\b": (".sh", ".bash"), r"\bpython (?:files|scripts|modules)\b": (".py",),
               r"\bpdfs?\b": (".pdf",), r"\bcsv files?\b|\bcsvs\b": (".csv",),
               r"\bmarkdown (?:files|notes)\b|\b\.md files\b": (".md",), r"\bjson files\b": (".json",),
               r"\byaml files\b": (".yaml", ".yml"), r"\blog files\b": (".log",), r"\bscans?\b": (".pdf", ".jpg", ".png")}
_FILE_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]*\.[A-Za-z0-9]{1,5}\b|(?<![\w/.-])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")
_WRITE = re.compile(r"\b(?:write|save|put|store|export|output|emit|copy|produce|generate|create|send|dump)\w*\b|"
                    r"(?<!\bin )\bplace\b")
_FILE_EXT = re.compile(r"(?:/|\.(?:csv|tsv|json|jsonl|md|txt|ya?ml|py|js|ts|sh|html?|log|xml|ini|toml|cfg|conf|env|ics|"
                       r"eml|vcf|pdf|docx?|xlsx?|png|jpe?g|sql|j2|tf|rb|go|java|bak|zip|tar|gz)$)", re.I)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "no.", "fig.", "cf.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSES = re.compile(r";\s*|\s+—\s+(?!except|apart|other than|with the exception)|\s+-{1,2}\s+(?!except|apart)|"
                      r",\s*(?=(?:but|yet|however|though)\b)|"
                      r",\s+(?=(?:do not|don't|never|leave|keep)\b)|\s+and\s+(?=(?:do not|don't|never|leave|make sure)\b)")
_COORD = re.compile(r"^\s*(?:,|and|or|&|, and|, or|as well as)\s*$")
_GONE = re.compile(r"not\s+(?:os\.path\.(?:exists|isfile|lexists)|[\w().\[\]'\"/ +]*\.(?:exists|is_file)\(\))")
_MAX_GAP_WORDS = 12


@dataclass(frozen=True)
class Decision:
    """One input file: restore it before grading or keep the agent's version, and why."""

    path: str
    restore: bool
    why: str


@dataclass(eq=False)
class _Mention:
    paths: list[str]        # the inputs it refers to
    start: int
    end: int
    level: str              # "file" or "folder" (or "rest" for "everything else")


@dataclass
class _Clause:
    text: str
    quote: str
    mentions: list[_Mention] = field(default_factory=list)
    antecedent: list[_Mention] = field(default_factory=list)  # what "it" / "them" in the next clause refers to


def decide(inputs: list[str], instruction: str, grader_source: str = "") -> list[Decision]:
    """A decision for every input file (same order)."""
    verdicts: dict[str, tuple[int, bool, str]] = {}  # path -> (priority, restore, why); the highest priority wins

    def say(paths: Iterable[str], priority: int, restore: bool, why: str) -> None:
        for path in paths:
            if path not in verdicts or priority > verdicts[path][0]:
                verdicts[path] = (priority, restore, why)

    for path in inputs:
        name = path.rsplit("/", 1)[-1]
        line = next((ln for ln in grader_source.splitlines() if (path in ln or name in ln) and _GONE.search(ln)), None)
        if line is not None:
            say([path], 100, False, f"kept: the grader checks that it is gone ({line.strip()[:100]})")
    clauses = _clauses(instruction, inputs)
    rest_bans: list[str] = []
    previous: list[_Mention] = []
    for clause in clauses:
        _read_clause(clause, previous, inputs, say, rest_bans)
        if clause.mentions or _FILE_PATH.search(clause.text):
            previous = clause.antecedent
    kept = {p for p, (_, restore, _) in verdicts.items() if not restore}
    for quote in rest_bans:  # "leave everything else untouched": every input no clause asks to change
        say([p for p in inputs if p not in kept], 40, True,
            f"restored: the instruction says to leave the rest alone: \"{quote}\"")
    named = {p for c in clauses for m in c.mentions for p in m.paths}
    out = []
    for path in inputs:
        if path in verdicts:
            _, restore, why = verdicts[path]
            out.append(Decision(path, restore, why))
        elif path in named:
            out.append(Decision(path, True, "restored: the instruction reads it but does not ask to change it"))
        else:
            out.append(Decision(path, True, "restored: the instruction does not name it"))
    return out


def _read_clause(clause: _Clause, previous: list[_Mention], inputs: list[str], say: Any, rest_bans: list[str]) -> None:
    """Record what one clause says about the inputs it names (or, through a pronoun, the last ones named)."""
    text, lower, quote, mentions = clause.text, clause.text.lower(), clause.quote, clause.mentions
    excepted = _excepted(lower, mentions)
    if excepted:
        exc_paths = [p for m in excepted for p in m.paths]
        mentions = [m for m in mentions if m not in excepted]
    else:
        exc_paths = []
    only = _ONLY.search(lower)
    if only:
        after = [m for m in mentions if m.start >= only.start()]
        before = [m for m in mentions if m.end <= only.start()]
        targets = (_group_starting_at(mentions, after[0], lower) if after and not re.match(r"\b(?:is|are) the", only.group(0))
                   else _group_ending_at(mentions, before[-1], lower) if before
                   else [] if mentions else list(previous))
        if targets:
            chosen = [p for m in targets for p in m.paths]
            say(chosen, 80, False, f"kept: the instruction asks to change only it: \"{quote}\"")
            say([p for p in inputs if p not in chosen], 65, True,
                f"restored: the instruction asks to change only {', '.join(chosen)[:80]}: \"{quote}\"")
            return
    banned = _banned(lower, mentions, previous)
    if banned is not None:
        for m in banned:
            say(_filtered(m, lower), 90 if m.level == "file" else 60, True,
                f"restored: the instruction says not to change it: \"{quote}\"")
        if exc_paths:
            say(exc_paths, 70, False, f"kept: the instruction excepts it from what must not change: \"{quote}\"")
        if _EVERYTHING_ELSE.search(lower):
            rest_bans.append(quote)
        return
    if _EVERYTHING_ELSE.search(lower) and _rest_is_left_alone(lower):
        rest_bans.append(quote)
        return
    changed = _changed(text, lower, mentions, previous, inputs)
    for m in changed:
        paths = [p for p in _filtered(m, lower) if p not in exc_paths]
        say(paths, 75 if m.level == "file" else 50, False, f"kept: the instruction asks to change it: \"{quote}\"")
    if exc_paths and changed:  # "update every file under docs/ except docs/LICENSE": the exception is not changed
        say(exc_paths, 72, True, f"restored: the instruction excepts it from the change: \"{quote}\"")
    elif exc_paths and not changed and _CHANGE.search(lower):
        say(exc_paths, 70, False, f"kept: the instruction asks to change it: \"{quote}\"")


def _banned(lower: str, mentions: list[_Mention], previous: list[_Mention]) -> list[_Mention] | None:
    """The mentions a prohibition in this clause covers (None: the clause prohibits nothing)."""
    found: list[_Mention] = []
    hit = False
    for neg in _NEG_PRE.finditer(lower):  # "do not modify X", "leave X alone", "hands off X"
        hit = True
        objects = [m for m in mentions if m.start >= neg.start() - 1 and m.start - neg.end() <= 90]
        inside = [m for m in mentions if neg.start() <= m.start < neg.end()]
        found += inside + [m for m in objects if m not in inside]
    for m in mentions:  # "X must stay unchanged", "X is read-only", "X is fine as it is"
        if _NEG_POST.match(lower[m.end:]) and not _stated_as_wrong(lower[m.end:]):
            hit = True
            found += _group_ending_at(mentions, m, lower)
    for neg in _NOTHING.finditer(lower):  # "nothing in tests/ may change", "no changes to the data"
        hit = True
        found += [m for m in mentions if neg.start() <= m.start <= neg.end() + 20]
    if not hit:
        return None
    if not mentions and previous and re.search(rf"\b(?:{_VERBS}|touch|alter|leave|keep)\w*\s+(?:it|them|those|these|"
                                               r"both|either|that file|the file|the files|those files)\b", lower):
        return list(previous)
    return list(dict.fromkeys(found))


def _stated_as_wrong(after: str) -> bool:
    return bool(re.match(r"^(?:[^;!?.]|\.(?=\S)){0,30}\b(?:wrong|broken|outdated|out of date|incorrect)\b", after))


def _rest_is_left_alone(lower: str) -> bool:
    return bool(re.search(r"\b(?:alone|untouched|unchanged|as is|as it is|as they are|the same|intact|be left)\b|"
                          r"\b(?:fine|correct)\b|shouldn't change|should not change|must not change|took me ages", lower))


def _changed(text: str, lower: str, mentions: list[_Mention], previous: list[_Mention],
             inputs: list[str]) -> list[_Mention]:
    """The mentions this clause asks to change (pronouns resolved to the last inputs named)."""
    out: list[_Mention] = []
    in_place = bool(_IN_PLACE.search(lower))
    for verb in _CHANGE.finditer(lower):
        if not _is_request(lower, verb):
            continue
        after = lower[verb.end():]
        pron = _PRONOUN_OBJECT.match(after)
        if pron and any(m.start - verb.end() - pron.end() <= 1 and m.start >= verb.end() + pron.end()
                        for m in mentions):
            pron = None  # "remove the file config/x.env": a noun phrase naming an input, not a pronoun
        where = re.match(r"^\s+(?:it|them|that)\s+(?:in|inside|within|at)\s+$", lower[verb.end():next(
            (m.start for m in mentions if m.start > verb.end()), verb.end())])
        if where:  # "fix it in src/export.py", "correct them in finance/budget.csv"
            out += _group_starting_at(mentions, next(m for m in mentions if m.start > verb.end()), lower)
            continue
        if pron or re.match(r"^\s+(?:\w+\s+){0,4}?(?:in|from|to|of) (?:it|them|there)\b", after) \
                or re.search(r"\b(?:it|them)\s+there\b", after[:40]):
            before = [m for m in mentions if m.end <= verb.start()]
            out += _group_ending_at(mentions, before[-1], lower) if before else list(previous)
            continue
        targets = _object_of(verb, lower, mentions, inputs)
        if targets:
            out += targets
        elif in_place and not mentions:
            out += list(previous)
    for m in mentions:  # "X should be updated", "X is out of date", "in X, rename the column"
        after = lower[m.end:]
        if _POST_CHANGE.match(after) or (re.search(r"(?:^|[.;:]\s*)in\s+(?:the\s+)?$", lower[:m.start])
                                          and re.match(rf"^\s*,\s*(?:\w+\s+)?{_VERB_ANY}\b", after)):
            out.append(m)
        else:
            base = m.end
            for v in _CHANGE.finditer(after[:100]):
                verb_at = re.compile(re.escape(v.group(0))).search(lower, base + v.start())
                tail = after[v.end():v.end() + 50]
                if verb_at is None or not _is_request(lower, verb_at) or re.search(r"[.;!?]", after[:v.start()]):
                    continue
                if re.match(r"^\s+(?:it|them)\b|^\s+(?:\w+\s+){0,4}?(?:in|into|to|from|of|out of) (?:it|them)\b|"
                            r"^(?:[^;!?.]|\.(?=\S)){0,40}?\bthere\b", tail):
                    out.append(m)
                    break
            if m not in out and re.search(r"\.(?:py|js|ts|sh|rb|go|java|pl|php)$", m.paths[0]) and \
                    re.match(r"^(?:[^;!?.]|\.(?=\S))*?[.;]?\s*make (?:it|them)\s+(?:\w+\s+)?(?:skip|handle|accept|ignore|support|work|"
                             r"use|print|return|read|write|run|pass|stop|keep|treat|round|parse)\b", after):
                out.append(m)
    if in_place:
        out += [m for m in mentions if m.level == "file" and not _is_source(lower, m)]
    if not mentions and previous and re.match(r"^\s*(?:please\s+)?(?:now\s+)?make (?:it|them)\s+(?:\w+\s+)?"
                                             r"(?:skip|handle|accept|ignore|support|work|use|print|return|read|write|"
                                             r"run|pass|stop|keep|treat|round|parse|fail|raise|log)\b", lower) \
            and all(re.search(r"\.(?:py|js|ts|sh|rb|go|java|pl|php)$", p) for m in previous for p in m.paths):
        out += list(previous)  # "Make it skip those rows": change the program named before
    return [m for m in dict.fromkeys(out) if not _goes_elsewhere(text, lower, m, inputs) or m.level == "folder"]


_AMBIGUOUS = re.compile(r"^(?:empty|clean|clear|blank|complete|correct|set|mark|check|fill|open|close|"
                        r"comment|switch|sort|record|lower|zero|strip|reset)$")
_DETERMINER_NEXT = re.compile(r"^\s+(?:the|a|an|all|every|each|any|this|that|these|those|its|their|my|our|your|it|them|"
                              r"up|out|off|in|down|both|every|[\w.-]*[/.][\w./-]+)\b")


def _is_request(lower: str, verb: re.Match) -> bool:
    """The change word is a request here, not a noun, adjective, description or question."""
    before, word = lower[:verb.start()], verb.group(0)
    at_start = not before.strip() or re.search(r"(?:[:,]|\b(?:please|then|and|also|just|now))\s*$", before.strip()) \
        and not re.search(r"\w+,\s*$", before)
    if _AMBIGUOUS.match(word) and not _DETERMINER_NEXT.match(lower[verb.end():]) and not at_start:
        return False  # "empty strings", "clean data", "correct values": an adjective
    if _NOT_A_CHANGE.match(lower, verb.start()) or _NOUNISH_BEFORE.search(before) or _DESCRIPTIVE_BEFORE.search(before):
        return False
    if _NOUNISH_AFTER.match(lower[verb.end():]):
        return False
    if re.search(r"\b(?:do not|don't|never|must not|should not|without|no need to|don't need to)\s+"
                 r"(?!forget\b|hesitate\b|just\b)(?:\w+\s+){0,2}$", before):
        return False  # a prohibition, handled by _banned
    if word.endswith("ed") and not re.search(r"\b(?:be|been|is|are|get|gets|got|have|has|had)\s+$", before):
        return False  # "the corrected totals", "sorted by date"
    if word.endswith("ing") and re.search(r"\b(?:without|before|after|while|when|of|for)\s+$", before):
        return False
    if word.endswith(("s", "es")) and not word.endswith("ss") and re.search(r"\b(?:\w+)\s+$", before) and \
            not re.search(r"\b(?:please|and|then|also|just|simply)\s+$", before) and before.strip():
        return False  # "the script removes ...", "it adds ...": a description
    return True


def _object_of(verb: re.Match, lower: str, mentions: list[_Mention], inputs: list[str]) -> list[_Mention]:
    """The inputs the verb acts on: the first mention after it, within a few words, that is not a source
    (for "move/remove ... from X" the source is a target too), with the mentions listed along with it
    and any "to the end of Y" / "into Y" destination."""
    takes_from = bool(_TAKES_FROM.match(verb.group(0)))
    out: list[_Mention] = []
    skip: set[int] = set()
    for i, m in enumerate(mentions):
        if m.start < verb.end() or i in skip:
            continue
        gap = lower[verb.end():m.start]
        if len(gap.split()) > _MAX_GAP_WORDS or re.search(r"[.;!?](?:\s|$)|\((?!\))", gap):
            break
        if _is_source(lower, m) and not (takes_from and re.search(r"\b(?:from|out of)\s+(?:the\s+)?$", lower[:m.start])):
            group = _group_starting_at(mentions, m, lower)
            skip.update(mentions.index(g) for g in group)
            continue
        if not out:
            out = _group_starting_at(mentions, m, lower)
            if not (takes_from or re.match(r"^(?:add|append|insert|put|copy|write)", verb.group(0))):
                break
            continue
        if re.search(r"\b(?:to|at|into)\s+(?:the\s+)?(?:(?:end|top|bottom|start|beginning)\s+of\s+(?:the\s+)?)?$",
                     lower[:m.start]):
            out += _group_starting_at(mentions, m, lower)
            break
    return out


def _is_source(lower: str, m: _Mention) -> bool:
    return bool(_SOURCE_BEFORE.search(lower[:m.start]))


def _group_starting_at(mentions: list[_Mention], first: _Mention, lower: str) -> list[_Mention]:
    """`first` and the mentions listed right after it ("a.md, b.md and c.md")."""
    out = [first]
    i = mentions.index(first)
    while i + 1 < len(mentions) and _COORD.match(lower[mentions[i].end:mentions[i + 1].start]):
        i += 1
        out.append(mentions[i])
    return out


def _group_ending_at(mentions: list[_Mention], last: _Mention, lower: str) -> list[_Mention]:
    """`last` and the mentions listed right before it."""
    out = [last]
    i = mentions.index(last)
    while i > 0 and _COORD.match(lower[mentions[i - 1].end:mentions[i].start]):
        i -= 1
        out.insert(0, mentions[i])
    return out


def _excepted(lower: str, mentions: list[_Mention]) -> list[_Mention]:
    """The mentions right after "except / other than / apart from" (and listed with them)."""
    m = _EXCEPT.search(lower)
    if not m:
        return []
    after = [men for men in mentions if men.start >= m.end() and men.level == "file"]
    if not after or len(lower[m.end():after[0].start].split()) > 4:
        return []
    return _group_starting_at(mentions, after[0], lower)


def _filtered(m: _Mention, lower: str) -> list[str]:
    """A folder mention narrowed by the kind of file the clause speaks of ("the photos in downloads/")."""
    if m.level != "folder":
        return list(m.paths)
    near = lower[max(0, m.start - 60):m.start]
    for pattern, suffixes in _TYPE_WORDS.items():
        if re.search(pattern, near):
            narrowed = [p for p in m.paths if p.lower().endswith(suffixes)]
            return narrowed or list(m.paths)
    token = re.search(r"\bthe\s+(\d{4}|[a-z]+-\d+)\s+(?:files|notes|ones|logs|reports|entries)\b", lower)
    if token:
        narrowed = [p for p in m.paths if token.group(1) in p.lower()]
        return narrowed or list(m.paths)
    return list(m.paths)


def _goes_elsewhere(text: str, lower: str, m: _Mention, inputs: list[str]) -> bool:
    """The clause sends the result to a file that is not an input ("... and write them to output/x.csv")."""
    rest = text[m.end:]
    for w in _WRITE.finditer(rest.lower()):
        for f in _FILE_PATH.finditer(rest[w.end():w.end() + 120]):
            name = f.group(0)
            if _FILE_EXT.search(name) and not any(p == name or p.endswith("/" + name) for p in inputs):
                return True
    into = re.search(r"\b(?:into|as)\s+(?:one|a|an|the)?\s*(?:\w+\s+){0,3}?((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w*)", rest)
    return bool(into and not any(p == into.group(1) for p in inputs))


# ---------------------------------------------------------------------------------------------
# Reading the instruction


def _sentences(instruction: str) -> list[str]:
    pieces, out = _SENTENCE_END.split(instruction), []
    for piece in (p for p in pieces if p and p.strip()):
        if out and out[-1].lower().endswith(_ABBREVIATIONS):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [p.strip() for p in out]


def _clauses(instruction: str, inputs: list[str]) -> list[_Clause]:
    out = []
    for sentence in _sentences(instruction):
        quote = _quote(sentence)
        for part in _CLAUSES.split(sentence):
            if part and part.strip():
                clause = _Clause(part, quote, _mentions(part, inputs))
                clause.antecedent = _antecedent(clause, inputs)
                out.append(clause)
    return out


def _antecedent(clause: _Clause, inputs: list[str]) -> list[_Mention]:
    """The inputs a later pronoun refers to: the clause's first file that is not a source (none when the
    clause is about a new file, e.g. "Write scripts/new.py that reads config/keys.json")."""
    first_path = _FILE_PATH.search(clause.text)
    if first_path and not any(p == first_path.group(0) or p.endswith("/" + first_path.group(0)) for p in inputs):
        if not clause.mentions or clause.mentions[0].start > first_path.start():
            return []
    lower = clause.text.lower()
    files = [m for m in clause.mentions if m.level == "file" and not _is_source(lower, m)]
    if files:
        return _group_starting_at(clause.mentions, files[0], lower)
    return _group_starting_at(clause.mentions, clause.mentions[0], lower) if clause.mentions else []


def _mentions(text: str, inputs: list[str]) -> list[_Mention]:
    """Where `text` names inputs: a path, a distinctive file name, or a folder holding inputs."""
    found: list[_Mention] = []
    taken: list[tuple[int, int]] = []

    def add(paths: list[str], m: re.Match, level: str) -> None:
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            return
        taken.append((m.start(), m.end()))
        found.append(_Mention(paths, m.start(), m.end(), level))

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
        pattern = (rf"(?<![\w./-])(?:\./)?{re.escape(folder)}(?:/(?![\w-]|\.\w)|\s+(?:folder|directory|dir)\b)"
                   rf"|\b(?:the|in|under|inside|within|from|of)\s+(?:the\s+)?{re.escape(folder)}\s+"
                   rf"(?:folder|directory|dir|files)\b|(?<![\w./-]){re.escape(folder)}(?=/\*)")
        if "/" in folder:
            pattern += rf"|(?<![\w./-]){re.escape(folder)}(?![\w/-]|\.\w)"
        else:  # a bare word ("tests", "data") counts where it can only mean the folder
            pattern += (rf"|\b(?:in|under|inside|within)\s+(?:the\s+)?{re.escape(folder)}\b(?![\w/.-])"
                        rf"|\bthe\s+{re.escape(folder)}\s+themselves\b|\bmy\s+{re.escape(folder)}\s+folder\b")
        for m in re.finditer(pattern, text, re.I):
            add(paths, m, "folder")
    return sorted(found, key=lambda m: m.start)


def _quote(sentence: str) -> str:
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= 140 else sentence[:137] + "..."
