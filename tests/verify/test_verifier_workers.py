"""Reused verifier workers: requests whose checks only read files are answered by long-lived forks
of the verifier server; anything that runs code gets a fresh fork. Both must grade alike, a lost or
killed worker must never cost a grade, and a hanging request must not hold up the next one."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from clawgym import trial_controls as control
from clawgym.checks import reads_only
from clawgym.errors import InfraError
from clawgym.verify import connection
from clawgym.verify.request import VerifyRequest

READING = [
    {"type": "file_exists", "path": "out/answer.txt", "gate": True},
    {"type": "text_contains", "path": "out/answer.txt", "contains": ["42"]},
    {"type": "json_field_equals", "path": "out/data.json", "field": "total", "expected": 3},
    {"type": "unchanged", "paths": ["input/**"]},
    {"type": "csv_rows_equal", "path": "out/rows.csv", "expected": [{"id": "1", "n": "2"}], "key": ["id"]},
]


@pytest.fixture
def fresh_server(monkeypatch):
    """A verifier server started for this test (with the environment the test sets), stopped after."""
    connection._server.close()
    yield monkeypatch
    connection._server.close()


def _ask(request: VerifyRequest, *, reuse: bool, timeout: float = 60) -> tuple[dict, list[int]]:
    pids: list[int] = []
    payload = json.dumps(request.to_wire(), default=str).encode()
    answer = connection.ask(payload, timeout, control.current().token, reuse=reuse, pids=pids)
    return answer, pids


def _workspace(root: Path, variant: int) -> tuple[Path, dict[str, bytes]]:
    """Final workspaces that pass, fail, tamper and attack in different ways (by `variant`)."""
    ws = root / f"ws{variant}"
    (ws / "out").mkdir(parents=True)
    (ws / "input").mkdir()
    original = {"input/a.csv": b"id,n\n1,2\n"}
    (ws / "input" / "a.csv").write_bytes(original["input/a.csv"] if variant % 3 else b"id,n\n1,999\n")
    answers = [b"42\n", b"41\n", b"\xff\xfe not text", b"4" * 200_000 + b"2", b"the answer is 42"]
    (ws / "out" / "answer.txt").write_bytes(answers[variant % len(answers)])
    datas = ['{"total": 3}', '{"total": "3"}', "[" * 5000 + "]" * 5000, '{"total": 3.0000001}', "{nope"]
    (ws / "out" / "data.json").write_text(datas[variant % len(datas)])
    (ws / "out" / "rows.csv").write_text(["id,n\n1,2\n", "id,n\n1,3\n", "n,id\n2,1\n"][variant % 3])
    if variant % 4 == 1:
        (ws / "out" / "escape").symlink_to("/etc/passwd")
    return ws, original


def _results(answer: dict) -> list[tuple]:
    return [(r["name"], r["score"], r["reason"]) for r in answer["results"]]


def test_reading_checks_only_go_to_reused_workers():
    assert reads_only(READING)
    assert not reads_only(READING + [{"type": "python", "script": "grade.py"}])
    assert not reads_only([{"type": "command", "run": "true"}])
    assert not reads_only([{"type": "no_such_check"}]) and not reads_only(["garbage"])


def test_reused_workers_answer_many_requests_and_grade_like_fresh_forks(fresh_server, tmp_path):
    reused_pids: list[int] = []
    for variant in range(12):
        ws, original = _workspace(tmp_path, variant)
        request = VerifyRequest(tuple(READING), ws, original_files=original, diff=True)
        reused, pids = _ask(request, reuse=True)
        fresh, fresh_pids = _ask(request, reuse=False)
        assert _results(reused) == _results(fresh), f"variant {variant}"
        assert reused.get("diff") == fresh.get("diff")
        assert len(pids) == 1 and len(fresh_pids) == 1
        reused_pids += pids
        assert fresh_pids[0] not in reused_pids
    assert len(set(reused_pids)) < len(reused_pids), "a reused worker answered more than one request"


def test_code_running_checks_get_a_fresh_fork_each(fresh_server, tmp_path):
    from clawgym.verify import verify

    ws, original = _workspace(tmp_path, 0)
    task = tmp_path / "task"
    task.mkdir()
    (task / "grade.py").write_text("print('{\"score\": 1}')\n")
    seen: list[int] = []
    real_ask = connection.ask

    def spy(payload, timeout, token, *, reuse=False, pids=None):
        assert not reuse
        out: list[int] = []
        try:
            return real_ask(payload, timeout, token, reuse=reuse, pids=out)
        finally:
            seen.extend(out)

    fresh_server.setattr(connection, "ask", spy)
    for _ in range(3):
        verify(
            [{"type": "file_exists", "path": "out/answer.txt"}, {"type": "python", "script": "grade.py"}],
            workspace=ws,
            task_dir=task,
            params={},
            original_files=original,
        )
    assert len(set(seen)) == 3


def test_a_worker_killed_between_requests_costs_no_grade(fresh_server, tmp_path):
    ws, original = _workspace(tmp_path, 0)
    request = VerifyRequest(tuple(READING), ws, original_files=original)
    expected, pids = _ask(request, reuse=True)
    for _ in range(5):
        os.kill(pids[-1], signal.SIGKILL)
        time.sleep(0.05)
        answer, pids = _ask(request, reuse=True)
        assert _results(answer) == _results(expected)


def test_workers_are_replaced_after_their_reuses_without_losing_a_request(fresh_server, tmp_path):
    fresh_server.setenv("CLAWGYM_VERIFIER_REUSES", "3")
    fresh_server.setenv("CLAWGYM_VERIFIER_WORKERS", "1")
    ws, original = _workspace(tmp_path, 1)
    request = VerifyRequest(tuple(READING), ws, original_files=original)
    seen = []
    for _ in range(10):
        _, pids = _ask(request, reuse=True)
        assert len(pids) == 1, "the request was lost by a retiring worker and asked again"
        seen += pids
    assert len(set(seen)) >= 4
    assert all(seen.count(pid) <= 3 for pid in seen)


def test_a_hanging_request_times_out_and_the_next_one_is_graded(fresh_server, tmp_path):
    """A catastrophic regex on agent-written text: the worker is killed, the next request is answered."""
    fresh_server.setenv("CLAWGYM_VERIFIER_WORKERS", "1")
    ws, original = _workspace(tmp_path, 0)
    (ws / "out" / "answer.txt").write_text("a" * 64 + "!")
    hang = VerifyRequest(
        ({"type": "text_matches", "path": "out/answer.txt", "pattern": "^(a+)+$"},), ws, original_files=original
    )
    t0 = time.monotonic()
    try:
        answer, _ = _ask(hang, reuse=True, timeout=3)
        assert answer["results"][0]["score"] == 0  # the check's own time limit caught it
    except InfraError as e:
        assert "timed out" in str(e)
    assert time.monotonic() - t0 < 15
    answer, _ = _ask(VerifyRequest(tuple(READING), ws, original_files=original), reuse=True)
    assert len(answer["results"]) == len(READING)


def test_cancelling_a_trial_stops_its_verification_wait(fresh_server, tmp_path):
    """Cancellation wakes the waiting client at once (no polling) and ends the verifier."""
    import threading

    fresh_server.setenv("CLAWGYM_VERIFIER_WORKERS", "1")
    ws, original = _workspace(tmp_path, 0)
    (ws / "out" / "answer.txt").write_text("a" * 64 + "!")
    hang = VerifyRequest(
        ({"type": "text_matches", "path": "out/answer.txt", "pattern": "^(a+)+$"},), ws, original_files=original
    )
    controls = control.Controls()
    threading.Timer(1.0, controls.token.cancel, args=("stop",)).start()
    t0 = time.monotonic()
    with control.use(controls), pytest.raises(control.TrialCancelled):
        _ask(hang, reuse=True, timeout=60)
    assert time.monotonic() - t0 < 5


def test_cpu_turns_are_left_by_a_cancelled_trial():
    """A trial waiting for one of the process's CPU turns stops waiting once cancelled."""
    import threading

    held = [control.cpu_turn() for _ in range(control.cpu_turn_count())]
    for turn in held:
        turn.__enter__()
    try:
        controls = control.Controls()
        threading.Timer(0.3, controls.token.cancel, args=("stop",)).start()
        t0 = time.monotonic()
        with control.use(controls), pytest.raises(control.TrialCancelled):
            with control.cpu_turn():
                pass
        assert time.monotonic() - t0 < 3
    finally:
        for turn in held:
            turn.__exit__(None, None, None)
    with control.cpu_turn():
        pass


def test_pristine_files_in_memory_grade_like_a_pristine_folder(tmp_path):
    """The verifier keeps a task's pristine files in memory; every reading check and a grading script
    (which needs them as a folder) must see the same original as from a written copy."""
    from clawgym.compile.workspace import write_files
    from clawgym.verify import verify

    original = {"input/a.csv": b"id,n\n1,2\n", "input/b.txt": b"keep\n", "notes/x.md": b"# X\n", "run.sh": b"echo\n"}
    folder = tmp_path / "original"
    write_files(original, {"run.sh"}, folder)
    task = tmp_path / "task"
    task.mkdir()
    (task / "grade.py").write_text(
        "import json, os, pathlib\n"
        "o = pathlib.Path(os.environ['CLAWGYM_ORIGINAL'])\n"
        "ok = (o / 'input/a.csv').read_bytes() == b'id,n\\n1,2\\n' and os.access(o / 'run.sh', os.X_OK)\n"
        "print(json.dumps({'score': 1 if ok else 0}))\n"
    )
    checks = [
        {"type": "unchanged", "paths": ["input/**"], "partial": True},
        {"type": "unchanged", "paths": ["notes"]},
        {"type": "unchanged", "paths": ["nothing/**"]},
        {"type": "file_exists", "path": "input/b.txt"},
        {"type": "python", "script": "grade.py"},
    ]
    changes = [
        lambda ws: None,
        lambda ws: (ws / "input" / "a.csv").write_text("id,n\n1,3\n"),
        lambda ws: (ws / "input" / "b.txt").unlink(),
        lambda ws: ((ws / "input" / "b.txt").unlink(), (ws / "input" / "b.txt").symlink_to("a.csv")),
        lambda ws: ((ws / "input" / "b.txt").unlink(), (ws / "input" / "b.txt").mkdir()),
        lambda ws: (ws / "input" / "new.csv").write_text("x"),
        lambda ws: (ws / "input" / "a.csv").write_text("id,n\n1,2\n\n"),
        lambda ws: ((ws / "notes" / "x.md").unlink(), (ws / "notes" / "x.md").symlink_to("/etc/passwd")),
    ]
    for i, change in enumerate(changes):
        ws = tmp_path / f"ws{i}"
        write_files(original, {"run.sh"}, ws)
        change(ws)
        from_folder = verify(checks, workspace=ws, original=folder, task_dir=task, params={}, diff=True)
        from_memory = verify(
            checks, workspace=ws, original_files=original, executables=["run.sh"], task_dir=task, params={}, diff=True
        )
        assert [(r.name, r.score, r.reason) for r in from_memory.results] == [
            (r.name, r.score, r.reason) for r in from_folder.results
        ], f"change {i}"
        assert from_memory.workspace_diff == from_folder.workspace_diff
    assert from_memory.results[-1].score == 1  # the grading script saw the written pristine folder
