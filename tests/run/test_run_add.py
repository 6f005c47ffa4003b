"""Extending a finished run with new seeds: the hint says how, and `--add` does it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from clawgym.cli.main import main

SPEC = str(Path(__file__).parent.parent / "fixtures" / "authoring" / "dinner-rsvp.yaml")


def _run(*args: str):
    return CliRunner().invoke(main, ["run", SPEC, "--quiet", *args])


def test_more_seeds_into_a_finished_folder(tmp_path, bwrap):
    out = str(tmp_path / "run")
    assert _run("--seeds", "0-1", "--out", out).exit_code == 0
    again = _run("--seeds", "0-3", "--out", out)
    assert again.exit_code == 2
    assert again.stderr.strip() == (
        f"error: results folder {out} already holds 2 finished trials (to add these seeds or agents to it, run "
        f"the same command with --add; 'clawgym run --resume {out}' only finishes the trials it was started "
        "with; or choose another --out)"
    )
    added = _run("--seeds", "0-3", "--agent", "nop", "--out", out, "--add")
    assert added.exit_code == 0, added.output
    assert "resuming: 0 of 8 trials already finished" not in added.output
    records = [json.loads(p.read_text()) for p in (tmp_path / "run" / "trials").glob("*/record.json")]
    assert sorted((r["agent"]["type"], r["task"]["seed"]) for r in records) == sorted(
        [("oracle", s) for s in range(4)] + [("nop", s) for s in range(4)]
    )
    source = json.loads((tmp_path / "run" / "run.json").read_text())["source"]
    assert source["seeds"] == [0, 1, 2, 3]
    resumed = CliRunner().invoke(main, ["run", "--resume", out, "--quiet"])
    assert "resuming: 8 of 8 trials already finished" in resumed.output
