"""Checks a lazy output cannot satisfy: existence earns nothing, a lone digit is not found by luck,
a message's headers do not stand in for its body, order checks test order, numbers compare
whatever their form, and the unfiltered input earns at most a fifth of a row-matching check."""

from __future__ import annotations

import json

import pytest

import clawgym.checks as checks
from clawgym.checks import CheckContext, CheckResult
from clawgym.checks.number_text import number_found, numbers_in
from clawgym.checks.structured import values_equal
from clawgym.checks.text_parts import message_body
from clawgym.verify import combine, run_checks


@pytest.fixture
def ws(tmp_path):
    work, orig = tmp_path / "work", tmp_path / "orig"
    work.mkdir()
    orig.mkdir()

    class WS:
        def write(self, rel: str, text: str) -> None:
            p = work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)

        def ctx(self) -> CheckContext:
            return CheckContext(workspace=work, original=orig, task_dir=tmp_path, params={})

        def run(self, config: dict) -> CheckResult:
            (result,) = run_checks([config], self.ctx())
            return result

        def reward(self, configs: list[dict]) -> float:
            return combine(run_checks(configs, self.ctx())).reward

    return WS()


# -- 1. a file's existence earns nothing on its own ----------------------------------------------


@pytest.mark.parametrize(
    "config,weight",
    [
        ({"type": "file_exists", "path": "a"}, 0),
        ({"type": "file_exists", "path": "a", "absent": True}, 0),
        ({"type": "file_absent", "path": "a"}, 0),
        ({"type": "files_count", "pattern": "*", "min": 1}, 0),
        ({"type": "files_count", "pattern": "*", "min": 1, "max": 3}, 1),
        ({"type": "files_count", "pattern": "*", "max": 0}, 1),
        ({"type": "text_contains", "path": "a", "contains": "x"}, 1),
        ({"type": "file_absent", "path": "a", "weight": 2}, 2),
    ],
)
def test_the_weight_a_check_gets_when_it_names_none(config, weight):
    assert checks.weight_of(config) == weight
    assert checks.check_class(config["type"])(config).weight == weight


def test_an_empty_output_file_earns_nothing(ws):
    ws.write("out/report.csv", "")
    task = [
        {"type": "file_exists", "path": "out/report.csv", "gate": True},
        {"type": "csv_rows_equal", "path": "out/report.csv", "expected": [{"id": "1"}], "weight": 3},
    ]
    assert ws.reward(task) == 0  # was 1 / (1 + 3) when the gate carried weight 1
    ws.write("out/report.csv", "id\n1\n")
    assert ws.reward(task) == 1


def test_existence_alone_earns_nothing_even_when_every_weight_is_zero(ws):
    ws.write("out/a.txt", "")
    verdict = combine(run_checks([{"type": "file_exists", "path": "out/a.txt"}], ws.ctx()))
    assert verdict.reward == 0 and not verdict.passed
    assert "only tests whether files exist" in verdict.notes[-1]
    both = [
        {"type": "file_exists", "path": "out/a.txt"},
        {"type": "line_count", "path": "out/a.txt", "max": 0, "weight": 0},
    ]
    assert ws.reward(both) == 1  # a plain mean of the content checks, as before


def test_a_weight_on_an_existence_check_is_a_static_problem():
    (problem,) = checks.check_class("file_exists").static_problems({"type": "file_exists", "path": "a", "weight": 1})
    assert problem == (
        ("weight",),
        "a file's existence earns no credit on its own",
        "make it a gate (gate: true) and grade its content with another check",
    )
    assert not checks.check_class("file_exists").static_problems({"type": "file_exists", "path": "a", "weight": 0})
    assert not checks.check_class("file_exists").static_problems({"type": "file_exists", "path": "a", "gate": True})
    count = checks.check_class("files_count")
    assert count.static_problems({"type": "files_count", "pattern": "*", "min": 2, "weight": 1})
    assert not count.static_problems({"type": "files_count", "pattern": "*", "min": 2, "max": 2, "weight": 1})
    assert not checks.check_class("file_absent").static_problems({"type": "file_absent", "path": "a", "weight": 1})


def test_validate_reports_a_weighted_existence_check_at_its_line(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from click.testing import CliRunner

    from clawgym.cli.main import main

    root = Path(__file__).parents[2]
    for lib in ("personas", "skills", "workspaces"):
        shutil.copytree(root / lib, tmp_path / lib)
    spec = tmp_path / "spec" / "dinner.yaml"
    spec.parent.mkdir()
    text = (root / "tests/fixtures/authoring/dinner-rsvp.yaml").read_text()
    old = "  - {type: file_exists, path: dinner/summary.json, gate: true}\n"
    assert old in text
    text = text.replace(old, "  - type: file_exists\n    path: dinner/summary.json\n    weight: 2\n")
    spec.write_text(text)
    line = text.split("\n").index("    weight: 2", text.split("\n").index("  - type: file_exists")) + 1
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "--static", str(spec)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {spec}:{line}: checks[0].weight: a file's existence earns no credit on its own "
        "(make it a gate (gate: true) and grade its content with another check)",
        "1 problem found in 1 of 1 file",
    ]


def test_the_schema_documents_the_zero_default():
    prop = checks.check_schema("file_exists")["properties"]["weight"]
    assert prop["default"] == 0 and "no credit on its own" in prop["description"]
    assert checks.check_schema("text_contains")["properties"]["weight"]["default"] == 1


# -- 2. no check passes on a lone digit ----------------------------------------------------------


PROSE = "Seen 1800 visitors on 2026-08-01 at 12:08, 18.5 hours, 8-10 staff, ticket INV8 and code 076052."


@pytest.mark.parametrize("item", ["8", "1", "10", "2026", "5", "76052", "08"])
def test_a_number_is_not_found_inside_another_number_a_date_a_time_a_range_or_a_code(item):
    assert not number_found(numbers_in(PROSE), item)


@pytest.mark.parametrize("item", ["1800", "18.5", "18.50", "076052"])
def test_a_standalone_number_is_found(item):
    assert number_found(numbers_in(PROSE), item)


@pytest.mark.parametrize("written", ["1,253.50", "1253.5", "1253.50", "$1,253.50", "1253,50"])
@pytest.mark.parametrize("item", ["1253.5", "1,253.50", 1253.5])
def test_equivalent_forms_of_a_number_are_found(ws, written, item):
    ws.write("mail.txt", f"The total is {written}.\n")
    assert ws.run({"type": "text_contains", "path": "mail.txt", "contains": [item]}).passed


def test_116_and_116_point_0_are_one_number(ws):
    ws.write("a.txt", "hours: 116\n")
    assert ws.run({"type": "text_contains", "path": "a.txt", "contains": "116.0"}).passed
    ws.write("a.txt", "hours: 116.0\n")
    assert ws.run({"type": "text_contains", "path": "a.txt", "contains": ["116"]}).passed
    ws.write("a.txt", "hours: 1160 or 116.5\n")
    assert ws.run({"type": "text_contains", "path": "a.txt", "contains": ["116"]}).score == 0


def test_text_contains_numbers_in_context(ws):
    ws.write("a.txt", "Overdue: 18 invoices, total 2026-08-01\n")
    r = ws.run({"type": "text_contains", "path": "a.txt", "contains": ["8", "18", "8 invoices", "18 invoices"]})
    assert r.score == 0.5 and "missing '8'" in r.reason and "missing '8 invoices'" in r.reason
    r = ws.run({"type": "text_contains", "path": "a.txt", "contains": "Overdue", "not_contains": ["8", "01"]})
    assert r.passed  # neither 8 nor 01 stands alone in the text
    r = ws.run({"type": "text_contains", "path": "a.txt", "contains": "Overdue", "not_contains": "18"})
    assert r.score == 0.5 and "forbidden '18' present" in r.reason


def test_a_section_needs_the_whole_number_too(ws):
    ws.write("r.md", "# Summary\nWe had 1800 visitors.\n")
    section = {"type": "markdown_section", "path": "r.md", "heading": "Summary"}
    assert ws.run({**section, "contains": ["1800"]}).passed
    assert not ws.run({**section, "contains": ["800"]}).passed


def test_only_short_bare_numbers_is_a_static_problem():
    cls = checks.check_class("text_contains")
    (problem,) = cls.static_problems({"type": "text_contains", "path": "a", "contains": ["8", 36]})
    assert problem[0] == ("contains",)
    assert "one- or two-character number ('8', '36')" in problem[1] and "by chance" in problem[1]
    assert "json_field_equals" in problem[2]
    for fine in (["8", "invoices"], ["8 invoices"], ["1253.5"], "116"):
        assert not cls.static_problems({"type": "text_contains", "path": "a", "contains": fine})


# -- 3. a message's body, not its headers --------------------------------------------------------


DRAFT = "To: sam@example.com\nSubject: 8 invoices overdue\nCc: ops@example.com\n\nHi Sam,\nAll is well.\n"


def test_body_only_ignores_the_header_lines(ws):
    ws.write("draft.txt", DRAFT)
    base = {"type": "text_contains", "path": "draft.txt", "contains": ["8 invoices overdue"]}
    assert ws.run(base).passed
    r = ws.run({**base, "body_only": True})
    assert r.score == 0 and "missing '8 invoices overdue'" in r.reason
    matches = {"type": "text_matches", "path": "draft.txt", "pattern": r"sam@example\.com"}
    assert ws.run(matches).passed and not ws.run({**matches, "body_only": True}).passed
    assert ws.run({**matches, "pattern": "All is well", "body_only": True}).passed


@pytest.mark.parametrize(
    "text,body",
    [
        (DRAFT, "Hi Sam,\nAll is well.\n"),
        ("**To:** a@b.c\n**Subject:** hello\n  continued\nHi\n", "Hi\n"),
        ("\n\nSUBJECT: x\n\nbody", "body"),
        ("Hi Sam,\nTo: you\n", "Hi Sam,\nTo: you\n"),  # no header first: nothing is dropped
        ("Note: 8 left\n\nbody", "Note: 8 left\n\nbody"),  # not a message header
    ],
)
def test_message_body(text, body):
    assert message_body(text) == body


# -- 4. checks named for an order test the order -------------------------------------------------


TABLE = "| id | amount |\n|---|---|\n| A | 1 |\n| B | 2 |\n| C | 3 |\n| D | 4 |\n| E | 5 |\n| F | 6 |\n"
ROWS = [rf"(?m)^\| {k} \| {v} \|$" for k, v in zip("ABCDEF", range(1, 7))]


def test_text_matches_in_order(ws):
    ws.write("t.md", TABLE)
    check = {"type": "text_matches", "path": "t.md", "pattern": ROWS, "in_order": True}
    assert ws.run(check).passed
    ws.write("t.md", TABLE.replace("| B | 2 |\n| C | 3 |", "| C | 3 |\n| B | 2 |"))
    r = ws.run(check)
    assert r.score == pytest.approx(5 / 6) and "out of order" in r.reason
    assert ws.run({**check, "in_order": False}).passed  # without it the order is not looked at
    reversed_rows = "\n".join(reversed(TABLE.strip().split("\n")[2:])) + "\n"
    ws.write("t.md", reversed_rows)
    assert ws.run(check).score == pytest.approx(1 / 6)
    ws.write("t.md", "| A | 1 |\n| C | 3 |\n")
    r = ws.run(check)
    assert r.score == pytest.approx(2 / 6) and "matched 0 time(s)" in r.reason and "out of order" not in r.reason


CSV = "id,amount\nA,1\nB,2\nC,3\n"
EXPECTED = [{"id": "A", "amount": 1}, {"id": "B", "amount": 2}, {"id": "C", "amount": 3}]


@pytest.mark.parametrize("key", [None, "id"])
def test_csv_rows_equal_with_ignore_order_false_checks_the_order(ws, key):
    ws.write("o.csv", CSV)
    check = {"type": "csv_rows_equal", "path": "o.csv", "expected": EXPECTED, "ignore_order": False}
    if key:
        check["key"] = key
    assert ws.run(check).passed
    ws.write("o.csv", "id,amount\nB,2\nA,1\nC,3\n")
    r = ws.run(check)
    assert not r.passed and r.score <= 2 / 3
    assert ws.run({**check, "ignore_order": True}).passed


def test_keyed_order_counts_the_largest_set_in_order(ws):
    ws.write("o.csv", "id,amount\nC,3\nA,1\nB,2\n")
    check = {"type": "csv_rows_equal", "path": "o.csv", "expected": EXPECTED, "key": "id", "ignore_order": False}
    r = ws.run(check)
    assert r.score == pytest.approx(2 / 3) and "row id='C' out of order" in r.reason


# -- 5. no hidden format in comparisons ----------------------------------------------------------


@pytest.mark.parametrize(
    "actual,expected",
    [
        ("116", 116),
        ("116.0", 116),
        ("116", "116.0"),
        (116, "116.0"),
        ("1,253.50", 1253.5),
        ("1253,50", 1253.5),
        ("1253,5", "1253.50"),
        ("23.1%", 23.1),
        ("2026-04-03", "2026-04-03"),
        ("true", True),
        ("Yes", True),
        ("no", False),
        ("yes", "yes"),
        (True, "yes"),  # a JSON boolean for the file's yes/no
        (False, "No"),
    ],
)
def test_equal_cells(actual, expected):
    assert values_equal(actual, expected, coerce=True)


@pytest.mark.parametrize(
    "actual,expected",
    [
        ("1,253", 1.253),  # three digits after a comma: thousands
        ("12,345,67", 12345.67),
        ("04/03/2026", "2026-04-03"),  # no date style is guessed
        ("2026-4-3", "2026-04-03"),
        ("1", True),  # booleans only as true/false or yes/no
        ("0", False),
        ("true", "yes"),  # the check says "yes": it means the word
        ("yes", "true"),
        (True, "no"),
        (False, "maybe"),
    ],
)
def test_unequal_cells(actual, expected):
    assert not values_equal(actual, expected, coerce=True)


def test_without_coerce_only_plain_numbers_compare_as_numbers():
    assert values_equal("116", "116.0") and values_equal(116, "116.0") and values_equal("1,253.50", "1253.5")
    assert not values_equal("0116", "116")  # a leading zero is a code, not a number
    assert values_equal("116", 116) and values_equal("1,253.50", 1253.5)  # a number written as a string
    assert not values_equal("0116", 116) and not values_equal("23.1%", 23.1)  # only with coerce


def test_numbers_in_json_without_coerce(ws):
    ws.write("a.json", json.dumps({"hours": 116, "share": "23.1", "code": "0116"}))
    check = {"type": "json_field_equals", "path": "a.json"}
    assert ws.run({**check, "fields": {"hours": "116.0", "share": "23.10"}}).passed
    assert ws.run({**check, "field": "hours", "expected": 116.0}).passed
    assert not ws.run({**check, "field": "code", "expected": "116"}).passed
    assert ws.run({**check, "field": "share", "expected": 23.1}).passed  # 23.1 written as a string
    assert not ws.run({**check, "field": "code", "expected": 116}).passed  # a code, not a number
    assert ws.run({**check, "field": "code", "expected": 116, "coerce": True}).passed


def test_csv_cells_in_every_number_form(ws):
    ws.write("o.csv", 'id,total,share,paid,due\nA,"1,253.50",23.1%,yes,2026-04-03\nB,116,5%,no,2026-04-10\n')
    expected = [
        {"id": "A", "total": 1253.5, "share": 23.1, "paid": True, "due": "2026-04-03"},
        {"id": "B", "total": "116.0", "share": 5, "paid": False, "due": "2026-04-10"},
    ]
    assert ws.run({"type": "csv_rows_equal", "path": "o.csv", "expected": expected, "key": "id"}).passed
    ws.write("o.csv", "id;total\nA;1253,50\nB;116\n")
    rows = [{"id": "A", "total": 1253.5}, {"id": "B", "total": 116}]
    assert ws.run({"type": "csv_rows_equal", "path": "o.csv", "expected": rows, "delimiter": ";"}).passed


def test_numeric_close_reads_a_decimal_comma(ws):
    ws.write("t.txt", "Total: 1253,50 EUR\n")
    check = {"type": "numeric_close", "path": "t.txt", "pattern": r"Total: (\S+)", "expected": 1253.5}
    assert ws.run(check).passed


# -- 6. the unfiltered input earns at most a fifth -----------------------------------------------


INPUT = [
    {"id": f"R{i:02d}", "amount": f"{10 * i + 0.5:.2f}", "region": "north" if i % 5 == 0 else "south"}
    for i in range(30)
]
WANTED = [r for r in INPUT if r["region"] == "north"]  # 6 of 30


def _csv(rows: list[dict]) -> str:
    return "id,amount,region\n" + "".join(f"{r['id']},{r['amount']},{r['region']}\n" for r in rows)


@pytest.mark.parametrize("key", [None, "id"])
def test_csv_the_unfiltered_input_and_a_bare_header(ws, key):
    check = {"type": "csv_rows_equal", "path": "o.csv", "expected": WANTED, "weight": 3}
    if key:
        check["key"] = key
    ws.write("o.csv", _csv(INPUT))
    assert len(WANTED) == 6 and ws.run(check).score <= 0.2
    ws.write("o.csv", _csv([]))
    assert ws.run(check).score == 0
    ws.write("o.csv", _csv(WANTED))
    assert ws.run(check).passed


def test_a_json_lookup_of_the_unfiltered_input_earns_at_most_a_fifth(ws):
    def lookup(rows):
        return json.dumps({r["id"]: {"amount": float(r["amount"]), "region": r["region"]} for r in rows})

    fields = {f'["{r["id"]}"]': {"amount": float(r["amount"]), "region": r["region"]} for r in WANTED}
    entries = {"type": "json_field_equals", "path": "o.json", "fields": fields, "weight": 3, "extra_entries": False}
    only = {
        "type": "json_schema",
        "path": "o.json",
        "schema": {"type": "object", "propertyNames": {"enum": [r["id"] for r in WANTED]}},
    }
    ws.write("o.json", lookup(INPUT))
    r = ws.run(entries)
    assert r.score == pytest.approx(0.2) and "24 entries not asked for" in r.reason
    assert ws.reward([entries, only]) <= 0.2
    assert ws.run({**entries, "extra_entries": True}).passed  # the default: other keys may be there
    ws.write("o.json", lookup(WANTED))
    assert ws.reward([entries, only]) == 1
    ws.write("o.json", lookup(WANTED[:3]))
    assert ws.run(entries).score == pytest.approx(0.5)
    ws.write("o.json", "{}")
    assert ws.run(entries).score == 0


def test_surplus_items_of_a_top_level_list(ws):
    ws.write("o.json", json.dumps([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]))
    check = {"type": "json_field_equals", "path": "o.json", "fields": {"[0].id": 1}, "extra_entries": False}
    assert ws.run(check).score == pytest.approx(1 / 4)
