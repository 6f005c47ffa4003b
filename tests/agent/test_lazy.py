"""The lazy agents (`clawgym/agent/lazy.py`): each writes outputs without any analysis, and a task
whose checks pay one of them more than 0.1 is caught by the variant that exposes its weakness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lazy_tasks as lt
from clawgym.agent import lazy
from clawgym.agent import lazy_formats as fmt
from clawgym.compile.workspace import materialize
from clawgym.run.lint import grade_here

WITHOUT_SANDBOX = [v for v in lazy.VARIANTS if v != "first_rows"]


def scores(tmp_path: Path, checks: list[dict], instruction: str = lt.INSTRUCTION, variants=WITHOUT_SANDBOX) -> dict:
    """{variant: LazyScore} of the order task graded by `checks`."""
    task = lt.task(checks, instruction)
    pristine, final = tmp_path / "pristine", lt.reference(task, tmp_path / "final")
    materialize(task, pristine)
    outputs = lazy.output_paths(task, pristine, final)
    found = lazy.lazy_scores(
        task, pristine, final, outputs, lambda ws: grade_here(task, ws, pristine, None), variants=variants
    )
    return {s.variant: s for s in found}


def test_a_lazy_proof_task_pays_no_lazy_agent(tmp_path):
    found = scores(tmp_path, lt.GOOD)
    assert set(found) == {
        "empty",
        "skeleton",
        "instruction_numbers",
        "constant_guess",
        "unfiltered_input",
        "wrong_content",
        "input_with_zeros",
    }
    assert {v: s.reward for v, s in found.items()} == dict.fromkeys(found, 0.0)
    assert all(s.paying == () for s in found.values())
    assert lazy.summary(list(found.values()))["best"] == 0.0


@pytest.mark.parametrize(
    "checks, instruction, variant, reward, paying",
    [
        (lt.EXISTS_PAYS, lt.INSTRUCTION, "empty", 0.5, [("north file", 1.0)]),
        (lt.HEADER_PAYS, lt.INSTRUCTION, "skeleton", 0.5, [("north columns", 1.0)]),
        (lt.NUMBER_PAYS, lt.INSTRUCTION + lt.GIVEN_AWAY, "instruction_numbers", 0.5, [("north count", 1.0)]),
        (lt.SAME_VALUES, lt.INSTRUCTION, "constant_guess", 1.0, [("orders over 100", 1.0)]),
        (lt.UNFILTERED_PAYS, lt.INSTRUCTION, "unfiltered_input", 0.5, [("north orders", 0.5)]),
    ],
    ids=["weighted-existence", "header-only", "number-from-instruction", "same-value-groups", "partial-credit"],
)
def test_each_weakness_is_caught_by_its_variant(tmp_path, checks, instruction, variant, reward, paying):
    found = scores(tmp_path, checks, instruction)
    top = found[variant]
    assert top.reward == reward and reward == lazy.worst(list(found.values())).reward, found
    assert list(top.paying) == paying
    text = top.describe()
    assert text.startswith(f"{variant} (") and f"scores {reward:.3f}; paying: {paying[0][0]} " in text


def test_the_weak_tasks_pay_only_their_own_variant(tmp_path):
    """Each weakness is exposed by the variant built for it, not by doing less of everything."""
    assert scores(tmp_path / "a", lt.HEADER_PAYS)["empty"].reward == 0.0
    number = scores(tmp_path / "b", lt.NUMBER_PAYS, lt.INSTRUCTION + lt.GIVEN_AWAY)
    assert number["skeleton"].reward == 0.0 and number["instruction_numbers"].reward == 0.5
    # without the count in the instruction the same checks pay no lazy agent but the one listing
    # every number: a lone count found anywhere in prose is bought by writing them all
    unstated = scores(tmp_path / "c", lt.NUMBER_PAYS)
    assert lazy.worst([s for v, s in unstated.items() if v != "number_spray"]).reward == 0.0
    assert unstated["number_spray"].reward == 0.5 and list(unstated["number_spray"].paying) == [("north count", 1.0)]
    count = {"type": "text_matches", "name": "north count", "path": "out/summary.txt", "max_numbers": 8}
    count["pattern"] = r"(?<![\d.])3(?![\d.])"
    capped = [count if c.get("name") == "north count" else c for c in lt.NUMBER_PAYS]
    assert scores(tmp_path / "e", capped)["number_spray"].reward == 0.0  # more than 8 numbers: no count
    same = scores(tmp_path / "d", lt.SAME_VALUES)
    assert same["constant_guess"].guess == "constant 1" and same["skeleton"].reward == 0.0
    assert "wrong_content" not in same  # every value is the same: nothing can move to a wrong row


def test_variants_write_the_shapes_they_promise(tmp_path):
    task = lt.task(lt.GOOD)
    pristine, final = tmp_path / "pristine", lt.reference(task, tmp_path / "final")
    materialize(task, pristine)
    paths = ["out/north.csv", "out/totals.json", "out/summary.txt"]
    ref = lazy.Reference.read(task, pristine, final, paths)

    def files(variant: str) -> list[dict[str, str]]:
        return [{p: (b or b"").decode() for p, b in c.files.items()} for c in lazy.VARIANTS[variant](ref)]

    [empty] = files("empty")
    assert empty == dict.fromkeys(paths, "")
    [skeleton] = files("skeleton")
    assert skeleton == {"out/north.csv": "order_id,customer,amount\n", "out/totals.json": "{}\n", "out/summary.txt": ""}
    # the instruction states one number (100): every number the reference writes becomes it
    listed, hundred = files("instruction_numbers")
    assert listed == hundred
    assert json.loads(hundred["out/totals.json"]) == {"north": 100}  # the only region the instruction names
    assert hundred["out/north.csv"] == "order_id,customer,amount\n,,100\n,,100\n,,100\n"
    assert hundred["out/summary.txt"] == "100\n"
    constants = {c.guess: c for c in lazy.VARIANTS["constant_guess"](ref)}
    assert list(constants) == ["constant 0", "constant 1", "constant 6", "column max", "column min"]
    six = {p: b.decode() for p, b in constants["constant 6"].files.items()}
    assert six["out/north.csv"] == "order_id,customer,amount\nO1,,6\nO3,,6\nO6,,6\n"  # the key column is kept
    assert json.loads(six["out/totals.json"]) == {"east": 6, "north": 6, "south": 6}
    high = constants["column max"].files["out/north.csv"].decode()
    assert high == "order_id,customer,amount\nO1,,180.25\nO3,,180.25\nO6,,180.25\n"  # the input's amount column
    [unfiltered] = files("unfiltered_input")
    assert unfiltered["out/north.csv"] == "order_id,customer,amount\n" + "".join(
        f"{r.split(',')[0]},{r.split(',')[1]},{r.split(',')[3]}\n" for r in lt.ORDERS.splitlines()[1:]
    )
    assert unfiltered["out/summary.txt"].splitlines()[1] == "O1, Ann, north, 120.50"
    [wrong] = files("wrong_content")
    rows = wrong["out/north.csv"].splitlines()
    assert [r.split(",")[0] for r in rows] == ["order_id", "O1", "O3", "O6"]
    assert sorted(r.split(",", 1)[1] for r in rows[1:]) == ["Ann,120.50", "Cid,40.00", "Fay,9.10"]
    assert rows[1:] != lt.OUTPUTS["out/north.csv"].splitlines()[1:]
    assert sorted(json.loads(wrong["out/totals.json"]).values()) == [133.0, 169.6, 196.0]
    assert json.loads(wrong["out/totals.json"]) != json.loads(lt.OUTPUTS["out/totals.json"])
    assert wrong["out/summary.txt"] == ""  # prose: a skeleton


def test_a_variant_that_does_not_apply_yields_nothing(tmp_path):
    task = lt.task(lt.GOOD, instruction="Write out/notes.txt.")
    pristine = tmp_path / "pristine"
    materialize(task, pristine)
    final = tmp_path / "final"
    materialize(task, final)
    (final / "out").mkdir()
    (final / "out" / "notes.txt").write_text("Dear team,\nall done.\n")
    ref = lazy.Reference.read(task, pristine, final, ["out/notes.txt"])
    assert list(lazy.instruction_numbers(ref)) == []  # no number in the instruction
    assert list(lazy.constant_guess(ref)) == []  # no table, object or record to fill
    assert list(lazy.wrong_content(ref)) == []  # nothing that can move between rows
    ref.inputs = {}
    assert list(lazy.unfiltered_input(ref)) == [] and list(lazy.first_rows(ref)) == []


def test_output_paths_are_the_graded_files_the_reference_wrote(tmp_path):
    task = lt.task(lt.GOOD)
    pristine, final = tmp_path / "pristine", lt.reference(task, tmp_path / "final")
    materialize(task, pristine)
    assert lazy.output_paths(task, pristine, final) == ["out/north.csv", "out/totals.json"]
    globbed = lt.task([{"type": "files_count", "pattern": "out/*.json", "min": 1}])
    assert lazy.output_paths(globbed, pristine, final) == ["out/flagged.json", "out/totals.json"]
    # a check that reads files it does not name (a command) makes every written file an output
    command = lt.task([{"type": "command", "run": "true"}, {"type": "message_sent", "contains": "x"}])
    assert lazy.output_paths(command, pristine, final) == sorted(lt.OUTPUTS)


def test_what_a_skeleton_keeps_is_what_the_instruction_states():
    known = fmt.Known.of("Write report.md with a Summary section and mail it, subject Weekly totals, 2 decimals.")
    md = fmt.read_output(
        "report.md", b"# Summary\n\nTotal 42.\n\n## Alice Smith\n\n| name | n |\n|---|---|\n| Bob | 4 |\n## Weekly 12\n"
    )
    assert fmt.skeleton(md, known) == "# Summary\n| name | n |\n|---|---|\n## Weekly \n"
    mail = fmt.read_output("mail.txt", b"To: ops@example.com\nSubject: Weekly totals\n\nThe total is 42.\n")
    assert fmt.skeleton(mail, known) == "To:\nSubject: Weekly totals\n"
    assert fmt.numbers_in("From 2026-01-03, 1,250.50 and 7%") == ["2026", "01", "03", "1250.50", "7"]


def test_rotation_moves_as_many_rows_as_duplicates_allow():
    assert fmt.rotation([1, 2, 3]) == [2, 3, 1]
    assert fmt.rotation(["a", "a"]) is None
    moved = fmt.rotation(["x", "x", "y", "z"])
    assert sorted(moved) == ["x", "x", "y", "z"] and sum(a == b for a, b in zip(moved, ["x", "x", "y", "z"])) == 0
    data, moved_any = fmt.rotate_data({"total": 5, "groups": [{"name": "a", "n": 1}, {"name": "b", "n": 2}]})
    assert moved_any and data == {"total": 0, "groups": [{"name": "a", "n": 2}, {"name": "b", "n": 1}]}


def test_wrong_content_leaves_no_row_right_when_the_key_repeats():
    """Rows named by a repeated value (a date shared by a meeting's action items) trade values
    among themselves without becoming wrong: the rotation moves values to rows of another key."""
    table = fmt.Table(
        ["date", "owner", "action"],
        [["d1", "Ann", "book"], ["d1", "Bob", "call"], ["d2", "Cid", "mail"], ["d2", "Dee", "file"]],
    )
    moved = fmt.rotate_table(table, ["date"])
    assert moved is not None and sorted(r[1:] for r in moved.rows) == sorted(r[1:] for r in table.rows)
    assert not [r for r in moved.rows if r in table.rows]  # shifting by one row would leave two right
    records = [{"date": r[0], "owner": r[1], "action": r[2]} for r in table.rows]
    data, any_moved = fmt.rotate_data(records)
    assert any_moved and not [r for r in data if r in records]
    # a unique key moves every row by one, as before; rows that cannot leave their key stay None
    assert fmt.rotation(["a", "b", "c"], ["k1", "k2", "k3"]) == ["b", "c", "a"]
    assert fmt.rotation(["a", "b"], ["k", "k"]) is None


def test_wrong_content_earns_nothing_from_rows_it_left_right(tmp_path):
    """A table with no column of distinct names rotates around its first column; the rows it
    writes are all wrong, so a check without a key pays it nothing (shifting by one row paid 0.5)."""
    text = "region,customer,amount\nnorth,Ann,120.50\nnorth,Ann,40.00\nsouth,Bob,9.10\nsouth,Bob,15.75\n"
    expected = [dict(zip(["region", "customer", "amount"], line.split(","))) for line in text.split()[1:]]
    check = {"type": "csv_rows_equal", "name": "rows", "path": "out/north.csv", "expected": expected}
    task = lt.task([lt.NORTH_GATE, check, lt.INPUT_GATE])
    pristine, final = tmp_path / "pristine", tmp_path / "final"
    materialize(task, pristine)
    materialize(task, final)
    (final / "out").mkdir()
    (final / "out" / "north.csv").write_text(text)
    grade = lambda ws: grade_here(task, ws, pristine, None)  # noqa: E731
    [found] = lazy.lazy_scores(task, pristine, final, ["out/north.csv"], grade, variants=["wrong_content"])
    assert (found.variant, found.reward, found.paying) == ("wrong_content", 0.0, ())
    ref = lazy.Reference.read(task, pristine, final, ["out/north.csv"])
    [wrong] = lazy.wrong_content(ref)
    rows = wrong.files["out/north.csv"].decode().splitlines()
    assert rows[0] == "region,customer,amount" and sorted(r.split(",", 1)[1] for r in rows[1:]) == sorted(
        r.split(",", 1)[1] for r in text.split()[1:]
    )


def test_first_rows_runs_the_reference_on_the_first_rows(tmp_path, bwrap):
    """The reference on a header and two rows of each input table; outputs it leaves the same as
    on the whole input are not given to the agent (they were not read from the rows)."""
    found = scores(tmp_path / "a", lt.UNFILTERED_PAYS, variants=["first_rows"])
    # of the first two orders one is from the north: one of three rows right, no row wrong
    assert found["first_rows"].reward == pytest.approx(1 / 3, abs=1e-6)
    assert found["first_rows"].paying == (("north orders", pytest.approx(1 / 3, abs=1e-6)),)
    assert scores(tmp_path / "b", lt.GOOD, variants=["first_rows"])["first_rows"].reward == 0.0
    flagged = scores(tmp_path / "c", lt.SAME_VALUES, variants=["first_rows"])
    # the first two orders (north, south) are both over 100: 2 of the 3 regions' counts come out right
    assert flagged["first_rows"].reward == pytest.approx(2 / 3, abs=1e-6)


def test_markdown_tables_are_filled_poured_and_rotated(tmp_path):
    task = lt.task(lt.GOOD, instruction="Write out/north.md: a '# North orders' heading and a table of them.")
    pristine, final = tmp_path / "pristine", tmp_path / "final"
    materialize(task, pristine)
    materialize(task, final)
    (final / "out").mkdir()
    table = "| order_id | customer | amount |\n|---|---|---|\n| O1 | Ann | 120.50 |\n| O3 | Cid | 40.00 |\n"
    (final / "out" / "north.md").write_text("# North orders\n\nThree orders.\n\n" + table + "\n## Cid's note\n")
    ref = lazy.Reference.read(task, pristine, final, ["out/north.md"])
    head = "# North orders\n| order_id | customer | amount |\n|---|---|---|\n"
    [skeleton] = lazy.skeleton(ref)
    assert skeleton.files["out/north.md"].decode() == head  # "Cid's note" is not the instruction's
    zero = next(c for c in lazy.constant_guess(ref) if c.guess == "constant 0")
    assert zero.files["out/north.md"].decode() == head + "| O1 |  | 0 |\n| O3 |  | 0 |\n"
    [wrong] = lazy.wrong_content(ref)
    assert wrong.files["out/north.md"].decode() == head + "| O1 | Cid | 40.00 |\n| O3 | Ann | 120.50 |\n"
    [unfiltered] = lazy.unfiltered_input(ref)
    rows = unfiltered.files["out/north.md"].decode().splitlines()
    assert rows[:2] == head.splitlines()[:2] and rows[2] == "| --- | --- | --- |"
    assert rows[3:] == [f"| {r.split(',')[0]} | {r.split(',')[1]} | {r.split(',')[3]} |" for r in lt.ORDERS.split()[1:]]


def test_unfiltered_input_pours_every_row_into_a_json_lookup():
    """A lookup keyed by record (`{"O1": {"customer": ..., "amount": ...}}`) is filled from every
    input row, the key column found by the reference's keys; a lookup of one value per key too."""
    from types import SimpleNamespace

    orders = fmt.Table(["order_id", "customer", "amount"], [["O1", "Ann", "120.50"], ["O2", "Bo", "9"]])
    ref = SimpleNamespace(inputs={"shop/orders.csv": orders})
    by_id = fmt.Output("out/by_id.json", "json", data={"O1": {"customer": "Ann", "amount": 120.5}})
    assert json.loads(lazy._poured_lookup(ref, by_id)) == {
        "O1": {"customer": "Ann", "amount": 120.5},
        "O2": {"customer": "Bo", "amount": 9},
    }
    flat = fmt.Output("out/amounts.json", "json", data={"O2": 9})
    assert json.loads(lazy._poured_lookup(ref, flat)) == {"O1": "Ann", "O2": "Bo"}
    assert lazy._poured_lookup(ref, fmt.Output("out/x.json", "json", data={"nobody": 1})) is None


def test_a_computed_column_left_at_its_default_is_found(tmp_path):
    found = scores(tmp_path, lt.DEFAULT_PAYS, variants=["input_with_zeros", "unfiltered_input"])
    assert found["input_with_zeros"].reward == pytest.approx(0.5)  # the three rows within the limit
    assert found["unfiltered_input"].reward == 0.0  # the column left blank earns nothing
