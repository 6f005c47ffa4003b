"""What a clause of the instruction asks to change: change words that are requests (not nouns, adjectives,
descriptions or questions: "the updated prices", "sorted by date"), the inputs they act on, pronouns
resolved to the last inputs named, and changes whose result goes to another file."""

from __future__ import annotations

import re

from .instruction_clauses import FILE_PATH, Mention, group_ending_at, group_starting_at, is_source

VERBS = (
    r"edit|update|modify|fix|change|correct|rewrite|append|add|insert|remove|delete|rename|move|reorgani[sz]e|"
    r"organi[sz]e|sort|clean|replace|patch|refactor|bump|reformat|normali[sz]e|dedupe|deduplicate|"
    r"de-duplicate|overwrite|implement|complete|resolve|amend|adjust|tidy|fill|migrate|convert|rotate|archive|"
    r"prune|trim|strip|uncomment|comment|enable|disable|tick|mark|set|raise|lower|increase|decrease|"
    r"repair|restructure|rearrange|redact|anonymi[sz]e|mask|translate|regenerate|rebuild|refresh|upgrade|"
    r"downgrade|revise|rework|undo|revert|restore|truncate|drop|purge|wipe|erase|put|take|pull|extract|cut|"
    r"reorder|renumber|retitle|relabel|recategori[sz]e|recalculate|recompute|fill in|insert|empty|clear|reset|blank|"
    r"de-?duplicate|switch|zero"
)
CHANGE = re.compile(rf"\b(?:{VERBS})(?:s|es|d|ed|ing)?\b")
VERB_ANY = rf"(?:{VERBS})(?:s|es|d|ed|ing)?"
_TAKES_FROM = re.compile(r"^(?:remove|delete|take|pull|extract|cut|strip|drop|purge|erase|move|wipe)")
_NOUNISH_BEFORE = re.compile(
    r"(?:\b(?:the|a|an|any|these|those|this|that|its|their|his|her|our|your|my|each|every|no|"
    r"recent|latest|last|new|first|next|previous|pending|open|most|all|of|few|many|several|"
    r"daily|weekly|monthly|minor|major|small|big|large|planned|proposed|suggested|recorded|"
    r"listed|required|requested|needed|past|\d+)\s+)$"
)
_DESCRIPTIVE_BEFORE = re.compile(
    r"\b(?:it|which|that|this|they|who|he|she|we|i|i've|we've|i have|we have|"
    r"would|could|might|does|did|"
    r"whether|if)\s+(?:\w+ly\s+)?$"
)
_NOUNISH_AFTER = re.compile(
    r"^\s+(?:log|logs|list|lists|history|histories|notes|note|summary|summaries|count|counts|"
    r"request|requests|entries|entry|record|records|sets|ticket|tickets|report|reports|"
    r"points|items|item|marks|date|dates|time|times|window|windows|sheet|sheets|rules?|"
    r"policy|policies|of\b)\b(?![/.\w-])"
)
_NOT_A_CHANGE = re.compile(
    r"add(?:s|ing)?\s+(?:it\s+|them\s+|these\s+|those\s+|everything\s+|all\s+)?"
    r"(?:up|together)\b|set(?:s)?\s+(?:up|aside)\b|put(?:s)?\s+together\b|"
    r"take(?:s)?\s+(?:a look|into account|note)\b|pull(?:s)?\s+(?:up|in)\b|mark(?:s)?\s+down\b"
)
_IN_PLACE = re.compile(
    r"\bin[- ]place\b|\bdirectly (?:in|into)\b|\bright there\b|\bunder the same (?:file )?name\b|"
    r"\bin the (?:same )?(?:file|files) (?:itself|themselves)\b|\bsave (?:it|them) back\b|"
    r"\b(?:overwrite|overwriting) (?:it|them|the (?:original|file|files))\b"
)
_PRONOUN = re.compile(
    r"\b(?:it|them|this file|that file|these files|those files|the file|the files|both files|both|"
    r"each of them|each one|either file|the original|the originals|the source file|the same file|"
    r"each file|there|that line|that file)\b"
)
_PRONOUN_OBJECT = re.compile(
    r"^\s+(?:it|them|that|those|this|these|both|each one|each of them|the file|the files|"
    r"both files|that line|that section|the same file|(?:it|them) there)\b"
)
_POST_CHANGE = re.compile(
    rf"^\s*(?:itself\s+)?(?:should|must|needs? to|has to|have to|is to|are to|will have to)\s+(?:be\s+)?"
    rf"(?:{VERB_ANY}|become)\b|^\s+needs?\s+(?:\w+ing)\b|"
    r"^\s+(?:is|are)\s+(?:out of date|outdated|wrong|broken|stale|incorrect|missing|a mess|messed up)|"
    r"^(?:[^;!?.]|\.(?=\S)){0,40}?\bwhere you (?:should|must|need to|have to) " + VERB_ANY + r"\b|"
    r"^(?:[^;!?.]|\.(?=\S)){0,60}?\bwhich (?:needs|need|has to|have to|must|should)\s+(?:be\s+)?(?:the\s+)?"
    r"(?:\w+\s+){0,3}"
)
_WRITE = re.compile(
    r"\b(?:write|save|put|store|export|output|emit|copy|produce|generate|create|send|dump)\w*\b|"
    r"(?<!\bin )\bplace\b"
)
_FILE_EXT = re.compile(
    r"(?:/|\.(?:csv|tsv|json|jsonl|md|txt|ya?ml|py|js|ts|sh|html?|log|xml|ini|toml|cfg|conf|env|ics|"
    r"eml|vcf|pdf|docx?|xlsx?|png|jpe?g|sql|j2|tf|rb|go|java|bak|zip|tar|gz)$)",
    re.I,
)
_MAX_GAP_WORDS = 12


def changed_mentions(
    text: str, lower: str, mentions: list[Mention], previous: list[Mention], inputs: list[str]
) -> list[Mention]:
    """The mentions this clause asks to change (pronouns resolved to the last inputs named)."""
    out: list[Mention] = []
    in_place = bool(_IN_PLACE.search(lower))
    for verb in CHANGE.finditer(lower):
        if not _is_request(lower, verb):
            continue
        after = lower[verb.end() :]
        pron = _PRONOUN_OBJECT.match(after)
        if pron and any(
            m.start - verb.end() - pron.end() <= 1 and m.start >= verb.end() + pron.end() for m in mentions
        ):
            pron = None  # "remove the file config/x.env": a noun phrase naming an input, not a pronoun
        where = re.match(
            r"^\s+(?:it|them|that)\s+(?:in|inside|within|at)\s+$",
            lower[verb.end() : next((m.start for m in mentions if m.start > verb.end()), verb.end())],
        )
        if where:  # "fix it in src/export.py", "correct them in finance/budget.csv"
            out += group_starting_at(mentions, next(m for m in mentions if m.start > verb.end()), lower)
            continue
        if (
            pron
            or re.match(r"^\s+(?:\w+\s+){0,4}?(?:in|from|to|of) (?:it|them|there)\b", after)
            or re.search(r"\b(?:it|them)\s+there\b", after[:40])
        ):
            before = [m for m in mentions if m.end <= verb.start()]
            out += group_ending_at(mentions, before[-1], lower) if before else list(previous)
            continue
        targets = _object_of(verb, lower, mentions, inputs)
        if targets:
            out += targets
        elif in_place and not mentions:
            out += list(previous)
    for m in mentions:  # "X should be updated", "X is out of date", "in X, rename the column"
        after = lower[m.end :]
        if _POST_CHANGE.match(after) or (
            re.search(r"(?:^|[.;:]\s*)in\s+(?:the\s+)?$", lower[: m.start])
            and re.match(rf"^\s*,\s*(?:\w+\s+)?{VERB_ANY}\b", after)
        ):
            out.append(m)
        else:
            base = m.end
            for v in CHANGE.finditer(after[:100]):
                verb_at = re.compile(re.escape(v.group(0))).search(lower, base + v.start())
                tail = after[v.end() : v.end() + 50]
                if verb_at is None or not _is_request(lower, verb_at) or re.search(r"[.;!?]", after[: v.start()]):
                    continue
                if re.match(
                    r"^\s+(?:it|them)\b|^\s+(?:\w+\s+){0,4}?(?:in|into|to|from|of|out of) (?:it|them)\b|"
                    r"^(?:[^;!?.]|\.(?=\S)){0,40}?\bthere\b",
                    tail,
                ):
                    out.append(m)
                    break
            if (
                m not in out
                and re.search(r"\.(?:py|js|ts|sh|rb|go|java|pl|php)$", m.paths[0])
                and re.match(
                    r"^(?:[^;!?.]|\.(?=\S))*?[.;]?\s*make (?:it|them)\s+(?:\w+\s+)?(?:skip|handle|accept|ignore|support|work|"
                    r"use|print|return|read|write|run|pass|stop|keep|treat|round|parse)\b",
                    after,
                )
            ):
                out.append(m)
    if in_place:
        out += [m for m in mentions if m.level == "file" and not is_source(lower, m)]
    if (
        not mentions
        and previous
        and re.match(
            r"^\s*(?:please\s+)?(?:now\s+)?make (?:it|them)\s+(?:\w+\s+)?"
            r"(?:skip|handle|accept|ignore|support|work|use|print|return|read|write|"
            r"run|pass|stop|keep|treat|round|parse|fail|raise|log)\b",
            lower,
        )
        and all(re.search(r"\.(?:py|js|ts|sh|rb|go|java|pl|php)$", p) for m in previous for p in m.paths)
    ):
        out += list(previous)  # "Make it skip those rows": change the program named before
    return [m for m in dict.fromkeys(out) if not _goes_elsewhere(text, lower, m, inputs) or m.level == "folder"]


_AMBIGUOUS = re.compile(
    r"^(?:empty|clean|clear|blank|complete|correct|set|mark|check|fill|open|close|"
    r"comment|switch|sort|record|lower|zero|strip|reset)$"
)
_DETERMINER_NEXT = re.compile(
    r"^\s+(?:the|a|an|all|every|each|any|this|that|these|those|its|their|my|our|your|it|them|"
    r"up|out|off|in|down|both|every|[\w.-]*[/.][\w./-]+)\b"
)


def _is_request(lower: str, verb: re.Match) -> bool:
    """The change word is a request here, not a noun, adjective, description or question."""
    before, word = lower[: verb.start()], verb.group(0)
    at_start = (
        not before.strip()
        or re.search(r"(?:[:,]|\b(?:please|then|and|also|just|now))\s*$", before.strip())
        and not re.search(r"\w+,\s*$", before)
    )
    if _AMBIGUOUS.match(word) and not _DETERMINER_NEXT.match(lower[verb.end() :]) and not at_start:
        return False  # "empty strings", "clean data", "correct values": an adjective
    if _NOT_A_CHANGE.match(lower, verb.start()) or _NOUNISH_BEFORE.search(before) or _DESCRIPTIVE_BEFORE.search(before):
        return False
    if _NOUNISH_AFTER.match(lower[verb.end() :]):
        return False
    if re.search(
        r"\b(?:do not|don't|never|must not|should not|without|no need to|don't need to)\s+"
        r"(?!forget\b|hesitate\b|just\b)(?:\w+\s+){0,2}$",
        before,
    ):
        return False  # a prohibition, handled by banned_mentions
    if word.endswith("ed") and not re.search(r"\b(?:be|been|is|are|get|gets|got|have|has|had)\s+$", before):
        return False  # "the corrected totals", "sorted by date"
    if word.endswith("ing") and re.search(r"\b(?:without|before|after|while|when|of|for)\s+$", before):
        return False
    if (
        word.endswith(("s", "es"))
        and not word.endswith("ss")
        and re.search(r"\b(?:\w+)\s+$", before)
        and not re.search(r"\b(?:please|and|then|also|just|simply)\s+$", before)
        and before.strip()
    ):
        return False  # "the script removes ...", "it adds ...": a description
    return True


def _object_of(verb: re.Match, lower: str, mentions: list[Mention], inputs: list[str]) -> list[Mention]:
    """The inputs the verb acts on: the first mention after it, within a few words, that is not a source
    (for "move/remove ... from X" the source is a target too), with the mentions listed along with it
    and any "to the end of Y" / "into Y" destination."""
    takes_from = bool(_TAKES_FROM.match(verb.group(0)))
    out: list[Mention] = []
    skip: set[int] = set()
    for i, m in enumerate(mentions):
        if m.start < verb.end() or i in skip:
            continue
        gap = lower[verb.end() : m.start]
        if len(gap.split()) > _MAX_GAP_WORDS or re.search(r"[.;!?](?:\s|$)|\((?!\))", gap):
            break
        if is_source(lower, m) and not (
            takes_from and re.search(r"\b(?:from|out of)\s+(?:the\s+)?$", lower[: m.start])
        ):
            group = group_starting_at(mentions, m, lower)
            skip.update(mentions.index(g) for g in group)
            continue
        if not out:
            out = group_starting_at(mentions, m, lower)
            if not (takes_from or re.match(r"^(?:add|append|insert|put|copy|write)", verb.group(0))):
                break
            continue
        if re.search(
            r"\b(?:to|at|into)\s+(?:the\s+)?(?:(?:end|top|bottom|start|beginning)\s+of\s+(?:the\s+)?)?$",
            lower[: m.start],
        ):
            out += group_starting_at(mentions, m, lower)
            break
    return out


def _goes_elsewhere(text: str, lower: str, m: Mention, inputs: list[str]) -> bool:
    """The clause sends the result to a file that is not an input ("... and write them to output/x.csv")."""
    rest = text[m.end :]
    for w in _WRITE.finditer(rest.lower()):
        for f in FILE_PATH.finditer(rest[w.end() : w.end() + 120]):
            name = f.group(0)
            if _FILE_EXT.search(name) and not any(p == name or p.endswith("/" + name) for p in inputs):
                return True
    into = re.search(r"\b(?:into|as)\s+(?:one|a|an|the)?\s*(?:\w+\s+){0,3}?((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w*)", rest)
    return bool(into and not any(p == into.group(1) for p in inputs))
