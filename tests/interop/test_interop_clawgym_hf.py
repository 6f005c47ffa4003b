"""`clawgym import clawgym-hf`: the published source rows (JSONL) become ordinary task specs, graded
exactly as the published reward.sh grades them, with the rule as a hybrid rubric."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.interop.clawgym_hf import front_matter, rubric_of
from clawgym.run.trial import Trial, execute_trial

CHECK = """import json, os, sys

def grade(transcript, workspace_path):
    ws = workspace_path
    rows = [r.split(",") for r in open(os.path.join(ws, "input", "sales.csv")).read().split()[1:]]
    total = sum(int(r[1]) for r in rows)
    path = os.path.join(ws, "output", "total.txt")
    got = open(path).read().strip() if os.path.exists(path) else ""
    return {"reward": float(got == str(total)), "total_file_exists": os.path.exists(path),
            "total_correct": got == str(total)}

if __name__ == "__main__":
    print(json.dumps(grade(None, sys.argv[1]), indent=2))
"""

TEMPLATE = """---
category: Analysis & Reasoning
subcategory: bookkeeping
persona:
  name: Dana Whitfield
  role: Bookkeeper at a neighbourhood bakery
---
# Weekly sales total

Ask for the week's total from the till export.
"""


def _rows() -> list[dict]:
    good = {
        "prompt": "Hey, can you add up the amounts in input/sales.csv and put the total in output/total.txt? "
        "Don't modify anything under input/.",
        "hook_code": CHECK,
        "input_files": [
            {"file_path": "input/sales.csv", "content": "region,amount\nnorth,10\nsouth,32\n"},
            {"file_path": "/root/.openclaw/workspace/input/README.md", "content": "Till export.\n"},
        ],
        "rule": "1. The reply states the total in one sentence\n2. It names the file it wrote",
        "origin_template": TEMPLATE,
    }
    grader_in_files = {
        "prompt": "Summarise notes/week.md into output/summary.md.",
        "input_files": [
            {"file_path": "notes/week.md", "content": "Mon: bake\n"},
            {
                "file_path": "reward/check.py",
                "content": "import json, os, sys\nws = sys.argv[1]\nprint(json.dumps("
                "{'summary': os.path.exists(os.path.join(ws, 'output/summary.md'))}))\n",
            },
        ],
        "rule": None,
        "origin_template": "# no front matter\n",
    }
    no_grader = {"prompt": "Do something.", "input_files": [], "hook_code": ""}
    escapes = {
        "prompt": "Read it.",
        "hook_code": CHECK,
        "input_files": [{"file_path": "../../etc/passwd", "content": "x"}],
    }
    return [good, grader_in_files, no_grader, escapes]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    rows = root / "syn_task.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in _rows()) + "\n[1, 2]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "clawgym-hf", str(rows), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    return root / "out", result.output


def test_rows_become_tasks_or_clear_rejections(imported):
    out, output = imported
    report = [json.loads(line) for line in (out / "import-report.jsonl").read_text().splitlines()]
    assert [r["status"] for r in report] == ["imported", "imported", "rejected", "rejected", "rejected"]
    assert report[2]["reasons"] == ["no grader: neither input_files under reward/ nor hook_code hold check.py"]
    assert "leaves the workspace" in report[3]["reasons"][0] and report[3]["source"] == "syn_task.jsonl:4"
    assert report[4]["reasons"] == ["a JSON list, expected an object"]
    assert "5 row(s): 2 imported, 0 imported with warnings, 3 rejected" in " ".join(output.split())
    assert "rejected by reason:" in output


def test_rule_front_matter_and_persona(imported, bwrap):
    out, _ = imported
    task = compile_task(load_task_spec(out / "hf-00001" / "task.yaml"), 0)
    assert task.category == "analysis" and task.subcategory == "bookkeeping"
    assert [c["criterion"] for c in task.rubric] == [
        "The reply states the total in one sentence",
        "It names the file it wrote",
    ]
    assert task.rubric_weight == 0.3
    persona = load_task_spec(out / "hf-00001" / "task.yaml").doc.data["persona"]
    assert (out / "personas" / f"{persona}.yaml").read_text().count("Dana Whitfield") == 1
    assert set(task.files) >= {"input/sales.csv", "input/README.md", ".git/HEAD", "BOOTSTRAP.md"}
    assert list(task.checks[0]["restore"]) == [
        "input/README.md",
        "input/sales.csv",
    ]  # "Don't modify anything under input/"


def test_graded_exactly_as_reward_sh(imported, tmp_path, bwrap):
    """A leading `reward` key and booleans average as reward.sh averages them; nop scores 0."""
    out, _ = imported
    task = compile_task(load_task_spec(out / "hf-00001" / "task.yaml"), 0)
    nop = execute_trial(Trial(task, {"type": "nop"}))
    assert nop["status"] == "failed" and nop["reward"] == 0.0
    assert nop["verdict"]["results"][0]["reason"].startswith("reward.sh: mean 0 of 3 sub-scores")
    partial = {"exec": "mkdir -p output && echo 41 > output/total.txt"}  # the file exists: 1 of 3 values true
    right = {"exec": "mkdir -p output && echo 42 > output/total.txt"}
    for steps, reward in (([partial], 1 / 3), ([right], 1.0)):
        rec = execute_trial(Trial(dataclasses.replace(task, solution=tuple(steps)), {"type": "oracle"}))
        assert rec["reward"] == pytest.approx(reward), rec["verdict"]
        names = [r["name"] for r in rec["verdict"]["results"]]
        assert names[:4] == ["reward", "reward: reward", "reward: total_file_exists", "reward: total_correct"]


def test_front_matter_and_rule_parsing():
    assert front_matter("---\ncategory: Content & Domain\n---\nbody") == {"category": "Content & Domain"}
    assert front_matter("no front matter") == {} and front_matter(None) == {}
    assert front_matter("---\n: [bad\n---\n") == {}
    assert rubric_of("- a\n- b\n") == [{"criterion": "a"}, {"criterion": "b"}]
    assert rubric_of("One paragraph that\ngoes on.") == [{"criterion": "One paragraph that"}, {"criterion": "goes on."}]
    assert rubric_of("") == [] and rubric_of(None) == [] and rubric_of(["x", " "]) == [{"criterion": "x"}]


def test_missing_file_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["import", "clawgym-hf", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "does not exist" in result.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = CliRunner().invoke(main, ["import", "clawgym-hf", str(empty), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "holds no rows" in result.output
    shutil.rmtree(tmp_path / "o", ignore_errors=True)
