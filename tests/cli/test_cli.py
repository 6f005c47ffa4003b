"""The render, report and docs commands as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from clawgym.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "tasks" / "productivity" / "invoice-followup.yaml")


def test_render_shows_one_instance_and_writes_its_workspace(tmp_path):
    result = CliRunner().invoke(main, ["render", SPEC, "--seed", "7", "--out", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.stderr
    assert "invoice-followup seed 7" in result.output and "input/invoices.csv" in result.output
    assert (tmp_path / "ws" / "input" / "invoices.csv").is_file()
    assert (tmp_path / "ws" / "USER.md").read_text().startswith("# USER.md")


def test_render_json_is_the_compiled_task():
    a = json.loads(CliRunner().invoke(main, ["render", SPEC, "--seed", "7", "--json"]).output)
    b = json.loads(CliRunner().invoke(main, ["render", SPEC, "--seed", "8", "--json"]).output)
    assert a["seed"] == 7 and a["hash"] != b["hash"] and a["params"] != b["params"]
    assert {"instruction", "files", "checks", "solution"} <= set(a)


def test_run_needs_a_spec_or_resume():
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: give a spec file to run, or --resume RUN_DIR (for example: clawgym run specs/quickstart.yaml)"
    )


def test_report_on_a_folder_without_trials(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "no finished trials" in result.stderr
