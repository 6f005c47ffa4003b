"""A right answer in a reasonable equivalent form keeps its credit: counts written in words in
prose ("six blocked items" for 6), numbers written as plain numeric strings in JSON and YAML
("1934.70" for 1934.7). Neither opens a door to a lazy answer: a word is found only as a whole
word and a whole number, and a string that is not only a number never equals one."""

from __future__ import annotations

import json

import pytest

from clawgym.checks import CheckContext, CheckResult, check_schema
from clawgym.checks.number_text import number_found, number_words_in, numbers_in
from clawgym.checks.structured import values_equal
from clawgym.verify import run_checks


@pytest.fixture
def ws(tmp_path):
    work = tmp_path / "work"
    work.mkdir()

    class WS:
        def write(self, rel: str, text: str) -> None:
            (work / rel).write_text(text)

        def run(self, config: dict, outbox: list | None = None) -> CheckResult:
            traj = {"side_effects": {"outbox": outbox or []}}
            ctx = CheckContext(workspace=work, original=work, task_dir=tmp_path, params={}, trajectory=traj)
            (result,) = run_checks([config], ctx)
            return result

    return WS()


# -- counts written in words --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,item",
    [
        ("There are six blocked action items.", "6"),
        ("Six items are blocked.", "6"),
        ("SIX ITEMS ARE BLOCKED", "6"),
        ("Theo has two chores, worth 7 points.", "2"),
        ("Theo has two chores, worth 7 points.", "7"),
        ("We counted twenty-one replies.", "21"),
        ("We counted twenty one replies.", "21"),
        ("We counted Twenty-One replies.", "21"),
        ("Ninety-nine tickets closed.", "99"),
        ("One hundred guests came.", "100"),
        ("A hundred guests came.", "100"),
        ("We found zero duplicates.", "0"),
        ("Eleven of them, (**twelve** in all).", "12"),
        ("a six-month plan", "6"),
        ("two third-party vendors", "2"),
        ("six five-star reviews", "5"),
        ("We counted twenty-one replies.", "21.0"),
    ],
)
def test_a_count_in_words_is_found(text, item):
    assert number_found(numbers_in(text), item)


@pytest.mark.parametrize(
    "text,item",
    [
        ("Someone will call you back.", "1"),  # "one" inside another word
        ("We often meet.", "10"),  # "ten" inside another word
        ("The network is down.", "2"),  # "two" nowhere: "network" holds no "two"
        ("Attendance was weighty.", "8"),
        ("We counted twenty-one replies.", "20"),  # parts of a compound
        ("We counted twenty-one replies.", "1"),
        ("thirty-six rows", "6"),
        ("two hundred rows", "2"),
        ("two hundred rows", "100"),
        ("six thousand rows", "6"),
        ("one hundred and six rows", "6"),
        ("one hundred and six rows", "100"),
        ("two and a half hours", "2"),
        ("two point five hours", "2"),
        ("two point five hours", "5"),
        ("two thirds of the budget", "2"),
        ("one and three quarters hours", "3"),
        ("the six-eight range", "6"),  # a range or a time
        ("the six-eight range", "8"),
        ("at ten-fifteen", "15"),
        ("team-one", "1"),  # a hyphenated name
        ("ticket six_b", "6"),  # a code
        ("No one replied.", "1"),
        ("They thanked one another.", "1"),
        ("minus six degrees", "6"),  # a negative number is another number
        ("six items", "06"),  # a code with a leading zero matches only as its digits
    ],
)
def test_a_word_inside_something_else_is_not_a_count(text, item):
    assert not number_found(numbers_in(text), item)


def test_every_whole_number_to_100_has_its_words():
    units = "one two three four five six seven eight nine".split()
    tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
    small = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen".split()
    small += "fifteen sixteen seventeen eighteen nineteen".split()
    words = {n: w for n, w in enumerate(small)}
    for t, ten in enumerate(tens, start=2):
        words[10 * t] = ten
        words.update({10 * t + u: f"{ten}-{unit}" for u, unit in enumerate(units, start=1)})
    words[100] = "one hundred"
    assert sorted(words) == list(range(101))
    for n, w in words.items():
        assert number_words_in(f"In all: {w} items.") == [(str(n), False)], w
        assert number_words_in(f"{w.replace('-', ' ').upper()}") == [(str(n), False)], w


def test_text_contains_takes_a_count_in_words(ws):
    ws.write("summary.md", "There are six blocked action items. Theo has two chores, worth 7 points.\n")
    check = {"type": "text_contains", "path": "summary.md"}
    assert ws.run({**check, "contains": ["6", "2", "7 points"]}).passed
    r = ws.run({**check, "contains": ["6", "3"]})
    assert r.score == 0.5 and "missing '3'" in r.reason
    assert ws.run({**check, "contains": "blocked", "not_contains": "6"}).score == 0.5


def test_a_section_and_a_message_body_take_a_count_in_words(ws):
    ws.write("r.md", "# Summary\nTwenty-one replies came in.\n\n# Notes\nnone\n")
    section = {"type": "markdown_section", "path": "r.md", "heading": "Summary"}
    assert ws.run({**section, "contains": ["21"]}).passed
    ws.write("mail.txt", "To: team@example.com\nSubject: Status\n\nHi all,\nthere are six blocked items.\n")
    assert ws.run({"type": "text_contains", "path": "mail.txt", "contains": "6", "body_only": True}).passed


def test_message_sent_takes_a_count_in_words_and_needs_a_whole_number(ws):
    check = {"type": "message_sent", "channel": "email", "contains": ["6", "blocked"]}
    sent = [{"channel": "email", "target": "a@example.com", "message": "There are six blocked action items."}]
    assert ws.run(check, sent).passed
    for lazy in ("There are 16 blocked items.", "Blocked since 2026-06-01.", "Someone has blocked items."):
        r = ws.run(check, [{"channel": "email", "target": "a@example.com", "message": lazy}])
        assert r.score == 0.5 and "missing '6'" in r.reason, lazy


def test_a_lazy_output_without_number_words_scores_zero(ws):
    ws.write("summary.md", "# Summary\n\nSomeone often reviews the network items; anyone can weigh in. See attached.\n")
    check = {"type": "text_contains", "path": "summary.md", "contains": ["6", "2", "21", "10"]}
    r = ws.run(check)
    assert r.score == 0, r.reason


def test_the_schemas_say_so():
    for check in ("text_contains", "message_sent"):
        doc = check_schema(check)["properties"]["contains"]["description"]
        assert "`six`" in doc and "`twenty-one`" in doc and "`someone`" in doc, check


# -- numbers written as strings in JSON and YAML ------------------------------------------------


@pytest.mark.parametrize("written", ["1934.70", "1,934.70", "1934,70", "1934.7", " 1934.70 "])
def test_a_plain_numeric_string_equals_the_number(ws, written):
    assert values_equal(written, 1934.7)
    ws.write("out.json", json.dumps({"total": written, "rows": [{"amount": written}]}))
    check = {"type": "json_field_equals", "path": "out.json"}
    assert ws.run({**check, "fields": {"total": 1934.7, "rows[0].amount": 1934.70}}).passed
    ws.write("out.yaml", f'total: "{written}"\n')
    assert ws.run({"type": "yaml_field_equals", "path": "out.yaml", "field": "total", "expected": 1934.7}).passed


@pytest.mark.parametrize("written", ["about 1900", "1934.70 EUR", "~1934.70", "1934.7.0", "", "n/a", "01934.70"])
def test_a_string_that_is_not_only_a_number_does_not(ws, written):
    assert not values_equal(written, 1934.7)
    ws.write("out.json", json.dumps({"total": written}))
    assert not ws.run({"type": "json_field_equals", "path": "out.json", "field": "total", "expected": 1934.7}).passed


def test_coerce_still_adds_the_looser_forms(ws):
    ws.write("out.json", json.dumps({"share": "23.1%", "paid": "yes", "due": "$1,934.70"}))
    check = {"type": "json_field_equals", "path": "out.json", "fields": {"share": 23.1, "paid": True, "due": 1934.7}}
    assert ws.run(check).score == 0
    assert ws.run({**check, "coerce": True}).passed
    assert not values_equal("1", True) and not values_equal(True, 1)  # booleans are not numbers


def test_a_wrong_numeric_string_still_fails(ws):
    ws.write("out.json", json.dumps({"total": "1934.71"}))
    r = ws.run({"type": "json_field_equals", "path": "out.json", "field": "total", "expected": 1934.7})
    assert r.score == 0 and "expected 1934.7, got '1934.71'" in r.reason


def test_csv_cells_compare_by_value(ws):
    ws.write("o.csv", 'id,total\nA,1934.70\nB,"1,934.70"\n')
    rows = [{"id": "A", "total": 1934.7}, {"id": "B", "total": 1934.7}]
    assert ws.run({"type": "csv_rows_equal", "path": "o.csv", "expected": rows, "key": "id"}).passed
    ws.write("o.csv", "id,total\nA,about 1900\nB,1934.70\n")
    assert not ws.run({"type": "csv_rows_equal", "path": "o.csv", "expected": rows, "key": "id"}).passed


@pytest.mark.parametrize(
    "text,value",
    [("GBP 7.06", 7.06), ("7.06 EUR", 7.06), ("USD 1,234.50", 1234.5), ("GBPX 7", None), ("7.06 EURO", None)],
)
def test_an_amount_with_its_currency_code_is_the_amount(text, value):
    from clawgym.checks.base import parse_number

    assert parse_number(text) == value


# -- a CSV written for a spreadsheet set to semicolons ------------------------------------------


def test_a_semicolon_csv_with_decimal_commas_is_read_by_its_header(ws):
    check = {
        "type": "csv_rows_equal",
        "path": "out.csv",
        "key": "site",
        "tolerance": 0.01,
        "expected": [{"site": "Front desk", "average_hours": 5.88}, {"site": "Kitchen", "average_hours": 4.25}],
    }
    ws.write("out.csv", "site,average_hours\nFront desk,5.88\nKitchen,4.25\n")
    assert ws.run(check).score == 1.0
    # commas on every line too (the decimal commas): the header decides, not the comma count
    ws.write("out.csv", "site;average_hours\nFront desk;5,88\nKitchen;4,25\n")
    assert ws.run(check).score == 1.0
    ws.write("out.csv", "site;average_hours\nFront desk;5,88\nKitchen;9,99\n")
    assert ws.run(check).score == 0.5
    # a delimiter the task fixed is kept
    assert ws.run({**check, "delimiter": ","}).score == 0.0


@pytest.mark.parametrize(
    "text,value",
    [
        ("1.253,50", 1253.5),  # German
        ("1 253,50", 1253.5),  # French
        ("1\u202f253,50", 1253.5),
        ("1.234.567,89", 1234567.89),
        ("-1.234,5", -1234.5),
        ("€ 1.253,50", 1253.5),
        ("1,253.50", 1253.5),
        ("1,253", 1253.0),
        ("1.2345", 1.2345),
    ],
)
def test_a_decimal_comma_with_grouped_thousands_is_the_number_it_shows(text, value):
    from clawgym.checks.base import parse_number

    assert parse_number(text) == value


def test_a_field_named_as_the_file_writes_it_or_as_code_does_is_the_same_field(ws):
    check = {
        "type": "csv_rows_equal",
        "path": "rejects.csv",
        "key": "id",
        "name_columns": ["field"],
        "expected": [
            {"id": "GH-1", "field": "reported_by", "value": ""},
            {"id": "GH-2", "field": "severity", "value": "x"},
        ],
    }
    ws.write("rejects.csv", "id,field,value\nGH-1,Reported By,\nGH-2,Severity,x\n")
    assert ws.run(check).score == 1.0
    ws.write("rejects.csv", "id,field,value\nGH-1,reported-by,\nGH-2,SEVERITY,x\n")
    assert ws.run(check).score == 1.0
    ws.write("rejects.csv", "id,field,value\nGH-1,reporter,\nGH-2,Severity,x\n")
    assert ws.run(check).score == 0.5  # another field is another field
    ws.write("rejects.csv", "id,field,value\nGH-1,Reported By,\nGH-2,Severity,X\n")
    assert ws.run(check).score == 0.5  # only the named columns compare as names


def test_a_note_s_small_counts_leave_out_dates_labels_decimals_and_list_markers():
    from clawgym.checks.text import small_counts

    note = (
        "8 certificates were issued between 13 August 2025 and March 4th, 2026: 5 RSA 2048, 2 ECDSA P-256 "
        "and 1 RSA 4096; 89,69 EUR in all.\n1. first\n2) second\nsix are new, twenty-one old"
    )
    assert small_counts(note) == {8, 5, 2, 1, 6, 21}
    assert len(small_counts(" ".join(str(n) for n in range(101)))) == 101
