"""Exact user-facing messages for purpose-made bad specs: file:line: key: problem (fix), exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main

LIB = Path(__file__).parent.parent / "fixtures" / "lib"


@pytest.fixture(autouse=True)
def in_lib(monkeypatch):
    monkeypatch.chdir(LIB)


def validate(*args: str):
    result = CliRunner().invoke(main, ["validate", *args])
    return result.exit_code, result.stderr.strip().splitlines()


def test_malformed_yaml_points_at_the_line():
    code, lines = validate("--static", "specs/bad/syntax.yaml")
    assert code == 2
    assert lines == [
        "error: specs/bad/syntax.yaml:5: invalid YAML: did not find expected ',' or ']' (while parsing a flow "
        "sequence that starts on line 4) (check indentation, quoting and that every 'key: value' has a space "
        "after the colon)",
        "1 problem found in 1 of 1 file",
    ]


def test_unknown_keys_wrong_types_and_unknown_check_all_at_once():
    code, lines = validate("--static", "specs/bad/keys.yaml")
    assert code == 2
    assert lines == [
        "error: specs/bad/keys.yaml:4: categroy: unknown key 'categroy' (did you mean 'category' or 'subcategory'?)",
        "error: specs/bad/keys.yaml:8: instruction: expected string, got an integer 42 "
        "(The request, as the user would type it)",
        "error: specs/bad/keys.yaml:9: limits.turns: expected integer, got a string 'many' "
        "(Most model turns an agent may take)",
        "error: specs/bad/keys.yaml:13: checks[0].type: unknown check type 'file_exist' "
        "(did you mean 'file_exists' or 'file_absent'?)",
        "error: specs/bad/keys.yaml:14: checks[1].wieght: unknown key 'wieght' (did you mean 'weight'?)",
        "5 problems found in 1 of 1 file",
    ]


def test_missing_persona_skill_and_workspace():
    code, lines = validate("--static", "specs/bad/refs.yaml")
    assert code == 2
    assert lines == [
        "error: specs/bad/refs.yaml:5: persona: unknown persona 'adaa': personas/adaa.yaml does not exist "
        "(did you mean 'ada'?)",
        "error: specs/bad/refs.yaml:6: skills[0]: unknown skill 'note': skills/note/skill.yaml does not exist "
        "(did you mean 'notes'?)",
        "error: specs/bad/refs.yaml:7: workspace: unknown workspace 'plane': workspaces/plane/workspace.yaml "
        "does not exist (did you mean 'plain'?)",
        "3 problems found in 1 of 1 file",
    ]


def test_undefined_jinja_variables_and_missing_file():
    code, lines = validate("--static", "specs/bad/jinja.yaml")
    assert code == 2
    assert lines == [
        "error: specs/bad/jinja.yaml:11: files[0].source: source file 'missing.txt' not found next to "
        "specs/bad/jinja.yaml (paths are relative to the spec file)",
        "error: specs/bad/jinja.yaml:12: instruction: undefined name 'params.m' in template (params has: n)",
        "error: specs/bad/jinja.yaml:17: checks[0].path: undefined variable 'param' in template "
        "(did you mean 'params'?)",
        "3 problems found in 1 of 1 file",
    ]


def test_failing_reference_solution_is_reported_at_its_step(bwrap):
    code, lines = validate("--seeds", "0-1", "specs/bad/solution.yaml")
    assert code == 2
    assert lines == [
        "error: specs/bad/solution.yaml:10: solution[1]: reference solution failed on seeds 0, 1: solution step 2 "
        "(exec: echo oops >&2; exit 3) exited with code 3: oops (run 'clawgym run SPEC --agent oracle' and read "
        "the trial's trajectory)",
        "1 problem found in 1 of 1 file",
    ]


def test_good_spec_passes_and_yaml_1_1_words_stay_strings():
    code, lines = validate("--static", "specs/good.yaml")
    assert code == 0, lines
    from clawgym.compile.compiler import compile_task, load_task_spec

    spec = load_task_spec("specs/good.yaml")
    answers = {compile_task(spec, seed).params["answer"] for seed in range(12)}
    assert answers == {"no", "yes"}


def test_no_traceback_for_user_mistakes():
    result = CliRunner().invoke(main, ["render", "specs/bad/keys.yaml"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output + result.stderr
    assert os.path.exists("specs/bad/keys.yaml")
