"""`clawgym diff` for review: the spec's own change next to its rendered effect on a few seeds,
only changed specs compiled, and a markdown pull-request comment. Runs on a git repository made
here from the authoring fixture (a persona, generated and templated inputs, seven checks)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = "specs/dinner-rsvp.yaml"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    (root / "specs").mkdir(parents=True)
    (root / "personas").mkdir()
    shutil.copy(ROOT / "personas" / "family-organizer.yaml", root / "personas")
    shutil.copytree(ROOT / "skills" / "csv", root / "skills" / "csv")
    shutil.copytree(ROOT / "workspaces" / "family-hub", root / "workspaces" / "family-hub")
    shutil.copy(ROOT / "tests" / "fixtures" / "authoring" / "dinner-rsvp.yaml", root / SPEC)
    other = (root / SPEC).read_text().replace("name: dinner-rsvp", "name: other-task")
    (root / "specs" / "other.yaml").write_text(other)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    monkeypatch.chdir(root)
    (root / SPEC).write_text(
        (root / SPEC).read_text().replace("n_guests: {int: [12, 20]}", "n_guests: {int: [20, 40]}")
    )
    return root


def test_text_shows_the_params_change_and_its_effect_per_seed(repo):
    res = CliRunner().invoke(main, ["diff", "HEAD"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert (
        "0 added, 3 changed, 0 removed, 0 unchanged since HEAD (seeds 0, 1, 2); 1 spec file not affected, not compiled"
    ) in out
    assert "specs/dinner-rsvp.yaml (changed: params)" in out
    assert "-    int: [12, 20]\n+    int: [20, 40]" in out
    effects = [line.strip() for line in out.splitlines() if line.startswith("  dinner-rsvp@")]
    assert len(effects) == 3
    for line in effects:
        assert "params n_guests " in line and "files changed: dinner/guests.csv (" in line
    # the rendered effect: the expected rows grew with the guest list
    old, new = (int(x) for x in effects[0].split("params n_guests ")[1].split(";")[0].split(" → "))
    assert 12 <= old <= 20 and 20 <= new <= 40
    assert f"dinner/guests.csv ({old + 1} → {new + 1} lines)" in effects[0]


def test_markdown_is_a_pull_request_comment(repo):
    res = CliRunner().invoke(main, ["diff", "HEAD", "--format", "markdown"])
    assert res.exit_code == 0, res.output
    md = res.output
    assert md.startswith("## Task changes\n\n0 added, 3 changed")
    assert "### `specs/dinner-rsvp.yaml` (changed)\n\nSpec change (params):\n\n```diff\n" in md
    assert "| instance | effect |\n|---|---|\n| `dinner-rsvp@0` | params n_guests" in md
    assert md.count("<details>") == 3 and md.count("```diff") == 4
    assert "other" not in md.split("(seeds 0, 1, 2)")[1].split("\n", 1)[1]  # the unchanged spec is left out


def test_json_and_only_changed_specs_compiled(repo):
    data = json.loads(CliRunner().invoke(main, ["diff", "HEAD", "--format", "json", "--seeds", "0"]).output)
    assert data["not_compiled"] == 1 and data["compiled_all"] is None
    assert data["specs"][0]["sections"] == ["params"]
    assert data["changed"][0]["params"]["n_guests"][0] != data["changed"][0]["params"]["n_guests"][1]
    # a persona change can affect every spec: then all are compiled, and it says why
    persona = repo / "personas" / "family-organizer.yaml"
    persona.write_text(persona.read_text().replace("Leah Brennan", "Lea Brennan"))
    data = json.loads(CliRunner().invoke(main, ["diff", "HEAD", "--format", "json", "--seeds", "0"]).output)
    assert data["compiled_all"] == "personas/family-organizer.yaml changed, which any spec may use"
    assert len(data["changed"]) + data["unchanged"] == 2 and data["not_compiled"] == 0


def test_the_ci_example_posts_the_markdown():
    workflow = (ROOT / "examples" / "ci" / "clawgym-diff.yml").read_text()
    import yaml

    doc = yaml.safe_load(workflow)
    steps = doc["jobs"]["diff"]["steps"]
    run = "\n".join(s.get("run", "") for s in steps)
    assert "clawgym diff" in run and "--format markdown" in run and "gh pr comment" in run
    assert doc["permissions"]["pull-requests"] == "write"
