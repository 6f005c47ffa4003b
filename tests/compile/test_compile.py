"""Compile: deterministic instances, content hashes, the workspace layout, param sampling."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.spec.load import load_text
from clawgym.spec.params import sample_params
from clawgym.compile.workspace import diff, materialize, snapshot

ROOT = Path(__file__).resolve().parents[2]
INVOICE = ROOT / "specs" / "tasks" / "productivity" / "invoice-followup.yaml"
GOOD = ROOT / "tests" / "fixtures" / "lib" / "specs" / "good.yaml"


def test_same_seed_same_bytes_and_hash(tmp_path):
    spec = load_task_spec(INVOICE)
    a, b = compile_task(spec, 7), compile_task(spec, 7)
    assert a.hash == b.hash and dict(a.files) == dict(b.files)
    materialize(a, tmp_path / "a")
    materialize(b, tmp_path / "b")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")


def test_different_seeds_give_distinct_instances():
    spec = load_task_spec(INVOICE)
    tasks = [compile_task(spec, s) for s in range(20)]
    assert len({t.hash for t in tasks}) == 20
    assert len({t.files["input/invoices.csv"] for t in tasks}) == 20


def test_task_is_frozen():
    task = compile_task(load_task_spec(GOOD), 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        task.params["n"] = 1  # type: ignore[index]


def test_workspace_layout_follows_openclaw():
    task = compile_task(load_task_spec(INVOICE), 0)
    for name in (
        "AGENTS.md",
        "SOUL.md",
        "TOOLS.md",
        "IDENTITY.md",
        "HEARTBEAT.md",
        "USER.md",
        "skills/csv/SKILL.md",
        "input/invoices.csv",
        "todo.md",
        "notes/README.md",
    ):
        assert name in task.files, name
    user = task.files["USER.md"].decode()
    assert "Maya Okafor" in user and "Europe/Lisbon" in user
    assert task.files["skills/csv/SKILL.md"].startswith(b"---\nname: csv\n")
    assert "skill.yaml" not in " ".join(task.files)
    assert task.mount == "/root/.openclaw/workspace"


def test_memory_files_and_hash_changes_with_content(tmp_path):
    text = GOOD.read_text().replace(
        "instruction:",
        "memory:\n  long_term: 'Ada likes {{ params.n }}'\n  daily:\n    2026-03-01: 'met Bob'\ninstruction:",
    )
    path = GOOD.parent / "_memory_tmp.yaml"
    path.write_text(text.replace("name: good", "name: memory-tmp"))
    try:
        task = compile_task(load_task_spec(path), 3)
    finally:
        path.unlink()
    assert task.files["MEMORY.md"] == f"Ada likes {task.params['n']}".encode()
    assert task.files["memory/2026-03-01.md"] == b"met Bob"
    base = compile_task(load_task_spec(GOOD), 3)
    assert base.hash != task.hash


def test_param_samplers_are_deterministic_and_in_range():
    import random

    specs = {
        "i": {"int": [1, 3]},
        "f": {"float": [0.5, 0.6], "round": 3},
        "c": {"choice": ["a", "b"]},
        "s": {"sample": [1, 2, 3, 4], "k": 2},
        "d": {"date": ["2026-01-30", "2026-02-02"]},
        "v": {"value": 9},
    }
    one = sample_params(specs, random.Random("x"))
    assert one == sample_params(specs, random.Random("x"))
    assert 1 <= one["i"] <= 3 and 0.5 <= one["f"] <= 0.6 and one["c"] in "ab" and len(one["s"]) == 2
    assert "2026-01-30" <= one["d"] <= "2026-02-02" and one["v"] == 9


def test_loader_keeps_yaml_1_1_words_and_dates_as_strings():
    doc = load_text("a: no\nb: 2026-01-01\nc: on\nd: 012\ne: true\nf: 1.5\n", "x.yaml")
    assert doc.data == {"a": "no", "b": "2026-01-01", "c": "on", "d": "012", "e": True, "f": 1.5}
    assert doc.line(("c",)) == 3


def test_loader_reads_yaml_1_2_floats():
    doc = load_text("a: 1e-5\nb: 2E3\nc: .5\nd: -1.0e-3\ne: 0012\nf: 1.2.3\ng: 2e\n", "x.yaml")
    assert doc.data == {"a": 1e-5, "b": 2000.0, "c": 0.5, "d": -0.001, "e": "0012", "f": "1.2.3", "g": "2e"}


def test_diff_shows_added_changed_and_deleted(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "keep.txt").write_text("same\n")
    (tmp_path / "b" / "keep.txt").write_text("same\n")
    (tmp_path / "a" / "gone.txt").write_text("bye\n")
    (tmp_path / "a" / "edit.txt").write_text("one\n")
    (tmp_path / "b" / "edit.txt").write_text("two\n")
    (tmp_path / "b" / "new.txt").write_text("hi\n")
    text = diff(tmp_path / "a", tmp_path / "b")
    assert "+++ b/new.txt" in text and "--- a/gone.txt" in text and "-one" in text and "+two" in text
    assert "keep.txt" not in text
