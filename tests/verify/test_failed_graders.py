"""Failed graders never pay: whatever a grading process printed (or wrote) counts only if it exited
cleanly within its limits. Real graders of every executing check type run through the verifier
(a fresh verifier process, a grading sandbox each) and fail late in every way: a non-zero exit
after printing, a kill, a timeout after printing, the output cap, a valid score then an exception,
a killed sub-process. Each scores exactly what doing nothing scores, with the reason (the exit
status or signal and the tail of the output), its sub-scores kept with weight 0 and a verdict note."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from clawgym.checks.base import CheckContext
from clawgym.errors import InfraError
from clawgym.verify import Verdict, run_checks, verify

PY_GRADER = """\
import json, os, signal, subprocess, sys, time
ws = os.environ["CLAWGYM_WORKSPACE"]
def read(rel):
    try:
        return open(os.path.join(ws, rel)).read().strip()
    except OSError:
        return ""
answer = read("out/answer.txt")
scores = {"has_answer": float(bool(answer)), "answer_right": float(answer == "42"), "formatted": 0.0}
mode = read("out/crash")  # the agent's file that breaks the grader after it printed
if mode == "early":  # fails before it printed anything
    sys.exit(4)
if mode == "flood":
    sys.stdout.write("x" * (5 << 20) + "\\n")
print(json.dumps(scores), flush=True)
if mode == "exit":
    sys.exit(3)
elif mode == "raise":
    json.loads(read("out/late.json"))  # a later parse of what the agent wrote
elif mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "hang":
    time.sleep(60)
elif mode == "child":
    subprocess.run([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"], check=True)
"""

# mode -> what the reason and the failure flag name
PY_FAILURES = {
    "exit": "exit status 3",
    "raise": "exit status 1",
    "signal": "killed by signal 9 (SIGKILL)",
    "hang": "timed out after 3s",
    "flood": "printed more than 4 MiB",
    "child": "exit status 1",
}
PY_TAILS = {"raise": "JSONDecodeError", "child": "CalledProcessError", "flood": "xxxx"}
SUBS = {"has_answer": 1.0, "answer_right": 1.0, "formatted": 0.0}
AGGREGATES = {  # name -> (check options, the weight the grader is worth: its own, however many it prints)
    "mean": ({"subscores": {"aggregate": "mean"}}, 1.0),
    "weighted": ({"subscores": {"aggregate": "weighted", "weights": {"answer_right": 2, "formatted": 0.5}}}, 1.0),
    "reward.sh": ({"protocol": "reward.sh", "subscores": {"aggregate": "mean"}}, 1.0),
}


@pytest.fixture
def task(tmp_path: Path, bwrap) -> dict:
    task_dir, ws, orig = tmp_path / "task", tmp_path / "ws", tmp_path / "orig"
    for folder in (task_dir, ws / "out", orig):
        folder.mkdir(parents=True)
    (task_dir / "grade.py").write_text(PY_GRADER)
    return {"task_dir": task_dir, "ws": ws, "orig": orig, "tmp": tmp_path}


def graded(task: dict, *checks: dict, ws: Path | None = None):
    return verify(list(checks), workspace=ws or task["ws"], original=task["orig"], task_dir=task["task_dir"], params={})


def nop_reward(task: dict, *checks: dict) -> float:
    empty = task["tmp"] / "nop"
    empty.mkdir(exist_ok=True)
    return graded(task, *checks, ws=empty).reward


def agent_output(task: dict, crash: str = "") -> None:
    (task["ws"] / "out" / "answer.txt").write_text("42\n")
    (task["ws"] / "out" / "late.json").write_text("{not json")
    if crash:
        (task["ws"] / "out" / "crash").write_text(crash)


def python_check(options: dict) -> dict:
    return {"type": "python", "name": "reward", "script": "grade.py", "timeout": 3, **options}


def assert_failed(verdict, why: str, *tails: str, name: str = "reward", reason_why: str | None = None) -> None:
    """The check scored 0, flagged with `why`; its reason names `reason_why` (default `why`) and shows `tails`."""
    head = next(r for r in verdict.results if r.name == name)
    assert head.score == 0 and why in head.grader_failed, head
    assert (reason_why or why) in head.reason and all(t in head.reason for t in tails), head.reason
    assert any(name in n and why in n and "scores 0 whatever it printed" in n for n in verdict.notes), verdict.notes
    assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))).notes == verdict.notes


@pytest.mark.parametrize("aggregate", AGGREGATES)
def test_a_clean_grader_pays_what_it_printed_and_doing_nothing_scores_0(task, aggregate):
    options, _ = AGGREGATES[aggregate]
    check = python_check(options)
    assert nop_reward(task, check) == 0
    agent_output(task)
    verdict = graded(task, check)
    expected = 3 / 3.5 if aggregate == "weighted" else 2 / 3
    assert verdict.reward == pytest.approx(expected) and not verdict.notes
    assert all(r.grader_failed is None for r in verdict.results)


@pytest.mark.parametrize("aggregate", AGGREGATES)
@pytest.mark.parametrize("mode", PY_FAILURES)
def test_a_python_grader_that_fails_after_printing_scores_what_doing_nothing_scores(task, mode, aggregate):
    options, worth = AGGREGATES[aggregate]
    check = python_check(options)
    agent_output(task, crash=mode)
    verdict = graded(task, check)
    assert verdict.reward == 0 == nop_reward(task, check) and not verdict.passed
    assert_failed(verdict, PY_FAILURES[mode], PY_TAILS.get(mode, '"has_answer": 1.0'))
    head, *subs = verdict.results
    if mode == "flood":  # the printed score was lost past the cap: nothing to show, the check's own weight
        assert head.weight == 1 and not subs
        return
    assert head.name == "reward" and head.weight == pytest.approx(worth)  # its own 0 carries the grader's worth
    assert {r.name: (r.score, r.weight, r.gate) for r in subs} == {
        f"reward: {k}": (v, 0.0, False) for k, v in SUBS.items()
    }  # kept for reading, never counted
    assert all("not counted: the grader failed" in r.reason for r in subs)


def test_the_failure_costs_exactly_the_share_the_grader_was_worth(task):
    agent_output(task, crash="exit")
    answer = {"type": "text_matches", "path": "out/answer.txt", "pattern": "^42$", "flags": ["multiline"]}
    checks = [python_check(AGGREGATES["mean"][0]), answer]
    assert graded(task, *checks).reward == pytest.approx(1 / 2)  # the grader's weight (1) of 0, 1 passed check
    (task["ws"] / "out" / "crash").unlink()
    assert graded(task, *checks).reward == pytest.approx((2 / 3 + 1) / 2)
    # a grader that fails before printing anything costs the same share as one that fails after
    (task["ws"] / "out" / "crash").write_text("early")
    assert graded(task, *checks).reward == pytest.approx(1 / 2)


def test_gates_on_the_sub_scores_of_a_failed_grader_count_as_failed(task):
    agent_output(task, crash="exit")
    options = {"subscores": {"aggregate": "weighted", "gates": ["has_answer"]}}
    verdict = graded(task, python_check(options))
    assert verdict.reward == 0 and verdict.gate_failed == "reward"
    assert verdict.results[0].gate and not any(r.gate for r in verdict.results[1:])


def test_without_subscores_the_printed_subscores_stay_in_the_details(task):
    agent_output(task, crash="signal")
    verdict = graded(task, python_check({}))
    (result,) = verdict.results
    assert verdict.reward == 0 and result.weight == 1
    assert [s["name"] for s in result.details["subscores"]] == list(SUBS)
    assert_failed(verdict, "killed by signal 9")


# -- command ---------------------------------------------------------------------------------------

COMMAND_FAILURES = {  # a late failure after printing what output_contains wants
    "echo 42; exit 3": "exit status 3, expected 0",
    "echo 42; kill -9 $$": "exit status 137, expected 0 (128+9: killed by SIGKILL)",
    "echo 42; sh -c 'kill -9 $$'": "exit status 137, expected 0 (128+9: killed by SIGKILL)",
    "echo 42; sleep 30": "timed out after 1s",
    "echo 42; head -c 10000000 /dev/zero | tr '\\0' x": "printed past its output limit",
    "echo 42; head -c 20000000 /dev/zero | tr '\\0' x; echo done": "killed (output limit)",
}


@pytest.mark.parametrize("run", COMMAND_FAILURES)
def test_a_command_that_fails_after_printing_scores_0(task, run):
    check = {"type": "command", "name": "reward", "run": run, "output_contains": ["42"], "timeout": 1}
    verdict = graded(task, check)
    assert verdict.reward == 0 and verdict.results[0].weight == 1
    assert_failed(verdict, COMMAND_FAILURES[run], "last output: ")
    assert verdict.results[0].details["output_tail"]


def test_a_command_scores_its_output_only_when_it_exits_as_expected(task):
    check = {"type": "command", "name": "reward", "expect_exit": [2], "output_contains": ["42", "43"]}
    verdict = graded(task, {**check, "run": "echo 42; exit 2"})
    assert verdict.reward == pytest.approx(2 / 3) and verdict.results[0].grader_failed is None
    verdict = graded(task, {**check, "run": "echo 42; exit 3"})  # 1/3 before: the output counted
    assert verdict.reward == 0
    assert_failed(verdict, "exit status 3, expected 2", "last output: 42")


# -- harbor_tests ----------------------------------------------------------------------------------

HARBOR_WRITE = """echo 1 > /logs/verifier/reward.txt
echo '{"a": 1, "b": 1, "c": 0}' > /logs/verifier/reward.json
echo tests ran
"""
HARBOR_FAILURES = {  # what the verifier does after writing its reward -> (why, the end of its output)
    "exit 1": ("exit status 1", "tests ran"),
    "kill -9 $$": ("exit status 137 (128+9: killed by SIGKILL)", "tests ran"),
    "python3 -c 'import os; os.kill(os.getpid(), 9)'": ("exit status 137 (128+9: killed by SIGKILL)", "tests ran"),
    "sleep 30": ("timed out after 1s", "tests ran"),
    "head -c 20000000 /dev/zero | tr '\\0' x": ("killed (output limit)", "xxxx"),
    "set -e; false; echo unreachable": ("exit status 1", "tests ran"),
}


@pytest.mark.parametrize("tail", HARBOR_FAILURES)
def test_a_harbor_verifier_that_writes_a_reward_then_fails_scores_0(task, tail):
    (task["task_dir"] / "tests").mkdir()
    (task["task_dir"] / "tests" / "test.sh").write_text(HARBOR_WRITE + tail + "\n")
    check = {"type": "harbor_tests", "name": "reward", "script": "tests/test.sh", "timeout": 1}
    verdict = graded(task, check)
    assert verdict.reward == 0
    (result,) = verdict.results
    why, output = HARBOR_FAILURES[tail]
    assert_failed(verdict, why, output, reason_why=why.split(" (128")[0])
    assert result.details["reward_written"] == 1.0
    assert [(s["name"], s["score"]) for s in result.details["subscores"]] == [("a", 1), ("b", 1), ("c", 0)]


# -- pinchbench_grade ------------------------------------------------------------------------------

PB_GRADER = """\
import json, os, signal, subprocess, sys, time
def grade(transcript, workspace_path):
    scores = {"has_answer": 1.0, "answer_right": 1.0, "formatted": 0.0}
    print(json.dumps(scores), flush=True)  # the driver shows a grader's prints as its stderr
    mode = MODE
    if mode == "exit":
        os._exit(3)
    if mode == "raise":
        raise ValueError("late parse broke")
    if mode == "sys.exit":
        sys.exit(0)
    if mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(60)
    if mode == "child":
        subprocess.run([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"], check=True)
    if mode == "after-result":  # killed once the driver wrote its result
        class Killer:
            flushes = 0
            def write(self, text):
                return len(text)
            def flush(self):
                Killer.flushes += 1
                if Killer.flushes > 1:
                    os.kill(os.getpid(), signal.SIGKILL)
        sys.stdout = Killer()
    return scores
"""
PB_FAILURES = {
    "exit": "exit status 3",
    "raise": "grade() raised ValueError: late parse broke",
    "sys.exit": "grade() raised SystemExit",
    "signal": "killed by signal 9 (SIGKILL)",
    "hang": "timed out after 3s",
    "child": "grade() raised CalledProcessError",
    "after-result": "killed by signal 9 (SIGKILL)",
}


@pytest.mark.parametrize("mode", PB_FAILURES)
def test_a_pinchbench_grader_that_fails_scores_0(task, mode):
    (task["task_dir"] / "grade_pb.py").write_text(PB_GRADER.replace("MODE", repr(mode)))
    check = {"type": "pinchbench_grade", "name": "reward", "grader": "grade_pb.py", "timeout": 3}
    verdict = graded(task, check)
    assert verdict.reward == 0
    head, *subs = verdict.results
    assert_failed(verdict, PB_FAILURES[mode], "has_answer" if mode not in ("raise", "sys.exit", "child") else "")
    assert head.weight == 1
    if mode == "after-result":  # its values are shown, with weight 0
        assert {r.name: (r.score, r.weight) for r in subs} == {f"automated.{k}": (v, 0.0) for k, v in SUBS.items()}
    else:
        assert not subs


def test_a_pinchbench_grader_pays_its_mean_when_it_finishes_and_0_when_it_hangs_past_the_budget(task):
    (task["task_dir"] / "grade_pb.py").write_text(PB_GRADER.replace("MODE", "''"))
    verdict = graded(task, {"type": "pinchbench_grade", "name": "reward", "grader": "grade_pb.py"})
    assert verdict.reward == pytest.approx(2 / 3) and verdict.results[0].grader_failed is None
    (task["task_dir"] / "grade_pb.py").write_text(PB_GRADER.replace("MODE", "'hang'"))
    check = {"type": "pinchbench_grade", "name": "reward", "grader": "grade_pb.py"}  # its own timeout: 120 s
    verdict = verify(
        [check], workspace=task["ws"], original=task["orig"], task_dir=task["task_dir"], params={}, timeout=4
    )
    assert verdict.reward == 0 and "timed out" in verdict.results[0].grader_failed  # not a verifier timeout


# -- infrastructure ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        {"type": "python", "script": "grade.py"},
        {"type": "command", "run": "true"},
        {"type": "harbor_tests", "script": "grade.py"},
        {"type": "pinchbench_grade", "grader": "grade.py"},
    ],
)
def test_a_grading_sandbox_that_cannot_start_is_an_infra_error_not_a_verdict(task, check, monkeypatch):
    import clawgym.sandbox

    def cannot_start(*args, **kwargs):
        raise RuntimeError("no namespaces")

    monkeypatch.setattr(clawgym.sandbox, "create_sandbox", cannot_start)
    ctx = CheckContext(workspace=task["ws"], original=task["orig"], task_dir=task["task_dir"], params={})
    with pytest.raises(InfraError, match="could not start a grading sandbox"):
        run_checks([check], ctx)


def test_a_published_task_whose_grader_the_agent_crashes_scores_what_doing_nothing_scores(tmp_path, bwrap):
    """The imported published shape (reward.sh protocol, mean of sub-scores, restore, weight-0 gate)
    through verify_task: an agent that leaves a file breaking a later parse buys nothing."""
    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.interop.clawgym_import import import_one
    from clawgym.interop.library import ensure_library
    from clawgym.verify import verify_task

    folder = tmp_path / "task_0001"
    (folder / "input_files" / "input").mkdir(parents=True)
    (folder / "input_files" / "input" / "data.csv").write_text("a,b\n1,2\n")
    (folder / "reward").mkdir()
    (folder / "reward" / "check.py").write_text(
        textwrap.dedent("""\
        import json, os, sys
        ws = sys.argv[1]
        out = os.path.join(ws, "output", "sum.txt")
        text = open(out).read().strip() if os.path.isfile(out) else ""
        print(json.dumps({"exists": bool(text), "right": text == "2", "notes": False}, indent=2))
        sys.stdout.flush()
        if os.path.isfile(os.path.join(ws, "output", "notes.json")):
            json.load(open(os.path.join(ws, "output", "notes.json")))
        """)
    )
    (folder / "data_entry.json").write_text(
        json.dumps(
            {
                "task_id": "task_0001",
                "user_query": "Sum column b of input/data.csv into output/sum.txt.",
                "input_mount_dir": "/root/.openclaw/workspace",
                "metadata": {"category": "", "grading_type": "automated"},
            }
        )
    )
    out = tmp_path / "out"
    ensure_library(out)
    outcome = import_one(folder, out)
    assert outcome.status in ("imported", "warned") and outcome.nop_score == 0, outcome
    task = compile_task(load_task_spec(out / "task-0001" / "task.yaml"), 0)

    def reward(files: dict[str, str]):
        ws = tmp_path / f"ws{len(files)}"
        from clawgym.compile.workspace import materialize

        materialize(task, ws)
        for rel, text in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        return verify_task(task, ws)

    assert reward({}).reward == 0
    assert reward({"output/sum.txt": "2"}).reward == pytest.approx(2 / 3)
    crashed = reward({"output/sum.txt": "2", "output/notes.json": "{"})
    assert crashed.reward == 0 and crashed.results[0].grader_failed == "exit status 1"
    assert "JSONDecodeError" in crashed.results[0].reason and crashed.notes
    assert [r.weight for r in crashed.results if r.name.startswith("reward: ")] == [0.0, 0.0, 0.0]
