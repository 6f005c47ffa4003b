"""Built-in checks: pass, fail, partial credit, reasons and hostile workspaces."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap

import jsonschema
import pytest

import clawgym.checks as checks
from clawgym.checks import CheckContext, CheckFailure
from clawgym.checks.base import glob_regex, parse_number
from clawgym.checks.exec import parse_score
from clawgym.files.safefs import copy_tree
from clawgym.checks.structured import parse_field
from clawgym.verify import run_checks


@pytest.fixture
def ws(tmp_path):
    """A (workspace, original) pair plus helpers to fill them and run one check."""

    class WS:
        root = tmp_path
        work = tmp_path / "work"
        orig = tmp_path / "orig"
        task = tmp_path / "task"

        def write(self, rel: str, content: str | bytes, *, original: bool = False, both: bool = False):
            for base in [self.work, self.orig] if both else [self.orig if original else self.work]:
                p = base / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(content.encode() if isinstance(content, str) else content)
            return self.work / rel

        def ctx(self, **kw) -> CheckContext:
            return CheckContext(
                workspace=self.work, original=self.orig, task_dir=self.task, params=kw.pop("params", {"n": 3}), **kw
            )

        def run(self, config: dict, **kw):
            (result,) = run_checks([config], self.ctx(**kw))
            return result

    w = WS()
    for d in (w.work, w.orig, w.task):
        d.mkdir()
    return w


# -- registry and schemas -----------------------------------------------------------------------

EXAMPLES = {
    "file_exists": {"path": "out/a.txt", "min_bytes": 1},
    "file_absent": {"path": "tmp/*"},
    "files_count": {"pattern": "out/*.md", "min": 1, "max": 3},
    "unchanged": {"paths": ["input/**"]},
    "text_contains": {"path": "a.txt", "contains": ["x", "y"], "not_contains": "z"},
    "text_matches": {"path": "a.txt", "pattern": r"\d+", "flags": ["multiline"], "count": 2},
    "markdown_section": {"path": "r.md", "heading": "Summary", "contains": ["x"], "min_items": 2},
    "line_count": {"path": "a.txt", "min": 1},
    "json_field_equals": {"path": "a.json", "field": "a.b[0]", "expected": 3, "tolerance": {"abs": 0.1}},
    "yaml_field_equals": {"path": "a.yaml", "fields": {"a": 1, "b.c": "x"}},
    "json_schema": {"path": "a.json", "schema": {"type": "object"}},
    "numeric_close": {"path": "a.txt", "pattern": r"total: (\S+)", "expected": 3.5, "abs": 0.01},
    "csv_rows_equal": {"path": "a.csv", "expected": [{"k": "a", "v": 1}], "key": "k", "tolerance": 0.1},
    "command": {"run": "test -f out/a.txt", "output_contains": ["ok"], "timeout": 10},
    "python": {"script": "grade.py", "args": ["--x"], "timeout": 10},
}


def test_every_builtin_type_has_a_valid_schema_and_example():
    assert set(EXAMPLES) <= set(checks.check_types())
    for name in EXAMPLES:
        schema = checks.check_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        for key in ("type", "name", "weight", "gate", "description"):
            assert key in schema["properties"], (name, key)
        for key, prop in schema["properties"].items():
            assert prop.get("description"), (name, key)
        config = {"type": name, **EXAMPLES[name]}
        jsonschema.validate(config, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**config, "bogus": 1}, schema)


def test_template_marks_on_target_fields():
    props = checks.check_schema("csv_rows_equal")["properties"]
    assert props["path"]["x-template"] == "text"
    assert props["expected"]["x-template"] == "value"
    assert checks.check_schema("unchanged")["properties"]["paths"]["items"]["x-template"] == "text"
    assert checks.check_schema("command")["properties"]["run"]["x-template"] == "text"
    assert checks.check_schema("text_matches")["properties"]["pattern"]["items"]["x-template"] == "text"


def test_default_name_and_common_keys(ws):
    ws.write("out/a.txt", "hello")
    r = ws.run({"type": "file_exists", "path": "out/a.txt", "weight": 2, "gate": True})
    assert (r.name, r.weight, r.gate, r.passed) == ("file_exists out/a.txt", 2.0, True, True)
    assert ws.run({"type": "file_exists", "path": "out/a.txt", "name": "report"}).name == "report"


def test_unknown_option_and_type_score_zero(ws):
    r = ws.run({"type": "file_exists", "path": "x", "colour": "red"})
    assert r.score == 0 and "unknown option" in r.reason and "colour" in r.reason
    r = ws.run({"type": "file_exist", "path": "x"})
    assert r.score == 0 and "file_exists" in r.reason


# -- safe file access ---------------------------------------------------------------------------


def test_context_refuses_escapes(ws):
    ws.write("ok.txt", "fine")
    os.symlink("/etc/passwd", ws.work / "pw")
    os.symlink("/etc", ws.work / "etcdir")
    os.symlink("ok.txt", ws.work / "inner")
    ctx = ws.ctx()
    assert ctx.read_text("inner") == "fine"
    for bad, msg in [
        ("../x", "escapes"),
        ("/etc/passwd", "absolute"),
        ("pw", "outside"),
        ("etcdir/passwd", "outside"),
        ("a/../../x", "escapes"),
        ("", "invalid"),
    ]:
        with pytest.raises(CheckFailure, match=msg):
            ctx.read_text(bad)


def test_context_refuses_big_binary_fifo_dir_missing(ws):
    ws.write("big.txt", b"a" * 2000)
    ws.write("bin.dat", b"\x00\x01\x02")
    ws.write("latin.txt", "caf\xe9".encode("latin-1"))
    (ws.work / "dir").mkdir()
    os.mkfifo(ws.work / "fifo")
    ctx = ws.ctx()
    for rel, kw, msg in [
        ("big.txt", {"max_bytes": 1000}, "too large"),
        ("bin.dat", {}, "binary"),
        ("latin.txt", {}, "not UTF-8"),
        ("dir", {}, "directory"),
        ("fifo", {}, "not a regular file"),
        ("out/x.csv", {}, "file not found: out/x.csv"),
    ]:
        with pytest.raises(CheckFailure, match=msg):
            ctx.read_text(rel, **kw)


def test_huge_file_fails_cleanly(ws):
    with open(ws.work / "huge.txt", "wb") as f:
        f.truncate(25_000_000)  # sparse: cheap to make
    r = ws.run({"type": "text_contains", "path": "huge.txt", "contains": "x"})
    assert r.score == 0 and "too large" in r.reason


def test_symlink_loop_and_crlf_bom(ws):
    os.symlink("loop", ws.work / "loop")
    with pytest.raises(CheckFailure):
        ws.ctx().read_text("loop")
    ws.write("w.txt", b"\xef\xbb\xbfa\r\nb\r\n")
    assert ws.ctx().read_text("w.txt") == "a\nb\n"


def test_glob_semantics():
    rx = glob_regex("input/**")
    assert rx.match("input/a") and rx.match("input/b/c") and not rx.match("input")
    rx = glob_regex("**/*.csv")
    assert rx.match("a.csv") and rx.match("x/y/a.csv") and not rx.match("a.csvx")
    rx = glob_regex("out/[ab]?.txt")
    assert rx.match("out/a1.txt") and not rx.match("out/c1.txt") and not rx.match("out/a/1.txt")


# -- files ----------------------------------------------------------------------------------------


def test_file_exists(ws):
    ws.write("out/a.txt", "x")
    ws.write("out/empty.txt", "")
    assert ws.run({"type": "file_exists", "path": "out/a.txt"}).passed
    assert ws.run({"type": "file_exists", "path": "out/*.txt", "min_bytes": 1}).passed
    r = ws.run({"type": "file_exists", "path": "out/empty.txt", "min_bytes": 1})
    assert r.score == 0 and "0 bytes" in r.reason
    r = ws.run({"type": "file_exists", "path": "out/b.txt"})
    assert r.score == 0 and r.reason == "file not found: out/b.txt"
    assert ws.run({"type": "file_exists", "path": "out", "kind": "dir"}).passed
    assert not ws.run({"type": "file_exists", "path": "out"}).passed


def test_file_exists_hostile(ws):
    os.symlink("/etc/passwd", ws.work / "report.txt")
    r = ws.run({"type": "file_exists", "path": "report.txt"})
    assert r.score == 0 and "outside" in r.reason
    r = ws.run({"type": "file_exists", "path": "../work/report.txt"})
    assert r.score == 0 and "escapes" in r.reason
    assert not ws.run({"type": "file_exists", "path": "*.txt"}).passed


def test_file_absent_variants(ws):
    ws.write("tmp/scratch", "x")
    assert ws.run({"type": "file_absent", "path": "out/x"}).passed
    r = ws.run({"type": "file_absent", "path": "tmp/*"})
    assert r.score == 0 and "tmp/scratch" in r.reason
    assert not ws.run({"type": "file_exists", "path": "tmp/scratch", "absent": True}).passed
    os.symlink("/nonexistent", ws.work / "dangling")
    assert not ws.run({"type": "file_absent", "path": "dangling"}).passed


def test_files_count(ws):
    for i in range(3):
        ws.write(f"out/{i}.md", "x")
    assert ws.run({"type": "files_count", "pattern": "out/*.md", "min": 3, "max": 3}).passed
    r = ws.run({"type": "files_count", "pattern": "out/*.md", "max": 2})
    assert r.score == 0 and "3 match" in r.reason and "outside" in r.reason


def test_unchanged(ws):
    ws.write("input/a.csv", "1,2\n", both=True)
    ws.write("input/sub/b.txt", "b", both=True)
    ws.write("out/new.txt", "n")
    r = ws.run({"type": "unchanged", "paths": ["input/**"]})
    assert r.passed and "2 file" in r.reason
    (ws.work / "input/a.csv").write_text("1,3\n")
    (ws.work / "input/sub/b.txt").unlink()
    ws.write("input/c.txt", "added")
    r = ws.run({"type": "unchanged", "paths": ["input"]})
    assert r.score == 0
    assert "input/a.csv (modified)" in r.reason and "input/sub/b.txt (deleted)" in r.reason
    assert "input/c.txt (added)" in r.reason
    r = ws.run({"type": "unchanged", "paths": ["input/**"], "partial": True})
    assert r.score == 0  # 0 of 3 unchanged


def test_unchanged_symlink_swap_and_typo(ws):
    ws.write("input/a.csv", "data", both=True)
    ws.write("input/b.csv", "more", both=True)
    (ws.work / "input/a.csv").unlink()
    os.symlink("b.csv", ws.work / "input/a.csv")
    r = ws.run({"type": "unchanged", "paths": ["input/*.csv"], "partial": True})
    assert r.score == 0.5 and "symlink" in r.reason
    r = ws.run({"type": "unchanged", "paths": ["inputs/**"]})
    assert r.score == 0 and "matches no files" in r.reason


def test_unchanged_whole_directory_deleted(ws):
    ws.write("input/a.csv", "data", both=True)
    shutil.rmtree(ws.work / "input")
    r = ws.run({"type": "unchanged", "paths": ["input/**"]})
    assert r.score == 0 and "deleted" in r.reason


# -- text -----------------------------------------------------------------------------------------


def test_text_contains(ws):
    ws.write("a.txt", "Total due: 120.50\nClient: ACME Corp\n")
    assert ws.run({"type": "text_contains", "path": "a.txt", "contains": "ACME"}).passed
    r = ws.run({"type": "text_contains", "path": "a.txt", "contains": ["ACME", "acme", "Globex"]})
    assert r.score == pytest.approx(1 / 3) and "missing 'acme'" in r.reason and "'Globex'" in r.reason
    assert ws.run({"type": "text_contains", "path": "a.txt", "contains": ["acme corp"], "case_sensitive": False}).passed
    r = ws.run({"type": "text_contains", "path": "a.txt", "contains": "ACME", "not_contains": ["120.50"]})
    assert r.score == 0.5 and "forbidden" in r.reason
    assert ws.run(
        {"type": "text_contains", "path": "a.txt", "contains": "120.50 Client:", "normalize_whitespace": True}
    ).passed


def test_text_contains_bad_files(ws):
    ws.write("b.bin", b"\x89PNG\x00\x00")
    r = ws.run({"type": "text_contains", "path": "b.bin", "contains": "PNG"})
    assert r.score == 0 and "binary" in r.reason
    r = ws.run({"type": "text_contains", "path": "nope.txt", "contains": "x"})
    assert r.reason == "file not found: nope.txt"


def test_text_matches(ws):
    ws.write("a.txt", "INV-001 paid\nINV-002 overdue\ninv-003 overdue\n")
    assert ws.run({"type": "text_matches", "path": "a.txt", "pattern": r"INV-\d+", "count": 2}).passed
    r = ws.run(
        {
            "type": "text_matches",
            "path": "a.txt",
            "pattern": [r"INV-\d+ overdue", r"^total"],
            "count": 2,
            "flags": ["multiline"],
        }
    )
    assert r.score == 0 and "matched 1 time(s), need 2" in r.reason
    assert ws.run(
        {"type": "text_matches", "path": "a.txt", "pattern": r"inv-\d+ overdue", "count": 2, "flags": ["ignorecase"]}
    ).passed
    r = ws.run({"type": "text_matches", "path": "a.txt", "pattern": ["paid", "cancelled"]})
    assert r.score == 0.5
    assert ws.run({"type": "text_matches", "path": "a.txt", "pattern": "cancelled", "max_count": 0}).passed
    r = ws.run({"type": "text_matches", "path": "a.txt", "pattern": "("})
    assert r.score == 0 and "invalid regex" in r.reason


def test_catastrophic_regex_is_cut_off(ws):
    ws.write("a.txt", "a" * 40 + "b")
    (r,) = run_checks([{"type": "text_matches", "path": "a.txt", "pattern": r"(a+)+$"}], ws.ctx(), check_timeout=0.5)
    assert r.score == 0 and "timed out" in r.reason


MD = """\
# Report

Intro text.

## Summary
Overall **good**.
- one
- two
* three

```
## Not a heading
```

## Next steps
1. call Bob

Risks
-----
- none
"""


def test_markdown_section(ws):
    ws.write("r.md", MD)
    r = ws.run({"type": "markdown_section", "path": "r.md", "heading": "summary", "contains": ["good"], "min_items": 3})
    assert r.passed and r.details["items"] == {"summary": 3}
    r = ws.run(
        {"type": "markdown_section", "path": "r.md", "heading": "Summary", "min_items": 4, "contains": ["good", "Bob"]}
    )
    assert r.score == 0.5 and "need 4" in r.reason and "'Bob'" in r.reason  # found + good of 4 criteria
    assert ws.run({"type": "markdown_section", "path": "r.md", "heading": "Risks", "level": 2, "min_items": 1}).passed
    assert not ws.run({"type": "markdown_section", "path": "r.md", "heading": "Not a heading"}).passed
    r = ws.run({"type": "markdown_section", "path": "r.md", "heading": "Summary", "level": 1})
    assert r.score == 0 and "not found" in r.reason and "Report" in r.reason
    assert ws.run({"type": "markdown_section", "path": "r.md", "heading": "next", "match": "contains"}).passed
    assert ws.run({"type": "markdown_section", "path": "r.md", "heading": "report", "contains": ["call Bob"]}).passed
    r = ws.run({"type": "markdown_section", "path": "r.md", "headings": ["Summary", "Risks", "Budget"], "min_items": 1})
    assert r.score == pytest.approx(2 / 3) and "'Budget'" in r.reason and r.details["items"]["Risks"] == 1


def test_line_count(ws):
    ws.write("a.txt", "a\n\nb\nc\n")
    assert ws.run({"type": "line_count", "path": "a.txt", "min": 3, "max": 3}).passed
    assert ws.run({"type": "line_count", "path": "a.txt", "min": 4, "count_blank": True}).passed
    r = ws.run({"type": "line_count", "path": "a.txt", "max": 2})
    assert r.score == 0 and "3 line(s)" in r.reason


# -- structured -----------------------------------------------------------------------------------


def test_parse_field_and_numbers():
    assert parse_field("totals.by_category.travel") == ["totals", "by_category", "travel"]
    assert parse_field("items[0].id") == ["items", 0, "id"]
    assert parse_field('a["x.y"][-1]') == ["a", "x.y", -1]
    assert parse_field("/a~1b/0") == ["a/b", "0"]
    assert parse_number("$1,234.50") == 1234.5 and parse_number("12%") == 12.0
    assert parse_number("(5)") == -5 and parse_number("abc") is None and parse_number(True) is None


def test_json_field_equals(ws):
    ws.write(
        "r.json",
        json.dumps(
            {
                "totals": {"by_category": {"travel": 120.49}},
                "items": [{"id": "A"}],
                "flag": True,
                "n": "7",
                "tags": ["x", "y"],
            }
        ),
    )
    base = {"type": "json_field_equals", "path": "r.json"}
    assert ws.run({**base, "field": "totals.by_category.travel", "expected": 120.5, "tolerance": 0.02}).passed
    r = ws.run({**base, "field": "totals.by_category.travel", "expected": 120.5})
    assert r.score == 0 and "expected 120.5, got 120.49" in r.reason
    assert ws.run({**base, "field": "/items/0/id", "expected": "A"}).passed
    assert ws.run({**base, "field": "tags", "expected": ["x", "y"]}).passed
    assert not ws.run({**base, "field": "flag", "expected": 1}).passed  # bool is not a number
    assert ws.run({**base, "field": "n", "expected": 7}).passed  # "7" is 7 written as a string
    assert ws.run({**base, "field": "n", "expected": 7, "coerce": True}).passed
    assert not ws.run({**base, "field": "flag", "expected": "7"}).passed
    r = ws.run(
        {**base, "fields": {"items[0].id": "a", "flag": True, "missing.x": 1, "tags[1]": "y"}, "ignore_case": True}
    )
    assert r.score == 0.75 and "missing.x not found" in r.reason


def test_json_malformed_and_hostile(ws):
    ws.write("bad.json", '{"a": 1,,}')
    r = ws.run({"type": "json_field_equals", "path": "bad.json", "field": "a", "expected": 1})
    assert r.score == 0 and "malformed JSON" in r.reason and "line 1" in r.reason
    ws.write("deep.json", "[" * 100_000 + "]" * 100_000)
    r = ws.run({"type": "json_field_equals", "path": "deep.json", "field": "a", "expected": 1})
    assert r.score == 0 and "deep" in r.reason
    ws.write("bigint.json", '{"a": ' + "9" * 5000 + "}")
    r = ws.run({"type": "json_field_equals", "path": "bigint.json", "field": "a", "expected": 1})
    assert r.score == 0 and "malformed JSON" in r.reason
    ws.write("overflow.json", '{"a": 1' + "0" * 400 + "}")
    r = ws.run({"type": "json_field_equals", "path": "overflow.json", "field": "a", "expected": 1})
    assert r.score == 0 and "expected 1" in r.reason
    os.symlink("/etc/passwd", ws.work / "link.json")
    r = ws.run({"type": "json_schema", "path": "link.json", "schema": {"type": "object"}})
    assert r.score == 0 and "outside" in r.reason


def test_yaml_field_equals(ws):
    ws.write("c.yaml", "server:\n  port: 8080\n  hosts: [a, b]\nsince: 2024-01-05\n")
    base = {"type": "yaml_field_equals", "path": "c.yaml"}
    assert ws.run({**base, "field": "server.port", "expected": 8080}).passed
    assert ws.run({**base, "fields": {"server.hosts[1]": "b", "since": "2024-01-05"}}).passed
    ws.write("bad.yaml", "a: [1, 2\n")
    r = ws.run({**base, "path": "bad.yaml", "field": "a", "expected": 1})
    assert r.score == 0 and "malformed YAML" in r.reason
    ws.write(
        "bomb.yaml",
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
    )
    r = ws.run({**base, "path": "bomb.yaml", "field": "d", "expected": [1]})
    assert r.score == 0 and len(r.reason) < 500


def test_json_schema_check(ws):
    schema = {
        "type": "object",
        "required": ["id", "total"],
        "properties": {"id": {"type": "string"}, "total": {"type": "number"}},
    }
    ws.write("ok.json", '{"id": "x", "total": 3}')
    ws.write("bad.json", '{"id": 5}')
    assert ws.run({"type": "json_schema", "path": "ok.json", "schema": schema}).passed
    r = ws.run({"type": "json_schema", "path": "bad.json", "schema": schema})
    assert r.score == 0 and "'total' is a required property" in r.reason and "$.id" in r.reason
    r = ws.run({"type": "json_schema", "path": "ok.json", "schema": {"type": "nonsense"}})
    assert r.score == 0 and "invalid schema" in r.reason


def test_numeric_close(ws):
    ws.write("s.txt", "Subtotal: 10\nTotal: $1,234.56\n")
    ws.write("n.txt", " 42.0\n")
    ws.write("d.json", '{"stats": {"mean": 3.14159}}')
    assert ws.run({"type": "numeric_close", "path": "s.txt", "pattern": r"^Total: (\S+)", "expected": 1234.56}).passed
    assert ws.run({"type": "numeric_close", "path": "n.txt", "expected": "42"}).passed
    assert ws.run(
        {"type": "numeric_close", "path": "d.json", "field": "stats.mean", "expected": 3.14, "abs": 0.01}
    ).passed
    r = ws.run({"type": "numeric_close", "path": "d.json", "field": "stats.mean", "expected": 3, "rel": 0.01})
    assert r.score == 0 and "got 3.14159, expected 3" in r.reason
    r = ws.run({"type": "numeric_close", "path": "s.txt", "pattern": "Grand: (\\d+)", "expected": 1})
    assert r.score == 0 and "not found" in r.reason
    r = ws.run({"type": "numeric_close", "path": "s.txt", "expected": 1})
    assert r.score == 0 and "not a number" in r.reason


CSV = "invoice,amount,client\nINV-001,99.99,ACME\nINV-003,120.5,Globex\nINV-004,1000,Initech\n"
EXPECTED = [
    {"invoice": "INV-003", "amount": 120.5},
    {"invoice": "INV-004", "amount": 1000},
    {"invoice": "INV-001", "amount": 99.99},
]


def test_csv_rows_equal(ws):
    ws.write("o.csv", CSV)
    base = {"type": "csv_rows_equal", "path": "o.csv"}
    assert ws.run({**base, "expected": EXPECTED, "key": "invoice"}).passed
    assert ws.run({**base, "expected": EXPECTED}).passed
    r = ws.run({**base, "expected": [EXPECTED[2], EXPECTED[1], EXPECTED[0]], "ignore_order": False})
    assert r.score == pytest.approx(1 / 3) and "row 2: invoice expected 'INV-004', got 'INV-003'" in r.reason
    r = ws.run({**base, "expected": EXPECTED[:2], "key": "invoice"})
    assert r.score == pytest.approx(2 / 3) and "1 unexpected row" in r.reason
    assert ws.run({**base, "expected": EXPECTED[:2], "key": "invoice", "extra_rows": True}).passed


def test_csv_mismatch_reasons_and_tolerance(ws):
    ws.write("o.csv", 'Invoice , Amount\n INV-003 ,"120.51"\nINV-004,"$1,000.00"\nINV-009,5\n')
    base = {"type": "csv_rows_equal", "path": "o.csv", "key": "invoice"}
    exp = [
        {"invoice": "INV-003", "amount": 120.5},
        {"invoice": "INV-004", "amount": 1000},
        {"invoice": "INV-007", "amount": 1},
    ]
    r = ws.run({**base, "expected": exp})
    assert r.details["matched"] == 1 and r.details["unexpected"] == 1
    assert r.score == pytest.approx(1 / 4)
    assert "row invoice='INV-003': amount expected 120.5, got '120.51'" in r.reason
    assert "missing row invoice='INV-007'" in r.reason
    r = ws.run({**base, "expected": exp[:2], "tolerance": {"abs": 0.01}, "extra_rows": True})
    assert r.passed
    r = ws.run({**base, "expected": [{"invoice": "inv-003"}], "ignore_case": True, "extra_rows": True})
    assert r.passed


def test_csv_bad_inputs(ws):
    base = {"type": "csv_rows_equal", "path": "o.csv", "expected": [{"a": 1}]}
    ws.write("o.csv", "b,c\n1,2\n")
    r = ws.run(base)
    assert r.score == 0 and "column 'a' missing" in r.reason and "b, c" in r.reason
    ws.write("o.csv", "")
    assert "empty" in ws.run(base).reason
    ws.write("o.csv", b"a\n\x00\x00\n")
    assert "binary" in ws.run(base).reason
    ws.write("o.csv", 'a\n"' + "x" * 2_000_000 + '"\n')
    r = ws.run(base)
    assert r.score == 0 and "malformed CSV" in r.reason
    ws.write("o.csv", "a;b\n1;2\n")
    assert ws.run({**base, "delimiter": "auto"}).passed
    ws.write("o.csv", "a\n")
    assert ws.run({**base, "expected": []}).passed
    ws.write("o.csv", "a\n1\n2\n3\n")
    assert ws.run({**base, "expected": []}).score == 0


def test_csv_ragged_rows(ws):
    ws.write("o.csv", "a,b\n1\n2,3,4\n")
    r = ws.run({"type": "csv_rows_equal", "path": "o.csv", "expected": [{"a": 1, "b": None}, {"a": 2, "b": 3}]})
    assert r.passed


# -- exec helpers and python check ----------------------------------------------------------------


def test_grading_copy_keeps_links_as_links_and_drops_fifos(ws, tmp_path):
    ws.write("a/b.txt", "x")
    os.symlink("/etc/passwd", ws.work / "pw")
    os.symlink("a", ws.work / "rel_inner")
    os.mkfifo(ws.work / "fifo")
    dst = tmp_path / "copy"
    skipped = copy_tree(ws.work, dst)
    assert (dst / "a/b.txt").read_text() == "x"
    assert os.readlink(dst / "pw") == "/etc/passwd"  # copied as a link, never followed on the host
    assert os.readlink(dst / "rel_inner") == "a" and (dst / "rel_inner/b.txt").read_text() == "x"
    assert not os.path.lexists(dst / "fifo") and any("fifo" in s for s in skipped)


@pytest.mark.parametrize(
    "stdout,code,score,reason",
    [
        ("noise\n0.25\n", 0, 0.25, "script score 0.25"),
        ("1\n\n", 1, 1.0, "script score 1"),
        ("85\n", 0, 0.0, "outside [0, 1]"),
        ("nan\n", 0, 1.0, "script exited 0"),
        ('{"score": 0.5, "reason": "half", "checks": [{"name": "a", "score": 1}]}', 0, 0.5, "half"),
        ('{"score": 2}', 0, 0.0, "not a number in [0, 1]"),
        ('{"a": 1, "b": 0.5, "c": 0}', 0, 0.5, "mean of 3 sub-scores: a=1, b=0.5, c=0"),
        ('{"a": 3}', 0, 0.0, "outside [0, 1]"),
        ("done\n", 0, 1.0, "script exited 0"),
        ("", 2, 0.0, "script exited 2"),
    ],
)
def test_parse_score(stdout, code, score, reason):
    s, r, _ = parse_score(stdout, code)
    assert s == pytest.approx(score) and reason in r


def test_python_check(ws):
    ws.write("out/a.txt", "hello")
    ws.write("input/x", "orig", both=True)
    (ws.task / "grade.py").write_text(
        textwrap.dedent("""\
        import json, os, sys
        w, o = os.environ["CLAWGYM_WORKSPACE"], os.environ["CLAWGYM_ORIGINAL"]
        assert os.getcwd() == os.path.realpath(w)
        params = json.loads(os.environ["CLAWGYM_PARAMS"])
        traj = json.load(open(os.environ["CLAWGYM_TRAJECTORY"])) if "CLAWGYM_TRAJECTORY" in os.environ else {}
        open("out/a.txt", "w").write("vandalised")  # a copy: must not affect other checks
        print("debug line")
        print(json.dumps({"hello": float(open(os.path.join(w, "out/a.txt")).read() == "vandalised"),
                          "orig": float(open(os.path.join(o, "input/x")).read() == "orig"),
                          "params": float(params == {"n": 3}), "args": float(sys.argv[1:] == ["-v"]),
                          "traj": float(traj.get("final") == "done")}))
    """)
    )
    r = ws.run({"type": "python", "script": "grade.py", "args": ["-v"]}, trajectory={"final": "done"})
    assert r.passed, r.reason
    assert [s["name"] for s in r.details["subscores"]] == ["hello", "orig", "params", "args", "traj"]
    assert (ws.work / "out/a.txt").read_text() == "hello"


def test_python_check_failures(ws):
    (ws.task / "crash.py").write_text("raise SystemExit('boom: bad output')\n")
    r = ws.run({"type": "python", "script": "crash.py"})
    assert r.score == 0 and "grading script failed (exit status 1)" in r.reason and "boom" in r.reason
    (ws.task / "slow.py").write_text("import time\ntime.sleep(30)\n")
    r = ws.run({"type": "python", "script": "slow.py", "timeout": 0.5})
    assert r.score == 0 and "timed out" in r.reason
    r = ws.run({"type": "python", "script": "missing.py"})
    assert r.score == 0 and "not found" in r.reason
    r = ws.run({"type": "python", "script": "../work/evil.py"})
    assert r.score == 0 and "escapes" in r.reason
    (r,) = run_checks([{"type": "python", "script": "crash.py"}], CheckContext(ws.work, ws.orig, None, {}))
    assert r.score == 0 and "task folder" in r.reason


def test_python_check_cannot_be_hijacked_by_workspace_modules(ws):
    ws.write("json.py", "raise SystemExit('hijacked')\n")
    (ws.task / "grade.py").write_text("import json\nprint(json.dumps({'score': 1}))\n")
    assert ws.run({"type": "python", "script": "grade.py"}).passed


# -- command check --------------------------------------------------------------------------------


def _sandbox_available() -> str | None:
    try:
        import clawgym.sandbox as sb  # noqa: F401

        sb.create_sandbox  # noqa: B018
    except Exception as e:  # noqa: BLE001
        return f"clawgym.sandbox not importable yet: {type(e).__name__}"
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) not installed"
    return None


def _run_or_skip(ws, config):
    from clawgym.errors import ClawgymError, InfraError

    try:
        return run_checks([config], ws.ctx())[0]
    except (InfraError, ClawgymError) as e:
        pytest.skip(f"sandbox could not start here: {e}")


@pytest.mark.skipif(_sandbox_available() is not None, reason=str(_sandbox_available()))
def test_command_check(ws):
    ws.write("out/a.txt", "hello")
    r = _run_or_skip(
        ws,
        {
            "type": "command",
            "run": "cat out/a.txt && echo ok > out/a.txt",
            "output_contains": ["hello", "nope"],
            "timeout": 30,
        },
    )
    assert r.score == pytest.approx(2 / 3) and "lacks 'nope'" in r.reason
    assert (ws.work / "out/a.txt").read_text() == "hello"  # ran over a copy
    r = _run_or_skip(ws, {"type": "command", "run": "exit 3", "expect_exit": [3]})
    assert r.passed
    r = _run_or_skip(ws, {"type": "command", "run": "test -f out/missing"})
    assert r.score == 0 and "exit status 1" in r.reason
    r = _run_or_skip(ws, {"type": "command", "run": "sleep 30", "timeout": 1})
    assert r.score == 0 and "timed out" in r.reason


def test_command_without_sandbox_is_infra_error(ws, monkeypatch):
    from clawgym.errors import InfraError

    monkeypatch.setitem(sys.modules, "clawgym.sandbox", None)
    with pytest.raises(InfraError, match="sandbox"):
        run_checks([{"type": "command", "run": "true"}], ws.ctx())


def _fake_sandbox_module(fail: bool = False):
    """A stand-in for clawgym.sandbox that runs commands locally (exercises the check's own logic)."""
    import types

    from clawgym.checks.exec import run_process

    class FakeSandbox:
        def __init__(self, spec, workspace, *, limits=None, network=False, **options):
            if fail:
                raise RuntimeError("no namespaces")
            self.workspace, self.limits, self.network = workspace, limits, network

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def close(self):
            pass

        def exec(self, command, *, timeout=None, env=None, workdir=None, stdin=None):
            code, out, err, timed_out = run_process(
                ["/bin/sh", "-c", command], cwd=self.workspace, env=dict(os.environ), timeout=timeout
            )
            return types.SimpleNamespace(
                exit_code=code,
                output=out + err,
                timed_out=timed_out,
                truncated=False,
                duration_s=0.0,
                killed_reason="timeout" if timed_out else None,
            )

    mod = types.ModuleType("clawgym.sandbox")
    mod.create_sandbox = FakeSandbox
    mod.SandboxLimits = lambda **kw: kw
    return mod


def test_command_check_logic_with_stand_in_sandbox(ws, monkeypatch):
    from clawgym.errors import InfraError

    monkeypatch.setitem(sys.modules, "clawgym.sandbox", _fake_sandbox_module())
    ws.write("out/a.txt", "hello")
    os.mkfifo(ws.work / "pipe")
    r = ws.run(
        {
            "type": "command",
            "run": "cat out/a.txt; echo ok > out/a.txt; test ! -e pipe",
            "output_contains": ["hello", "nope"],
        }
    )
    assert r.score == pytest.approx(2 / 3) and r.reason == "output lacks 'nope'"
    assert (ws.work / "out/a.txt").read_text() == "hello"  # ran over a copy
    assert any("pipe" in s for s in r.details["skipped"])
    assert ws.run({"type": "command", "run": "exit 3", "expect_exit": [0, 3]}).passed
    r = ws.run({"type": "command", "run": "echo bad thing; exit 1"})
    assert r.score == 0 and "exit status 1, expected 0; last output: bad thing" in r.reason
    r = ws.run({"type": "command", "run": "sleep 10", "timeout": 0.5})
    assert r.score == 0 and "timed out after 0.5s" in r.reason
    monkeypatch.setitem(sys.modules, "clawgym.sandbox", _fake_sandbox_module(fail=True))
    with pytest.raises(InfraError, match="could not start a grading sandbox"):
        run_checks([{"type": "command", "run": "true"}], ws.ctx())
