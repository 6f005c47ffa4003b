"""Restore decisions against the labelled corpus of published-style instructions
(tests/fixtures/restore_corpus.yaml, written apart from the rules it judges)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from clawgym.interop.input_roles import decide

CORPUS = Path(__file__).parent.parent / "fixtures" / "restore_corpus.yaml"


def _score() -> tuple[int, int, int, list[str]]:
    cases = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    files = right = whole = 0
    wrong = []
    for case in cases:
        got = {d.path: "restore" if d.restore else "keep" for d in decide(case["inputs"], case["instruction"])}
        misses = [p for p, want in case["expected"].items() if got[p] != want]
        files += len(case["expected"])
        right += len(case["expected"]) - len(misses)
        whole += not misses
        wrong += [f"{case['id']}: {p} should be {case['expected'][p]}" for p in misses]
    return files, right, whole, wrong


def test_the_corpus_is_large_and_covers_every_kind():
    cases = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    assert len(cases) >= 80
    kinds = Counter(c["id"].split("-", 1)[0] for c in cases)
    for kind in (
        "fileban",
        "dirban",
        "else",
        "only",
        "inplace",
        "append",
        "rename",
        "move",
        "delete",
        "newfile",
        "output",
        "noun",
        "neg",
        "passing",
        "code",
        "conflict",
    ):
        assert kinds[kind] >= 3, kind
    assert all(set(c["expected"]) == set(c["inputs"]) for c in cases)


def test_decisions_match_the_corpus():
    files, right, whole, wrong = _score()
    cases = len(yaml.safe_load(CORPUS.read_text(encoding="utf-8")))
    # measured: 321 of 328 files (97.9%), 132 of 136 instructions whole (benchmarks/RESULTS.md)
    assert right / files >= 0.97, wrong
    assert whole / cases >= 0.95, wrong
