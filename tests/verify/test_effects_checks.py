"""Side-effect checks: messages sent through the simulated outbox and scheduled cron jobs."""

from __future__ import annotations

import pytest

from clawgym.checks import CheckContext, check_class, check_schema
from clawgym.verify import run_checks

OUTBOX = [
    {"channel": "email", "target": "bob@example.com", "message": "Hi Bob, the report is ready. Total: 42", "turn": 3},
    {"channel": "slack", "target": "#team", "message": "Standup moved to 10:00", "turn": 4},
    {"channel": "email", "target": "ann@example.com", "message": "Reminder: invoice due Friday", "turn": 5},
]
CRON = [
    {"name": "weekly review", "schedule": "0 9 * * 1", "text": "Review the budget sheet"},
    {
        "id": "j2",
        "name": "dentist",
        "schedule": {"kind": "at", "at": "2026-03-05T08:00:00Z"},
        "payload": {"kind": "systemEvent", "text": "Dentist at 9"},
    },
]


def ctx(tmp_path, outbox=OUTBOX, cron=CRON, trajectory=True):
    traj = {"side_effects": {"outbox": outbox, "cron": cron}} if trajectory else None
    return CheckContext(workspace=tmp_path, original=tmp_path, task_dir=None, params={}, trajectory=traj)


def one(tmp_path, config, **kw):
    [r] = run_checks([config], ctx(tmp_path, **kw))
    return r


@pytest.mark.parametrize(
    "config, score",
    [
        ({"type": "message_sent", "target": "bob@example.com", "contains": ["report", "42"]}, 1.0),
        ({"type": "message_sent", "channel": "EMAIL", "target": "BOB@example.com"}, 1.0),
        ({"type": "message_sent", "target": "bob@example.com", "contains": ["report", "99"]}, 0.5),
        ({"type": "message_sent", "channel": "slack", "contains": "10:00"}, 1.0),
        ({"type": "message_sent", "channel": "sms"}, 0.0),
        ({"type": "message_sent", "channel": "email", "count": 2}, 1.0),
        ({"type": "message_sent", "channel": "email", "count": 4}, 0.5),
        ({"type": "message_sent", "channel": "email", "contains": "invoice", "count": 2}, 0.5),
        ({"type": "message_sent", "target": "example.com", "target_match": "contains", "count": 2}, 1.0),
        ({"type": "message_sent", "target": ["carol@example.com", "ann@example.com"]}, 1.0),
        ({"type": "message_sent", "target": "boss@example.com", "max_count": 0}, 1.0),
        ({"type": "message_sent", "channel": "email", "max_count": 1}, 0.0),
        ({"type": "message_sent", "not_contains": "password", "count": 3}, 1.0),
        ({"type": "message_sent", "contains": "report", "case_sensitive": True}, 1.0),
        ({"type": "message_sent", "contains": "REPORT", "case_sensitive": True}, 0.0),
    ],
)
def test_message_sent_scores(tmp_path, config, score):
    r = one(tmp_path, config)
    assert r.score == pytest.approx(score), r.reason


def test_message_sent_reasons(tmp_path):
    r = one(tmp_path, {"type": "message_sent", "target": "bob@example.com", "contains": ["report", "99"]})
    assert "missing '99'" in r.reason and r.name == "message_sent bob@example.com"
    r = one(tmp_path, {"type": "message_sent", "channel": "sms"})
    assert "no message(s) on sms" in r.reason and "email:bob@example.com" in r.reason
    r = one(tmp_path, {"type": "message_sent"}, outbox=[])
    assert r.score == 0 and "no message(s)" in r.reason
    r = one(tmp_path, {"type": "message_sent", "channel": "email"}, trajectory=False)
    assert r.score == 0 and "no trajectory" in r.reason


@pytest.mark.parametrize(
    "config, score",
    [
        ({"type": "cron_job", "schedule": "0 9 * * 1"}, 1.0),
        ({"type": "cron_job", "schedule": "0  9 * * 1", "contains": "budget"}, 1.0),
        ({"type": "cron_job", "schedule": "0 9 * * 2", "contains": "budget"}, 0.5),
        ({"type": "cron_job", "schedule": ["2026-03-05T08:00:00Z"], "contains": "dentist"}, 1.0),
        ({"type": "cron_job", "name_contains": "DENTIST", "contains": "Dentist at 9"}, 1.0),
        ({"type": "cron_job", "contains": "DENTIST", "case_sensitive": True}, 0.0),
        ({"type": "cron_job", "name_contains": "gym"}, 0.0),
        ({"type": "cron_job", "contains": "review", "count": 2}, 0.5),
        ({"type": "cron_job", "name_contains": "gym", "max_count": 0}, 1.0),
    ],
)
def test_cron_job_scores(tmp_path, config, score):
    r = one(tmp_path, config)
    assert r.score == pytest.approx(score), r.reason


def test_cron_job_empty_and_reason(tmp_path):
    r = one(tmp_path, {"type": "cron_job", "schedule": "0 8 * * *"}, cron=[])
    assert r.score == 0 and r.reason == "no cron job(s)"
    r = one(tmp_path, {"type": "cron_job", "schedule": "0 8 * * *"})
    assert "is not 0 8 * * *" in r.reason


def test_schemas_are_documented_and_closed():
    for name in ("message_sent", "cron_job"):
        schema = check_schema(name)
        assert schema["additionalProperties"] is False
        for key, prop in schema["properties"].items():
            assert prop.get("description"), (name, key)
    with pytest.raises(ValueError, match="unknown option"):
        check_class("cron_job")({"type": "cron_job", "schedul": "x"})
    assert check_schema("message_sent")["properties"]["contains"]["x-template"] == "value"
