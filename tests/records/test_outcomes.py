"""The outcome contract: one closed vocabulary, one evaluation and one training rule per outcome."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clawgym.records import outcomes
from clawgym.records.trial_record import TrialRecord

DOC = Path(__file__).resolve().parents[2] / "docs" / "outcomes.md"


def test_the_vocabulary_has_every_outcome_the_contract_names():
    assert set(outcomes.OUTCOMES) >= {
        "completed",
        "agent_timeout",
        "budget_exhausted",
        "context_overflow",
        "agent_crash",
        "model_error",
        "sandbox_error",
        "grader_error",
        "judge_error",
        "cancelled",
    }


def test_infrastructure_never_becomes_a_reward_and_the_agents_own_failures_are_scored():
    ev, tr = outcomes.evaluation_rules(), outcomes.training_rules()
    for name in outcomes.OUTCOMES:
        if name in outcomes.INFRASTRUCTURE:
            assert ev[name] != "score" and tr[name] == "drop", name
        else:
            assert ev[name] == "score", name
    assert tr["agent_timeout"] == tr["budget_exhausted"] == tr["agent_crash"] == "reward"


def test_the_documented_table_is_the_code():
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"<!-- outcome-table.*?-->\n(.*?)\n<!-- end outcome-table -->", text, re.S)
    assert table is not None and table.group(1) == outcomes.table_markdown()


@pytest.mark.parametrize(
    "word, status, error, expected",
    [
        ("done", "passed", None, "completed"),
        ("timeout", "failed", None, "agent_timeout"),
        ("failed", "failed", None, "agent_crash"),
        (None, "passed", None, "completed"),
        (None, "error", "TrialCancelled: the trial timed out", "cancelled"),
        (None, "error", "JudgeError: the rubric judge failed", "judge_error"),
        (None, "error", "InfraError: the verifier timed out after 20s", "grader_error"),
        (None, "error", "InfraError: sandbox failed to start", "sandbox_error"),
        (None, "error", "KeyError: 'x'", "harness_error"),
        ("completed", "error", "InfraError: lost the verifier", "grader_error"),  # an error is never an agent outcome
        ("model_error", "error", None, "model_error"),
    ],
)
def test_older_records_and_agent_words_read_as_the_contract(word, status, error, expected):
    assert outcomes.normalize(word, status=status, error=error) == expected


def test_a_record_counts_as_its_outcome_rule_says():
    def rec(status, reward, outcome):
        return TrialRecord(trial_id="t", task={"name": "t"}, agent={}, status=status, reward=reward, outcome=outcome)

    done, slow, down = (
        rec("passed", 1.0, "completed"),
        rec("failed", 0.4, "agent_timeout"),
        rec("error", None, "model_error"),
    )
    assert (done.counted(), slow.counted(), down.counted()) == ((1.0, True), (0.4, False), None)
    rules = outcomes.evaluation_rules({"agent_timeout": "exclude", "model_error": "score"})
    assert (slow.counted(rules), down.counted(rules)) == (None, (0.0, False))
    assert down.to_dict()["outcome"] == "model_error"


def test_overrides_name_the_bad_outcome_or_rule():
    with pytest.raises(ValueError, match="unknown outcome 'timeout'.*agent_timeout"):
        outcomes.evaluation_rules({"timeout": "exclude"})
    with pytest.raises(ValueError, match="outcomes.evaluation.model_error: unknown rule 'drop'"):
        outcomes.evaluation_rules({"model_error": "drop"})


def test_rates_give_the_share_of_each_non_completed_outcome():
    assert outcomes.rates(["completed"] * 6 + ["agent_timeout"] * 3 + ["model_error"]) == {
        "agent_timeout": 0.3,
        "model_error": 0.1,
    }
    assert outcomes.rates([]) == {}


def test_the_schemas_state_each_default_rule():
    import json

    defs = json.loads((DOC.parents[1] / "clawgym" / "schemas" / "common.v1.json").read_text())["$defs"]
    for kind, rules in (("evaluation", outcomes.evaluation_rules()), ("training", outcomes.training_rules())):
        props = defs[f"{kind}Rules"]["properties"]
        assert set(props) == set(outcomes.OUTCOMES)
        for name, rule in rules.items():
            assert props[name]["description"].endswith(f"(default `{rule}`)."), (kind, name)
