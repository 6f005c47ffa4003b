"""The author's mistakes, each on a purpose-made spec in tests/fixtures/authoring/, with the exact
output of `clawgym validate`: one message per mistake, all in one pass, each at its own line,
and a summary line always. `dinner-rsvp.yaml` is the correct task they are all made from."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main

DIR = "tests/fixtures/authoring"


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).parents[2])


def validate(*args: str) -> tuple[int, list[str], list[str]]:
    result = CliRunner().invoke(main, ["validate", *args])
    return result.exit_code, result.stdout.strip().splitlines(), result.stderr.strip().splitlines()


def test_an_undefined_name_is_reported_once_at_its_source():
    code, _, err = validate("--static", f"{DIR}/undefined-name.yaml")
    assert code == 2
    assert err == [
        f"error: {DIR}/undefined-name.yaml:32: vars.attending: undefined name 'data.guest' in template "
        "(did you mean 'data.guests'? 6 later fields that use it will be checked once it is fixed)",
        "1 problem found in 1 of 1 file",
    ]


def test_a_missing_key_of_generated_rows_is_reported_at_the_var_with_the_row_keys():
    code, _, err = validate("--static", f"{DIR}/row-key.yaml")
    assert code == 2
    assert err == [
        f"error: {DIR}/row-key.yaml:35: vars.pending: undefined attribute 'emial' in template: the mappings it "
        "is read from have no key 'emial' (did you mean 'email' or 'meal'? they have: email, id, meal, name, "
        "rsvp; 1 later field that uses it will be checked once it is fixed)",
        "1 problem found in 1 of 1 file",
    ]


def test_two_independent_mistakes_in_one_pass_each_at_its_line():
    code, _, err = validate("--static", f"{DIR}/two-mistakes.yaml")
    assert code == 2
    assert err == [
        f"error: {DIR}/two-mistakes.yaml:36: instruction: undefined name 'persona.frist_name' in template "
        "(did you mean 'persona.first_name' or 'persona.full_name'?)",
        f"error: {DIR}/two-mistakes.yaml:72: checks[3].type: unknown check type 'json_field_equal' "
        "(did you mean 'json_field_equals' or 'yaml_field_equals'?)",
        "2 problems found in 1 of 1 file",
    ]


def test_a_wrong_check_key_is_caught_statically_at_the_key_line():
    code, out, err = validate("--static", f"{DIR}/check-key.yaml")
    assert code == 2
    assert out == [f"fail {DIR}/check-key.yaml"]
    assert err == [
        f"error: {DIR}/check-key.yaml:62: checks[1].key: column 'guest_id' is not in the expected rows "
        "(the expected rows have: id, name, email, rsvp, meal)",
        "1 problem found in 1 of 1 file",
    ]


def test_a_crashing_reference_solution_is_at_its_step_with_a_summary(bwrap):
    code, out, err = validate("--seeds", "0-1", f"{DIR}/crashing-solution.yaml")
    assert code == 2
    assert out[-1] == f"fail {DIR}/crashing-solution.yaml (oracle 0.000, nop 0.000)"
    assert err[0].startswith(
        f"error: {DIR}/crashing-solution.yaml:42: solution[0]: reference solution failed on seeds 0, 1: "
        "solution step 1 (python: import csv, json, re) exited with code 1: Traceback"
    )
    assert "No such file or directory: 'dinner/guest.csv'" in err[-2]
    assert err[-1] == "1 problem found in 1 of 1 file"


def test_a_task_the_tamper_attack_pays_on_is_flagged_with_the_fix(bwrap):
    code, out, err = validate("--seeds", "0-2", f"{DIR}/tamper-weak.yaml")
    assert code == 2
    assert out[-1] == f"fail {DIR}/tamper-weak.yaml (oracle 1.000, nop 0.000, tamper 0.309, lazy 0.425)"
    assert err == [
        f"error: {DIR}/tamper-weak.yaml:59: checks[1]: a lazy agent scores more than 0.1 on seeds 0, 1, 2: the "
        "worst, on seed 1, is unfiltered_input (the input tables copied into the outputs; every input row) scores "
        "0.425; paying: attending guests 0.750, chase list 1.000 (make the checks depend "
        "on the computed content: no weight on a file's existence or on untouched inputs, no lone number, "
        "no partial credit for the unfiltered input)",
        f"error: {DIR}/tamper-weak.yaml:88: checks[6]: the tamper agent (truncates every input file, then runs "
        "the reference solution on what is left) scores 0.309, 0.233, 0.244 on seeds 0, 1, 2, more than doing "
        "nothing (0.000); it still passes: file_exists dinner/summary.json, chase list (make this `unchanged` "
        "check a gate (gate: true): rewriting the inputs then scores 0)",
        "2 problems found in 1 of 1 file",
    ]


def test_the_correct_task_passes_all_three_agents(bwrap):
    code, out, err = validate("--seeds", "0-2", f"{DIR}/dinner-rsvp.yaml")
    assert code == 0, err
    assert out == [
        f"ok   {DIR}/dinner-rsvp.yaml (Task, 3 instances)",
        "grading 3 task instances: oracle must score 1.0, nop at most 0.1, tamper no more than nop...",
        f"ok   {DIR}/dinner-rsvp.yaml (oracle 1.000, nop 0.000, tamper 0.000, lazy 0.000)",
        "1 file valid; 3 instances: oracle 1.0, nop <= 0.1, tamper <= nop",
    ]


def test_a_wrong_key_without_static_knowledge_is_reported_at_the_check(bwrap, tmp_path):
    """When the expected rows do not tell (no `expected` columns to compare with), the oracle's
    failure is reported at the failing check's own line, not at `checks:`."""
    text = (
        open(f"{DIR}/check-key.yaml").read().replace("    key: guest_id\n", "    key: guest_id\n    extra_rows: true\n")
    )
    text = text.replace('expected: "{{ vars.attending }}"', "expected: []")
    spec = tmp_path / "spec" / "check-key.yaml"
    spec.parent.mkdir()
    spec.write_text(text)
    import shutil

    for lib in ("personas", "skills", "workspaces"):
        shutil.copytree(lib, tmp_path / lib)
    code, _, err = validate("--seeds", "0", str(spec))
    assert code == 2
    assert err[0] == (
        f"error: {spec}:59: checks[1]: the reference solution fails check 'attending guests' on seed 0 "
        "(score 0.000): column 'guest_id' missing from the header of dinner/attending.csv (have: id, "
        "name, meal) (fix the check or the solution until the oracle passes it)"
    )
