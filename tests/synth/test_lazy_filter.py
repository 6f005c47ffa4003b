"""The synthesis `lazy` filter: after `tamper`, every lazy agent must score at most `lazy_max`;
the manifest records the best lazy score and its variant, a rejection names the variant, its
score and the checks that paid."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import lazy_tasks as lt
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.synth.filters import FilterSettings, run_filters

SCHEMA = Path(__file__).resolve().parents[2] / "clawgym" / "schemas" / "synth.v1.json"


def compiled(lib: Path, name: str, checks: list[dict]):
    return compile_task(load_task_spec(lt.write_spec(lib / "specs", name, checks)), 0)


def test_a_lazy_proof_task_passes_and_records_its_best_lazy_score(lib):
    report = run_filters(compiled(lib, "north-good", lt.GOOD), FilterSettings())
    assert report.passed, report.to_dict()
    assert list(report.results) == [
        "paths",
        "oracle",
        "determinism",
        "nop",
        "tamper",
        "tamper_by",
        "lazy",
        "lazy_by",
        "mutations",
    ]
    assert report.results["lazy"] == 0.0 and report.results["lazy_by"] == "empty"


def test_a_task_paying_a_lazy_agent_is_rejected_with_the_variant_score_and_checks(lib):
    task = compiled(lib, "north-unfiltered", lt.UNFILTERED_PAYS)
    report = run_filters(task, FilterSettings())
    assert not report.passed and report.failed == "lazy"
    assert report.results["lazy"] == 0.5 and report.results["lazy_by"] == "unfiltered_input"
    assert report.reason == (
        "a lazy agent scores more than 0.1: unfiltered_input (the input tables copied into the outputs; every "
        "input row) scores 0.500; paying: north orders 0.500 (make the checks depend on the computed content: "
        "no weight on a file's existence or on untouched inputs, no lone number, no partial credit for the "
        "unfiltered input)"
    )
    # the threshold is a setting, and the filter can be turned off
    assert run_filters(task, FilterSettings(lazy_max=0.5)).passed
    off = run_filters(task, FilterSettings(lazy=False))
    assert off.passed and "lazy" not in off.results


def test_the_synth_spec_sets_the_lazy_filter():
    settings = FilterSettings.from_spec({"nop_max": 0.1, "lazy": False, "lazy_max": 0.2})
    assert (settings.lazy, settings.lazy_max) == (False, 0.2)
    assert (FilterSettings().lazy, FilterSettings().lazy_max) == (True, 0.1)
    filters = json.loads(SCHEMA.read_text())["properties"]["filters"]
    jsonschema.validate({"lazy": True, "lazy_max": 0.1}, filters)
    with pytest.raises(jsonschema.ValidationError, match="greater than the maximum of 1"):
        jsonschema.validate({"lazy_max": 2}, filters)


def test_a_check_named_for_an_order_it_does_not_check_fails_the_mutations_filter(lib):
    named = [
        {**c, "name": "north orders, in order"} if c is lt.NORTH_ROWS or c.get("name") == "north orders" else c
        for c in lt.GOOD
    ]
    task = compiled(lib, "north-named-order", named)
    report = run_filters(task, FilterSettings())
    assert not report.passed and report.failed == "mutations", report.to_dict()
    assert "north orders, in order" in report.reason and "reordered" in report.reason
    # the same task passes once the check grades the order it names, or with the filter off
    ordered = [{**c, "ignore_order": False} if c.get("name") == "north orders, in order" else c for c in named]
    assert run_filters(compiled(lib, "north-ordered", ordered), FilterSettings()).passed
    assert run_filters(task, FilterSettings(mutations=False)).passed
