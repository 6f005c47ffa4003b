"""The typed records that cross stages: TrialRecord (old files load, unknown keys survive),
VerifyRequest built from a Task, and the one message layer."""

import json
from pathlib import Path

import pytest

from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.records.messages import arguments_object, chat_messages, fixed_columns
from clawgym.records.trial_record import RECORD_FORMAT, TrialRecord, Usage
from clawgym.verify import VerifyRequest

V1 = {
    "format": "clawgym.trial/v1",
    "trial_id": "t.s0.oracle.a0",
    "task": {"name": "t", "id": "t", "hash": "abc", "seed": 0, "category": "productivity"},
    "agent": {"type": "oracle", "name": "oracle"},
    "attempt": 0,
    "tries": 1,
    "status": "passed",
    "reward": 1.0,
    "verdict": {
        "reward": 1.0,
        "passed": True,
        "gate_failed": None,
        "error": None,
        "results": [
            {
                "name": "out",
                "type": "file_exists",
                "score": 1.0,
                "passed": True,
                "reason": "ok",
                "gate": True,
                "weight": 1.0,
            }
        ],
    },
    "error": None,
    "outcome": "done",
    "note": None,
    "judge": {"model": "m"},
    "a_plugin_key": [1, 2],
    "timings": {"total_s": 0.5},
    "finished_at": 1.0,
}


def test_a_v1_record_loads_typed_and_keeps_what_it_does_not_know():
    rec = TrialRecord.from_dict(V1)
    assert (rec.task_name, rec.seed, rec.category, rec.agent_name, rec.passed, rec.reward) == (
        "t",
        0,
        "productivity",
        "oracle",
        True,
        1.0,
    )
    assert rec.verdict is not None and rec.verdict.checks[0].name == "out" and rec.verdict.checks[0].gate
    assert rec.usage is None and rec.extra == {"judge": {"model": "m"}, "a_plugin_key": [1, 2]}
    out = rec.to_dict()
    assert out["format"] == RECORD_FORMAT
    # the agent's old word for how it ended is written back in the outcome contract's vocabulary
    assert {k: v for k, v in out.items() if k != "format"} == {
        **{k: v for k, v in V1.items() if k != "format"},
        "outcome": "completed",
    }
    assert rec["reward"] == 1.0 and rec.get("judge") == {"model": "m"} and "timings" in rec  # the mapping view


@pytest.mark.parametrize(
    "bad, words",
    [
        (
            {"format": "clawgym.trial/v9", "trial_id": "x", "task": {}, "status": "passed"},
            "not a trial record this version reads",
        ),
        ({"format": "clawgym.trial/v1", "task": {}, "status": "passed"}, "no trial_id"),
        ({"trial_id": "x", "task": {}, "status": "won"}, "status 'won'"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_what_is_not_a_trial_record_is_named(bad, words):
    with pytest.raises(ValueError, match=words) as e:
        TrialRecord.from_dict(bad, where="trials/x/record.json")
    assert str(e.value).startswith("trials/x/record.json: ")


def test_usage_sums_the_turns_and_says_when_nothing_was_reported():
    turns = [{"usage": {"prompt_tokens": 10, "completion_tokens": 3}}, {"usage": {"prompt_tokens": 12}}, {}]
    assert Usage.from_turns(turns) == Usage(3, 22, 3)
    assert Usage.from_turns([{}, {}]) == Usage(2, None, None)


SHIPPED = Path(__file__).resolve().parents[2] / "specs" / "tasks" / "analysis" / "budget-variance.yaml"


def test_a_run_writes_v2_records_with_usage_that_load_back(tmp_path):
    from clawgym.api import read_records, run_spec

    run_spec(SHIPPED, out=tmp_path / "res")
    raw = json.loads(next((tmp_path / "res" / "trials").glob("*/record.json")).read_text())
    assert raw["format"] == "clawgym.trial/v2" and raw["usage"] == {
        "model_calls": 0,
        "prompt_tokens": None,
        "completion_tokens": None,
    }
    (rec,) = read_records(tmp_path / "res").values()
    assert isinstance(rec, TrialRecord) and rec.passed and rec.usage == Usage(0)
    assert rec.verdict is not None and rec.verdict.reward == 1.0 and rec.verdict.checks


def test_a_verify_request_carries_what_the_task_says_about_grading(tmp_path):
    task = compile_task(load_task_spec(SHIPPED), seed=0)
    req = VerifyRequest.for_task(task, tmp_path, diff=True)
    assert req.timeout == float(task.limits.get("verify_seconds", 300)) and req.diff and req.original is None
    assert req.original_files == dict(task.files) and req.mount == task.mount and len(req.checks) == len(task.checks)
    wire = req.to_wire()
    assert set(wire["original_files"]) == set(task.files) and wire["params"] == json.loads(json.dumps(wire["params"]))
    assert json.dumps(wire)  # what is sent to the verifier is plain JSON


def test_one_message_layer_for_the_store_and_the_exporters():
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "read", "arguments": {"p": 1}}}]},
        {"role": "tool", "tool_call_id": "call_0_0", "content": "x"},
    ]
    norm = chat_messages(msgs)
    assert norm[0]["content"] == "hi" and norm[1]["tool_calls"][0]["id"] == "call_0_0"
    assert norm[1]["tool_calls"][0]["function"]["arguments"] == '{"p": 1}'
    assert fixed_columns(norm[0]) == {
        "role": "user",
        "content": "hi",
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
    }
    assert arguments_object('{"p": 1}') == {"p": 1} and arguments_object("not json") == "not json"
