"""Write-behind: a trial's slot is free once it ended; it counts once its files are written."""

from __future__ import annotations

import json
import time

import pytest

from clawgym.run import writer as writer_mod
from clawgym.run.plan import RunPlan
from clawgym.run.runner import RunEvents, execute
from clawgym.run.trial import Trial, write_outcome
from clawgym.compile.compiler import compile_task, load_task_spec


def _trials(lib, n):
    spec = load_task_spec(lib / "specs" / "good.yaml")
    return [Trial(compile_task(spec, seed), {"type": "nop"}) for seed in range(n)]


@pytest.mark.parametrize("processes", [1, 2])
def test_the_next_trial_starts_while_the_last_ones_files_are_written(lib, monkeypatch, processes):
    """With one trial in flight and slow writes, each trial starts before the one before it is
    written; a trial is reported only once its record.json exists; the run returns after every write."""

    def slow_write(trial_dir, outcome):
        time.sleep(0.5)
        write_outcome(trial_dir, outcome)
        return outcome

    monkeypatch.setattr(writer_mod, "_write", slow_write)  # worker processes are forked after this
    out = lib / "out"
    trials = _trials(lib, 3)
    written_at_start: list[bool] = []
    reported: list[bool] = []

    def on_start(trial_id):
        index = [t.id for t in trials].index(trial_id)
        if index:
            written_at_start.append((out / "trials" / trials[index - 1].id / "record.json").exists())

    def on_result(record):
        reported.append((out / "trials" / record.trial_id / "record.json").exists())

    plan = RunPlan(
        name="t", trials=trials, out=out, concurrency=1, retries=0, executor={"type": "local", "processes": processes}
    )
    records = execute(plan, events=RunEvents(on_trial_start=on_start, on_result=on_result))
    assert written_at_start == [False, False]  # the slot was free before the files were on disk
    assert reported == [True, True, True]
    for rec in records:
        saved = json.loads((out / "trials" / rec.trial_id / "record.json").read_text())
        assert saved["status"] == rec.status == "failed"


def test_a_failed_write_stops_the_run_with_its_error(lib, monkeypatch):
    def broken(trial_dir, outcome):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_mod, "_write", broken)
    plan = RunPlan(name="t", trials=_trials(lib, 2), out=lib / "out", concurrency=2, retries=0)
    with pytest.raises(OSError, match="No space left"):
        execute(plan)
    assert not list((lib / "out" / "trials").glob("*/record.json"))
