"""The `python` check's options for graders written for other harnesses: sub-scores, restore,
copy_to, payload and require_score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clawgym.checks.base import CheckContext
from clawgym.verify import combine, run_checks

GRADER = """
import json, os, sys
ws = sys.argv[1]
def read(rel):
    try:
        return open(os.path.join(ws, rel)).read()
    except OSError:
        return ""
rows = read("data/rows.txt").split()
out = read("out/count.txt").strip()
scores = {
    "has_output": 1.0 if out else 0.0,
    "count_right": 1.0 if out == str(len(rows)) else 0.0,
    "reward_dir_placed": 1.0 if os.path.isfile(os.path.join(ws, "reward", "check.py")) else 0.0,
}
print("noise before the score")
print(json.dumps(scores))
"""


@pytest.fixture
def task(tmp_path: Path) -> dict:
    task_dir, ws, orig = tmp_path / "task", tmp_path / "ws", tmp_path / "orig"
    (task_dir / "reward").mkdir(parents=True)
    (task_dir / "reward" / "check.py").write_text(GRADER)
    for folder in (ws, orig):
        (folder / "data").mkdir(parents=True)
        (folder / "data" / "rows.txt").write_text("a\nb\nc\nd\n")
    return {"task_dir": task_dir, "ws": ws, "orig": orig}


def grade(task: dict, **options) -> list:
    trajectory = options.pop("_trajectory", None)
    check = {
        "type": "python",
        "name": "reward",
        "script": "reward/check.py",
        "args": ["${CLAWGYM_WORKSPACE}"],
        "copy_to": "reward",
        **options,
    }
    ctx = CheckContext(
        workspace=task["ws"], original=task["orig"], task_dir=task["task_dir"], params={}, trajectory=trajectory
    )
    return run_checks([check], ctx)


def test_subscores_mean_spreads_results_and_matches_the_unweighted_mean(task):
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("3\n")  # wrong: 4 rows
    results = grade(task, subscores={"aggregate": "mean"})
    assert [(r.name, r.score) for r in results] == [
        ("reward: has_output", 1.0),
        ("reward: count_right", 0.0),
        ("reward: reward_dir_placed", 1.0),
    ]
    assert combine(results).reward == (1.0 + 0.0 + 1.0) / 3


def test_a_check_weighs_what_its_weight_says_however_many_sub_scores_it_prints(task):
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("4")
    results = grade(task, subscores={"aggregate": "mean"}, weight=2)
    assert sum(r.weight for r in results) == pytest.approx(2.0) and len(results) == 3


def test_without_subscores_the_check_stays_one_result(task):
    results = grade(task)
    assert len(results) == 1 and results[0].details["subscores"][0]["name"] == "has_output"


def test_weighted_subscores_and_gates(task):
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("4")
    results = grade(task, subscores={"aggregate": "weighted", "weights": {"count_right": 3, "has_output": 0}})
    # the sub-scores share the check's weight (1) in proportion to their weights (0, 3, 1)
    assert {r.name: r.weight for r in results} == {
        "reward: has_output": 0.0,
        "reward: count_right": 0.75,
        "reward: reward_dir_placed": 0.25,
    }
    assert combine(results).reward == 1.0
    (task["ws"] / "out" / "count.txt").write_text("5")
    verdict = combine(grade(task, subscores={"aggregate": "mean", "gates": ["count_right"]}))
    assert verdict.reward == 0.0 and verdict.gate_failed == "reward: count_right"
    verdict = combine(grade(task, subscores={"gates": ["not_printed"]}))
    assert verdict.gate_failed == "reward: not_printed"
    assert verdict.results[-1].reason == "gate sub-score missing from the script's output"


def test_restore_puts_pristine_inputs_back_before_grading(task):
    # the agent truncates the input and writes an output consistent with the truncation
    (task["ws"] / "data" / "rows.txt").write_text("a\nb\n")
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("2")
    fooled = combine(grade(task, subscores={"aggregate": "mean"}))
    assert fooled.reward == 1.0
    results = grade(task, subscores={"aggregate": "mean"}, restore=["data/*.txt"])
    assert combine(results).reward == pytest.approx(2 / 3)
    assert results[0].details["restored"] == ["data/rows.txt"]
    # the real workspace is never touched
    assert (task["ws"] / "data" / "rows.txt").read_text() == "a\nb\n"


def test_restore_brings_back_a_deleted_input_and_replaces_a_folder_in_its_place(task):
    (task["ws"] / "data" / "rows.txt").unlink()
    (task["ws"] / "data" / "rows.txt").mkdir()
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("4")
    assert combine(grade(task, subscores={}, restore=["data"])).reward == 1.0


def test_copy_to_replaces_what_the_agent_put_at_that_path(task):
    (task["ws"] / "reward").mkdir()
    (task["ws"] / "reward" / "check.py").write_text('print(\'{"has_output": 1, "count_right": 1}\')')
    (task["ws"] / "out").mkdir()
    (task["ws"] / "out" / "count.txt").write_text("1")
    results = grade(task, subscores={})
    assert [r.score for r in results] == [1.0, 0.0, 1.0]


def test_require_score_makes_silence_score_zero(task):
    (task["task_dir"] / "reward" / "check.py").write_text("print('all good')")
    assert grade(task)[0].score == 1.0  # the plain protocol: exit status 0 passes
    result = grade(task, require_score=True)[0]
    assert result.score == 0.0 and result.reason == "script printed no score (last line: 'all good')"


def test_payload_carries_the_final_message(task):
    (task["task_dir"] / "reward" / "check.py").write_text(
        "import json, os\n"
        "p = os.environ.get('OPENCLAW_REWARD_PAYLOAD')\n"
        "d = json.load(open(p)) if p else {}\n"
        "print(json.dumps({'answered': 1.0 if '42' in d.get('final_message', '') else 0.0,\n"
        "                  'has_query': 1.0 if d.get('user_query') == 'q?' else 0.0,\n"
        "                  'transcript': 1.0 if len(d.get('transcript', [])) == 2 else 0.0}))\n"
    )
    trajectory = {
        "final_message": "It is 42.",
        "messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "It is 42."}],
    }
    results = grade(
        task, subscores={}, payload={"task_id": "t1", "user_query": "q?", "metadata": {}}, _trajectory=trajectory
    )
    assert [r.score for r in results] == [1.0, 1.0, 1.0]
    results = grade(task, subscores={})  # no payload configured: the grader sees no file
    assert [r.score for r in results] == [0.0, 0.0, 0.0]


def test_args_name_the_workspace_copy_not_the_real_workspace(task):
    (task["task_dir"] / "reward" / "check.py").write_text(
        "import json, os, sys\nprint(json.dumps({'copy': 1.0 if sys.argv[1] == os.getcwd() and "
        f"sys.argv[1] != {json.dumps(str(task['ws']))} else 0.0}}))\n"
    )
    assert grade(task)[0].score == 1.0
