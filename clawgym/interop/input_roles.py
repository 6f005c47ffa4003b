"""Decide, per input file of an imported task, whether grading restores it from the pristine copy.

Published graders recompute their expected answers from the input files in the workspace, so an
agent that truncates the inputs and writes outputs consistent with the truncation scores 1.0.
Restoring the inputs before grading closes that hole, but only for files the agent is not asked
to change: a config it must fix, a journal it must append to, or files it must move keep the
agent's version. The rules read the instruction sentence by sentence and the grader's source;
when in doubt a file is restored (the safe side), and the spec records every decision so a
reviewer can override it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Verbs that ask for a change to the named file (stems; matched at word starts).
_CHANGE = (r"edit|updat|modif|fix|chang|correct|rewrit|append|add|insert|remov|delet|renam|mov|"
           r"re-?organi[sz]|organi[sz]|sort|clean|replac|patch|refactor|bump|reformat|normali[sz]|"
           r"dedup|de-duplicat|overwrit|implement|complet|resolv|amend|adjust|tidy|fill|migrat|convert|"
           r"rotat|archiv|prune|trim|strip|uncomment|comment out|enable|disable|tick|check off|mark|document|record")
_NOT_A_CHANGE = re.compile(r"\badd(?:s|ing)? up\b|\badd(?:s|ing)? together\b")
_VERB_THEN_FILE = re.compile(rf"\b(?:{_CHANGE})\w*\b")
_PARTICIPLE = re.compile(r"\b(?:edited|updated|modified|fixed|changed|corrected|rewritten|appended|renamed|moved|"
                         r"removed|deleted|cleaned|sorted|patched|replaced|reorgani[sz]ed|organi[sz]ed|amended|"
                         r"adjusted|migrated|converted|archived|pruned|trimmed|filled in|marked|deduplicated|normali[sz]ed)\b")
_IN_PLACE = re.compile(r"\bin[- ]place\b")
_NEGATED = re.compile(r"\b(?:do not|don't|never|must not|should not|shouldn't|without)\s+(?:\w+\s+){0,2}?"
                      r"(?:edit|modify|change|touch|alter|rewrite|overwrite|move|rename|delete|remove|changing|"
                      r"modifying|editing|touching|altering)|\b(?:leave|keep)\b[^;!?\n]{0,80}?\b(?:unchanged|untouched|"
                      r"as is|as-is|as they are|as it is|intact|alone)\b|\bread[- ]only\b")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_MAX_GAP_WORDS = 10
_FILE_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]*\.[A-Za-z0-9]{1,5}\b")
_GONE = re.compile(r"not\s+(?:os\.path\.(?:exists|isfile|lexists)|[\w().\[\]'\"/ +]*\.(?:exists|is_file)\(\))")


@dataclass(frozen=True)
class Decision:
    """One input file: restore it before grading or keep the agent's version, and why."""

    path: str
    restore: bool
    why: str


def decide(inputs: list[str], instruction: str, grader_source: str = "") -> list[Decision]:
    """A decision for every input file (same order)."""
    sentences = [s.strip() for s in _SENTENCES.split(instruction) if s.strip()]
    return [_decide_one(path, inputs, sentences, grader_source) for path in inputs]


def _mentions(sentence: str, path: str, *, folders: bool = True) -> list[int]:
    """Offsets where `sentence` names `path`, its file name, or (with `folders`) a folder it lies in.

    A file name or folder counts only on its own, not as the tail or head of a longer path.
    """
    patterns = [rf"(?<![\w.-]){re.escape(path)}(?![\w-]|\.\w)"]
    parts = path.split("/")
    for i in range(1, len(parts)):  # a tail of the path: "src/app/cli.py", "cli.py"
        patterns.append(rf"(?<![\w./-]){re.escape('/'.join(parts[i:]))}(?![\w/-]|\.\w)")
    parts = parts[:-1]
    for i in range(1, len(parts) + 1) if folders else ():
        folder = re.escape("/".join(parts[:i]))
        patterns.append(rf"(?<![\w./-]){folder}(?:/(?![\w-]|\.\w)|\s+folder\b)")
        if i > 1:  # a bare top-level word ("data") is too common to count
            patterns.append(rf"(?<![\w./-]){folder}(?![\w/-]|\.\w)")
    return sorted(m.start() for pattern in patterns for m in re.finditer(pattern, sentence))


def _other_paths_between(sentence: str, start: int, end: int, path: str, inputs: list[str]) -> bool:
    gap = sentence[start:end]
    return any(p != path and p in gap for p in inputs)


def _negated_at(lower: str, spot: int) -> bool:
    """A "do not change" phrase governs the mention at `spot`: it comes shortly before it, or a
    "leave/keep ... as is" phrase spans it."""
    for m in _NEGATED.finditer(lower):
        if m.start() <= spot < m.end() or (m.end() <= spot and spot - m.end() <= 60):
            return True
    return False


def _quote(sentence: str) -> str:
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= 140 else sentence[:137] + "..."


def _writes_elsewhere(rest: str, path: str, inputs: list[str]) -> bool:
    """The rest of the sentence names a file that is not an input (an output the change goes to)."""
    return any(not any(p == m.group(0) or p.endswith("/" + m.group(0)) for p in inputs)
               for m in _FILE_PATH.finditer(rest))


def _decide_one(path: str, inputs: list[str], sentences: list[str], grader: str) -> Decision:
    name = path.rsplit("/", 1)[-1]
    for line in grader.splitlines():
        if (path in line or name in line) and _GONE.search(line):
            return Decision(path, False, f"kept: the grader checks that it is gone ({line.strip()[:100]})")
    for sentence in sentences:
        if any(_negated_at(sentence.lower(), spot) for spot in _mentions(sentence, path, folders=False)):
            return Decision(path, True, f"restored: the instruction says not to change it: \"{_quote(sentence)}\"")
    named = False
    for sentence in sentences:
        spots = _mentions(sentence, path)
        if not spots:
            continue
        named = True
        lower = sentence.lower()
        quote = _quote(sentence)
        for spot in spots:
            after = lower[spot:]
            in_place = _IN_PLACE.search(" ".join(after.split()[:7]))
            if in_place and not _other_paths_between(after, 0, after.find("place"), path, inputs):
                return Decision(path, False, f"kept: the instruction changes it in place: \"{quote}\"")
            if _writes_elsewhere(sentence[spot:], path, inputs):
                continue  # "sort the rows of data.csv and write them to output/x.csv" changes no input
            before = lower[:spot]
            for verb in _VERB_THEN_FILE.finditer(before):
                if _NOT_A_CHANGE.match(before, verb.start()):
                    continue
                words_between = len(before[verb.end():].split())
                if words_between <= _MAX_GAP_WORDS and not _other_paths_between(sentence, verb.end(), spot, path,
                                                                                 inputs):
                    return Decision(path, False, f"kept: the instruction asks to change it: \"{quote}\"")
            if _PARTICIPLE.search(" ".join(after.split()[:8])):
                return Decision(path, False, f"kept: the instruction asks to change it: \"{quote}\"")
    if named:
        return Decision(path, True, "restored: the instruction reads it but does not ask to change it")
    return Decision(path, True, "restored: the instruction does not name it")
