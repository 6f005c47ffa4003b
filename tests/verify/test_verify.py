"""Combining results into a Verdict, and verification in a fresh worker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clawgym.registry import _REGISTRY

from clawgym.checks import Check, CheckContext, CheckResult
from clawgym.errors import InfraError, PrerequisiteError
from clawgym.registry import register
from clawgym.verify import Verdict, combine, run_checks, verify
from clawgym.verify.worker import handle

ROOT = Path(__file__).resolve().parents[2]


def res(score, weight=1.0, gate=False, name=None):
    return CheckResult(name=name or f"c{score}", type="t", score=score, weight=weight, gate=gate, reason="")


# -- combine --------------------------------------------------------------------------------------


def test_combine_weighted_mean():
    v = combine([res(1.0, 3), res(0.0, 1)])
    assert v.reward == pytest.approx(0.75) and not v.passed and v.gate_failed is None
    assert combine([res(1.0, 3), res(0.0, 1)], pass_threshold=0.7).passed
    assert combine([res(1.0), res(1.0, 0)]).passed


def test_combine_gates():
    v = combine([res(1.0), res(0.5, gate=True, name="must")])
    assert v.reward == 0 and not v.passed and v.gate_failed == "must"
    v = combine([res(0.5), res(1.0, gate=True, name="must")])
    assert v.reward == 0.75 and v.gate_failed is None  # a passed gate still counts in the mean
    v = combine([res(1.0, gate=True, name="a"), res(0.0, weight=0, gate=True, name="b")])
    assert v.gate_failed == "b" and v.reward == 0


def test_combine_edge_cases():
    v = combine([])
    assert v.reward == 0 and not v.passed and v.error
    assert combine([res(1.0, 0), res(0.0, 0)]).reward == 0.5  # all-zero weights: plain mean
    assert combine([res(float("nan")), res(1.0)]).reward == 0.5
    assert combine([res(7.0), res(-2.0)]).reward == 0.5  # scores clamped
    assert combine([res(1.0, float("inf")), res(1.0)]).reward == 1.0
    v = combine([res(1 - 1e-12)])
    assert v.passed and v.results[0].passed


def test_round_trips():
    r = CheckResult("n", "csv_rows_equal", 0.5, 2.0, True, "why", {"k": [1]})
    assert CheckResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    assert r.to_dict()["passed"] is False
    v = combine([r, res(1.0)])
    assert Verdict.from_dict(json.loads(json.dumps(v.to_dict()))) == v


# -- run_checks in process ------------------------------------------------------------------------


class _Raises(Check):
    """Raises whatever `error` names."""

    type = "test_raises"
    schema = {"type": "object", "properties": {"error": {"type": "string", "description": "What to raise."}}}

    def run(self, ctx):
        kind = self.get("error")
        if kind == "infra":
            raise InfraError("sandbox died")
        if kind == "prereq":
            raise PrerequisiteError("bwrap missing")
        if kind == "print":
            print("noise on stdout")
            return 1.0, "printed"
        raise KeyError("boom")


@pytest.fixture(autouse=True)
def _raises_check_registered():
    """Register the test-only check for this module's tests only (the reference docs list the rest)."""
    register("check", "test_raises")(_Raises)
    yield
    _REGISTRY["check"].pop("test_raises", None)


@pytest.fixture
def folders(tmp_path):
    work, orig, task = tmp_path / "work", tmp_path / "orig", tmp_path / "task"
    for d in (work, orig, task):
        d.mkdir()
    return work, orig, task


def test_raising_check_scores_zero_and_others_still_run(folders):
    work, orig, task = folders
    ctx = CheckContext(work, orig, task, {})
    out = run_checks([{"type": "test_raises"}, {"type": "file_absent", "path": "x"}, "garbage"], ctx)
    assert out[0].score == 0 and out[0].reason == "check raised KeyError: 'boom'"
    assert out[1].passed and out[2].score == 0
    with pytest.raises(InfraError):
        run_checks([{"type": "test_raises", "error": "infra"}], ctx)
    assert handle(
        {"checks": [{"type": "test_raises", "error": "prereq"}], "workspace": str(work), "original": str(orig)}
    ) == {"error": "bwrap missing", "kind": "prerequisite"}


def test_executing_checks_after_a_failed_gate_are_not_run(folders):
    work, orig, _ = folders
    (work / "marker").write_text("x")
    checks = [
        {"type": "command", "run": "touch ran-before"},
        {"type": "file_exists", "path": "report.md", "gate": True, "name": "report written"},
        {"type": "command", "run": "touch ran-after"},
        {"type": "file_exists", "path": "marker"},
    ]
    out = run_checks(checks, CheckContext(work, orig, None, {}))
    # cheap checks run first; a failed gate stops the commands, before or after it in the spec
    assert [r.score for r in out] == [0.0, 0.0, 0.0, 1.0]
    assert [r.name for r in out][1:] == ["report written", "command touch ran-after", "file_exists marker"]
    assert out[0].reason == out[2].reason == "not run: the gate 'report written' failed, so the reward is 0 either way"
    assert not (work / "ran-before").exists() and combine(out).reward == 0
    (work / "report.md").write_text("done")
    out = run_checks(checks, CheckContext(work, orig, None, {}))
    assert [r.score for r in out] == [1.0, 1.0, 1.0, 1.0]


def test_duplicate_names_are_made_unique(folders):
    work, orig, _ = folders
    out = run_checks([{"type": "file_absent", "path": "x"}] * 2, CheckContext(work, orig, None, {}))
    assert [r.name for r in out] == ["file_absent x", "file_absent x #2"]


# -- verify in a fresh process --------------------------------------------------------------------


def _setup_task(work: Path, orig: Path, task: Path) -> None:
    for base in (work, orig):
        (base / "input").mkdir()
        (base / "input/invoices.csv").write_text(
            "invoice,amount,due\nINV-001,10,2024-01-01\nINV-003,120.5,2024-02-01\n"
        )
        (base / "input/notes.txt").write_text("keep me\n")
    (work / "out").mkdir()
    (work / "out/overdue.csv").write_text("invoice,amount\nINV-003,120.50\n")
    (work / "out/summary.json").write_text('{"total": 120.5, "count": 1}')
    (task / "grade.py").write_text(
        textwrap.dedent("""\
        import json, os, sys
        print("some chatter first")
        mode = sys.argv[1]
        if mode == "float":
            print(0.75)
        elif mode == "object":
            print(json.dumps({"score": 0.5, "checks": [{"name": "a", "score": 1, "reason": "ok"},
                                                       {"name": "b", "score": 0, "reason": "no"}]}))
        elif mode == "named":
            print(json.dumps({"x": 1, "y": 0.5}))
        elif mode == "exit":
            sys.exit(int(os.environ["CLAWGYM_PARAMS"] != '{"n": 1}'))
        elif mode == "sleep":
            import time; time.sleep(60)
    """)
    )


CHECKS = [
    {"type": "file_exists", "path": "out/overdue.csv", "gate": True},
    {
        "type": "csv_rows_equal",
        "path": "out/overdue.csv",
        "expected": [{"invoice": "INV-003", "amount": 120.5}],
        "key": "invoice",
        "tolerance": {"abs": 0.01},
        "weight": 3,
    },
    {"type": "unchanged", "paths": ["input/**"]},
    {"type": "json_field_equals", "path": "out/summary.json", "fields": {"total": 120.5, "count": 1}},
]


def test_verify_end_to_end(folders):
    work, orig, task = folders
    _setup_task(work, orig, task)
    v = verify(CHECKS, workspace=work, original=orig, task_dir=task, params={"n": 1})
    assert v.passed and v.reward == 1.0, [r.reason for r in v.results]
    assert [r.name for r in v.results][:2] == ["file_exists out/overdue.csv", "csv_rows_equal out/overdue.csv"]


def test_verify_catches_edited_and_deleted_inputs(folders):
    work, orig, task = folders
    _setup_task(work, orig, task)
    (work / "input/invoices.csv").write_text("invoice,amount\n")
    (work / "input/notes.txt").unlink()
    v = verify(CHECKS, workspace=work, original=orig, task_dir=task, params={})
    unchanged = v.results[2]
    assert unchanged.score == 0 and "input/invoices.csv (modified)" in unchanged.reason
    assert "input/notes.txt (deleted)" in unchanged.reason
    assert v.reward == 1.0  # `unchanged` weighs 0 by default: leaving inputs alone earns nothing ...
    gated = [dict(c, gate=True) if c["type"] == "unchanged" else c for c in CHECKS]
    v = verify(gated, workspace=work, original=orig, task_dir=task, params={})
    assert v.reward == 0 and not v.passed  # ... and as a gate, breaking them costs everything
    assert v.gate_failed.startswith("unchanged")


def test_verify_gate_and_weights(folders):
    work, orig, task = folders
    _setup_task(work, orig, task)
    (work / "out/overdue.csv").unlink()
    v = verify(CHECKS, workspace=work, original=orig, task_dir=task, params={})
    assert v.reward == 0 and v.gate_failed == "file_exists out/overdue.csv"
    assert v.results[1].reason == "file not found: out/overdue.csv"


def test_verify_survives_raising_and_hostile_checks(folders):
    work, orig, task = folders
    _setup_task(work, orig, task)
    os.symlink("/etc/passwd", work / "out/leak.txt")
    checks = [
        {"type": "numeric_close", "path": "out/summary.json", "field": "total", "expected": 120.5, "abs": "x"},
        {"type": "text_contains", "path": "out/leak.txt", "contains": "root"},
        {"type": "no_such_check"},
        {"type": "file_exists", "path": "out/summary.json"},
    ]
    v = verify(checks, workspace=work, original=orig, task_dir=task, params={})
    assert [r.score for r in v.results] == [0, 0, 0, 1]
    assert "ValueError" in v.results[0].reason
    assert "outside the workspace" in v.results[1].reason
    assert "unknown check type 'no_such_check'" in v.results[2].reason
    assert v.reward == 0  # the one passed check only found a file, which earns nothing


@pytest.mark.parametrize(
    "mode,score,subs",
    [("float", 0.75, None), ("object", 0.5, ["a", "b"]), ("named", 0.75, ["x", "y"]), ("exit", 1.0, None)],
)
def test_verify_python_protocols(folders, mode, score, subs):
    work, orig, task = folders
    _setup_task(work, orig, task)
    v = verify(
        [{"type": "python", "script": "grade.py", "args": [mode]}],
        workspace=work,
        original=orig,
        task_dir=task,
        params={"n": 1},
    )
    r = v.results[0]
    assert r.score == pytest.approx(score) and v.reward == pytest.approx(score)
    got = [s["name"] for s in r.details.get("subscores", [])] or None
    assert got == subs
    if subs:
        assert r.details["subscores"][0]["score"] == 1


def test_grader_past_the_verify_budget_is_a_failed_grade(folders):
    """A grader that hangs (graders run agent code: the agent can make one) scores 0 in time."""
    work, orig, task = folders
    _setup_task(work, orig, task)
    t0 = time.monotonic()
    v = verify(
        [{"type": "python", "script": "grade.py", "args": ["sleep"]}],
        workspace=work,
        original=orig,
        task_dir=task,
        params={},
        timeout=3,
    )
    assert v.reward == 0 and "timed out" in v.results[0].reason
    assert time.monotonic() - t0 < 20


def test_verifier_timeout_is_infra_error(folders):
    """Our own machinery running past its time is an infrastructure error (here: a budget that ignores it)."""
    from clawgym import trial_controls as control
    from clawgym.verify.connection import ask

    work, orig, task = folders
    _setup_task(work, orig, task)
    request = {
        "checks": [{"type": "python", "script": "grade.py", "args": ["sleep"]}],
        "workspace": str(work),
        "original": str(orig),
        "task_dir": str(task),
        "params": {},
        "budget_s": 600,
    }
    t0 = time.monotonic()
    with pytest.raises(InfraError, match="timed out"):
        ask(json.dumps(request).encode(), 3, control.current().token)
    assert time.monotonic() - t0 < 20


def test_verify_missing_workspace_is_infra_error(folders, tmp_path):
    work, orig, task = folders
    with pytest.raises(InfraError, match="does not exist"):
        verify(CHECKS, workspace=tmp_path / "gone", original=orig, task_dir=task, params={})


def test_worker_protocol_and_lean_imports(folders):
    work, orig, _ = folders
    (work / "a.txt").write_text("hi")
    code = textwrap.dedent(f"""\
        import sys, io, json
        sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps({{"checks": [{{"type": "file_exists", "path": "a.txt"}}],
            "workspace": {str(work)!r}, "original": {str(orig)!r}}}).encode()))
        from clawgym.verify import worker as verify_worker
        ans = verify_worker.handle(json.loads(sys.stdin.read()))
        sys.stderr.write(json.dumps([ans["results"][0]["score"],
            sorted(m for m in sys.modules if m.startswith(("clawgym.builtin_plugins", "clawgym.generators",
                                                          "clawgym.agent", "clawgym.sandbox", "jsonschema")))]))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    score, loaded = json.loads(p.stderr.strip().splitlines()[-1])
    assert score == 1.0 and loaded == []
    # the real entry point: JSON in, JSON out, nothing else on stdout
    req = {"checks": [{"type": "file_exists", "path": "a.txt"}], "workspace": str(work), "original": str(orig)}
    p = subprocess.run(
        [sys.executable, "-m", "clawgym.verify.worker"],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0 and json.loads(p.stdout)["results"][0]["passed"] is True
    p = subprocess.run(
        [sys.executable, "-m", "clawgym.verify.worker"],
        input="not json",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 1 and json.loads(p.stdout)["kind"] == "infra"


def test_stray_prints_do_not_corrupt_worker_answer(folders):
    work, orig, _ = folders
    code = textwrap.dedent("""\
        import os, sys
        from clawgym.checks import Check
        from clawgym.registry import register

        @register("check", "noisy")
        class Noisy(Check):
            \"\"\"Prints from Python and from a child process.\"\"\"
            type = "noisy"
            schema = {"type": "object", "properties": {}}
            def run(self, ctx):
                print("python noise")
                os.system("echo child noise")
                return 1.0, "ok"

        from clawgym.verify.worker import main
        sys.exit(main())
    """)
    req = {"checks": [{"type": "noisy"}], "workspace": str(work), "original": str(orig)}
    p = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert json.loads(p.stdout)["results"][0]["score"] == 1.0
    assert "python noise" in p.stderr and "child noise" in p.stderr


def test_verify_command_check_in_worker(folders):
    import shutil

    try:
        import clawgym.sandbox  # noqa: F401
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"clawgym.sandbox not importable yet: {type(e).__name__}")
    if not shutil.which("bwrap"):
        pytest.skip("bubblewrap (bwrap) not installed")
    work, orig, _ = folders
    (work / "run.sh").write_text("echo graded; rm -f run.sh\n")
    try:
        v = verify(
            [
                {"type": "command", "run": "sh run.sh", "output_contains": "graded"},
                {"type": "file_exists", "path": "run.sh"},
            ],
            workspace=work,
            original=orig,
            task_dir=None,
            params={},
        )
    except (InfraError, PrerequisiteError) as e:
        pytest.skip(f"sandbox could not start here: {e}")
    assert v.passed, [r.reason for r in v.results]
