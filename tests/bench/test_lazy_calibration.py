"""Benchmark calibration runs the lazy agents: `lazy: {best, variant, scores}` is recorded, and a
best lazy score above 0.1 fails the instance with the variant, its score and the checks that paid."""

from __future__ import annotations

from pathlib import Path

import lazy_tasks as lt
from clawgym.agent import lazy
from clawgym.bench.calibrate import calibrate_instance
from clawgym.bench.layout import Instance

# the instruction states a number (100), so every variant applies but the one for prose outputs
VARIANTS = [v for v in lazy.VARIANTS if v != "number_spray"]


def instance(lib: Path, name: str, checks: list[dict]) -> Instance:
    folder = lib / "bench" / "analysis" / name
    lt.write_spec(folder, name, checks).rename(folder / "task.yaml")
    return Instance(name, "analysis", folder)


def test_calibration_records_the_lazy_scores_of_a_lazy_proof_instance(lib):
    record = calibrate_instance(instance(lib, "north-good", lt.GOOD))
    assert record["lazy"] == {"best": 0.0, "variant": "empty", "scores": dict.fromkeys(VARIANTS, 0.0)}
    assert not any(f.startswith("lazy:") for f in record["failures"]), record["failures"]


def test_calibration_fails_an_instance_a_lazy_agent_scores_on(lib):
    record = calibrate_instance(instance(lib, "north-flagged", lt.SAME_VALUES))
    assert record["lazy"]["best"] == 1.0 and record["lazy"]["variant"] == "constant_guess"
    assert record["lazy"]["scores"]["empty"] == 0.0
    assert (
        "lazy: a lazy agent scores more than 0.1: constant_guess (the reference's shape with one constant for "
        "every number; constant 1) scores 1.000; paying: orders over 100 1.000 (make the checks depend on the "
        "computed content: no weight on a file's existence or on untouched inputs, no lone number, no partial "
        "credit for the unfiltered input)"
    ) in record["failures"]
