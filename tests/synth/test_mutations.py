"""The mutation gates on small hand-built tasks: a step that matters is graded and one that does not
is reported; a check named "in order" that checks order survives reordering and one that does not is
reported; a numeric comparison accepts 116.0 for 116 and an exact-digits regex is reported. The
check-name and format gates grade in process on hand-written outputs; only the step gate runs
references in a sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path


from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.compile.workspace import materialize
from clawgym.spec.load import load_text
from clawgym.spec.write import dump_spec, literal
from clawgym.synth.mutations import (
    OK,
    PROBLEM,
    SKIPPED,
    check_name_mutations,
    declared_steps,
    format_variants,
    mutation_problems,
    promises,
    step_mutations,
    without_step,
)

ROOT = Path(__file__).resolve().parents[2]
STOPS = "stop,arrive,minutes\nBakery,09:10,15\nLibrary,08:30,116\nMarket,10:05,40\nPost office,11:00,5\n"
TABLE = (
    "# Stops\n\n| stop | arrive | minutes |\n|---|---|---|\n"
    "| Library | 08:30 | 116 |\n| Bakery | 09:10 | 15 |\n| Market | 10:05 | 40 |\n"
)
ROWS_CSV = "stop,arrive,minutes\nLibrary,08:30,116\nBakery,09:10,15\nMarket,10:05,40\n"
EXPECTED = [
    {"stop": "Library", "arrive": "08:30", "minutes": 116},
    {"stop": "Bakery", "arrive": "09:10", "minutes": 15},
    {"stop": "Market", "arrive": "10:05", "minutes": 40},
]
INSTRUCTION = "List the stops of data/stops.csv that take 10 minutes or more in out/stops.csv (and out/stops.md)."


def _task(checks: list[dict], solution: list[dict] | None = None, instruction: str = INSTRUCTION):
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Task",
        "name": "mutations-test",
        "category": "planning",
        "persona": "office-manager",
        "workspace": "home-office",
        "files": [{"path": "data/stops.csv", "content": STOPS}],
        "instruction": instruction,
        "solution": solution or [{"python": "print('the outputs are written by the test')\n"}],
        "checks": checks,
    }
    for key in ("files", "instruction", "solution", "checks"):
        spec[key] = literal(spec[key])
    doc = load_text(dump_spec(spec), str(ROOT / "datasets" / "mutations-test" / "task.yaml"))
    return compile_task(load_task_spec(doc.file, doc), 0)


def _workspaces(task, tmp_path: Path, outputs: dict[str, str]) -> tuple[Path, Path]:
    """The pristine inputs and a final workspace holding `outputs`, as the reference would leave it."""
    pristine, final = tmp_path / "pristine", tmp_path / "final"
    materialize(task, pristine)
    shutil.copytree(pristine, final)
    for rel, text in outputs.items():
        (final / rel).parent.mkdir(parents=True, exist_ok=True)
        (final / rel).write_text(text, encoding="utf-8")
    return pristine, final


# -- check names ---------------------------------------------------------------------------------


def test_check_names_promise_what_their_words_say():
    assert promises("one table row per stop, in order") == ["order", "every"]
    assert promises("the stops asked for, exactly") == ["exact"]
    assert promises("oldest due first") == ["order"]
    assert promises("data/ untouched") == ["untouched"]
    assert promises("the heading") == ["heading"]
    assert promises("summary figures") == []


def test_an_in_order_check_that_checks_order_survives_reordering_and_one_that_does_not_is_reported(tmp_path):
    ordered = {
        "type": "text_matches",
        "name": "one table row per stop, in order",
        "path": "out/stops.md",
        "pattern": r"Library[^\n]*\n[^\n]*Bakery[^\n]*\n[^\n]*Market",
    }
    unordered = dict(ordered, pattern=[r"(?m)^\| Library ", r"(?m)^\| Bakery ", r"(?m)^\| Market "])
    task = _task([{"type": "file_exists", "path": "out/stops.md", "gate": True}, ordered, unordered])
    pristine, final = _workspaces(task, tmp_path, {"out/stops.md": TABLE})
    records = [m for m in check_name_mutations(task, pristine, final) if "order" in m.name.split(": ")[1]]
    assert [m.verdict for m in records] == [OK, PROBLEM]
    assert records[0].score == 0.0
    assert records[1].reason.startswith(
        "check 'one table row per stop, in order' still scores 1.0 with the table rows of out/stops.md reordered"
    )
    # the folders it was given are left as they were
    assert (final / "out/stops.md").read_text(encoding="utf-8") == TABLE


def test_every_exactly_and_untouched_break_only_their_property(tmp_path):
    checks = [
        {"type": "file_exists", "path": "out/stops.csv", "gate": True},
        {
            "type": "csv_rows_equal",
            "name": "the stops asked for, exactly",
            "path": "out/stops.csv",
            "expected": EXPECTED,
            "key": "stop",
        },
        {
            "type": "csv_rows_equal",
            "name": "every stop",
            "path": "out/stops.csv",
            "expected": EXPECTED,
            "key": "stop",
            "extra_rows": True,
        },
        {"type": "text_contains", "name": "every stop listed", "path": "out/stops.csv", "contains": ["stop,arrive"]},
        {"type": "unchanged", "name": "data/ untouched", "paths": ["data/**"], "gate": True},
    ]
    task = _task(checks)
    pristine, final = _workspaces(task, tmp_path, {"out/stops.csv": ROWS_CSV})
    by_check = {m.target: m for m in check_name_mutations(task, pristine, final)}
    exact = by_check["the stops asked for, exactly"]
    assert exact.verdict == OK and "copied from the input" in exact.name  # Post office, left out on purpose
    assert by_check["every stop"].verdict == OK
    assert by_check["data/ untouched"].verdict == OK and by_check["data/ untouched"].score == 0.0
    # it reads the header only: no dropped row costs it anything
    assert by_check["every stop listed"].verdict == PROBLEM
    assert by_check["every stop listed"].reason.startswith(
        "check 'every stop listed' still scores 1.0 with one of the CSV rows of out/stops.csv dropped (nor 2 other"
    )


# -- format variants -----------------------------------------------------------------------------


def test_a_numeric_comparison_accepts_116_0_and_an_exact_digits_regex_is_reported(tmp_path):
    numeric = {"type": "csv_rows_equal", "name": "the stops", "path": "out/stops.csv", "expected": EXPECTED}
    digits = {
        "type": "text_matches",
        "name": "minutes of the Library stop",
        "path": "out/stops.csv",
        "pattern": "(?m)^Library,08:30,116$",
    }
    exists = {"type": "file_exists", "path": "out/stops.csv", "gate": True}

    task = _task([exists, numeric])
    records = {
        m.name: m for m in format_variants(task, *_workspaces(task, tmp_path / "a", {"out/stops.csv": ROWS_CSV}))
    }
    assert records["with whole numbers written as 116.0"].verdict == OK
    assert {m.verdict for m in records.values()} == {OK}  # quoting, column order, CRLF, no final newline too

    task = _task([exists, digits])
    pristine, final = _workspaces(task, tmp_path / "b", {"out/stops.csv": ROWS_CSV})
    records = {m.name: m for m in format_variants(task, pristine, final)}
    bad = records["with whole numbers written as 116.0"]
    assert bad.verdict == PROBLEM and bad.score == 0.0
    assert bad.reason == (
        "format: out/stops.csv with whole numbers written as 116.0 fails 'minutes of the Library stop' (0.00), "
        "though the instruction does not fix that format (accept the equivalent form in the check, or state the "
        "format in the instruction)"
    )
    assert records["with every field quoted"].verdict == PROBLEM  # "Library" in quotes fails it as well
    assert records["without a final newline"].verdict == OK


def test_a_format_the_instruction_fixes_is_not_required(tmp_path):
    digits = {
        "type": "text_matches",
        "name": "minutes of the Library stop",
        "path": "out/stops.csv",
        "pattern": "(?m)^Library,08:30,116$",
    }
    task = _task([digits], instruction=INSTRUCTION + " Minutes as whole numbers; do not quote the fields.")
    records = {m.name: m for m in format_variants(task, *_workspaces(task, tmp_path, {"out/stops.csv": ROWS_CSV}))}
    fixed = records["with whole numbers written as 116.0"]
    assert fixed.verdict == SKIPPED and "the instruction fixes that format ('whole numbers')" in fixed.reason
    assert records["with every field quoted"].verdict == SKIPPED


def test_markdown_tables_without_outer_pipes_are_a_reasonable_variant(tmp_path):
    rows = {
        "type": "text_matches",
        "name": "no other table rows",
        "path": "out/stops.md",
        "pattern": r"(?m)^\s*\|.*\|\s*$",
        "count": 5,
        "max_count": 5,
    }
    task = _task([rows])
    records = {m.name: m for m in format_variants(task, *_workspaces(task, tmp_path, {"out/stops.md": TABLE}))}
    assert records["with tables with or without outer pipes (the other)"].verdict == PROBLEM
    assert records["with tables padded to aligned columns"].verdict == OK


# -- steps ---------------------------------------------------------------------------------------

FUNCTIONS = """import csv
import os


def load_stops():
    with open('data/stops.csv', newline='', encoding='utf-8') as fh:
        return list(csv.DictReader(fh))


def keep_long(stops):
    return [s for s in stops if int(s['minutes']) >= 10]


def skip_blank_names(stops):
    return [s for s in stops if s['stop'].strip()]


def sort_by_arrival(stops):
    return sorted(stops, key=lambda s: s['arrive'])


def write_stops(stops):
    os.makedirs('out', exist_ok=True)
    with open('out/stops.csv', 'w', newline='', encoding='utf-8') as out:
        writer = csv.writer(out, lineterminator='\\n')
        writer.writerow(['stop', 'arrive', 'minutes'])
        writer.writerows([[s['stop'], s['arrive'], s['minutes']] for s in stops])


def main():
    stops = load_stops()
    stops = keep_long(stops)
    stops = skip_blank_names(stops)
    stops = sort_by_arrival(stops)
    write_stops(stops)


if __name__ == '__main__':
    main()
"""


def test_steps_are_read_from_main_or_from_step_marks():
    steps, why = declared_steps(FUNCTIONS)
    assert why == "" and [(s.number, s.name) for s in steps] == [
        (1, "keep_long"),
        (2, "skip_blank_names"),
        (3, "sort_by_arrival"),
        (4, "write_stops"),
    ]
    assert "stops = skip_blank_names(stops)" not in without_step(FUNCTIONS, steps[1])
    assert "def skip_blank_names" in without_step(FUNCTIONS, steps[1])  # only its call goes
    script = "import csv\nrows = list(csv.reader(open('a.csv')))\n# step 1: drop blanks\nrows = [r for r in rows if r]\n\n# step 2: write\nprint(rows)\n"
    steps, why = declared_steps(script)
    assert [(s.name, s.first, s.last) for s in steps] == [("drop blanks", 2, 4), ("write", 5, 6)]
    assert (
        without_step(script, steps[0])
        == "import csv\nrows = list(csv.reader(open('a.csv')))\n# step 2: write\nprint(rows)\n"
    )
    twice = FUNCTIONS.replace("    write_stops(stops)\n", "    write_stops(stops)\n    write_stops(keep_long(stops))\n")
    assert [s.unclean for s in declared_steps(twice)[0]][:1] == ["keep_long() is called 2 times"]
    steps, why = declared_steps("import csv\nprint(1)\n")
    assert steps == [] and "declares no removable steps" in why


def test_a_hand_written_reference_is_skipped_with_the_reason(tmp_path):
    task = _task(
        [{"type": "file_exists", "path": "out/stops.csv"}], solution=[{"exec": "mkdir -p out"}, {"exec": "true"}]
    )
    pristine = tmp_path / "pristine"
    materialize(task, pristine)
    [record] = step_mutations(task, pristine)
    assert record.verdict == SKIPPED and record.reason.startswith("a hand-written reference of 2 solution steps")


def test_a_step_that_matters_is_graded_and_one_that_does_not_is_reported(tmp_path, bwrap):
    checks = [
        {"type": "file_exists", "path": "out/stops.csv", "gate": True},
        {
            "type": "csv_rows_equal",
            "name": "long stops in arrival order",
            "path": "out/stops.csv",
            "expected": EXPECTED,
            "ignore_order": False,
        },
    ]
    task = _task(checks, solution=[{"python": FUNCTIONS}])
    pristine = tmp_path / "pristine"
    materialize(task, pristine)
    records = step_mutations(task, pristine)
    assert [(m.target, m.verdict) for m in records] == [
        ("keep_long", OK),
        ("skip_blank_names", PROBLEM),
        ("sort_by_arrival", OK),
        ("write_stops", OK),
    ]
    assert records[1].reason == (
        "step 2 'skip_blank_names' can be dropped without changing any graded value: remove it from the chain "
        "or make the data need it"
    )
    assert records[1].score == 1.0 and records[2].score < 1.0
    final = tmp_path / "final"
    shutil.copytree(pristine, final)
    (final / "out").mkdir()
    (final / "out/stops.csv").write_text(ROWS_CSV, encoding="utf-8")
    problems = mutation_problems(task, pristine, final)
    assert problems == [records[1].reason]
