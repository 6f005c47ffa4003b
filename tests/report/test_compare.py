"""`clawgym compare`: harnesses side by side on the same tasks, with CIs and paired differences."""

import json

from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.report.harnesses import compare_harnesses, harness_label, html_page, mark_reference
from clawgym.records.trial_record import TrialRecord


def record(
    agent: dict,
    task: str,
    seed: int,
    status: str,
    reward,
    *,
    tokens=(100, 20),
    calls=3,
    wall=2.0,
    category="productivity",
) -> dict:
    return {
        "format": "clawgym.trial/v2",
        "trial_id": f"{task}.s{seed}.{agent['name']}.a0",
        "task": {"name": task, "hash": f"{task}-{seed}", "seed": seed, "category": category},
        "agent": agent,
        "status": status,
        "reward": reward,
        "verdict": None,
        "error": None if reward is not None else "boom",
        "usage": {"model_calls": calls, "prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
        "timings": {"agent_s": wall},
    }


CLAW = {"type": "claw", "name": "claw"}
OC = {"type": "openclaw", "name": "openclaw", "version": "2026.4.1"}


def records() -> list[dict]:
    out = []
    for seed in range(4):
        out.append(record(CLAW, "sum", seed, "passed", 1.0, wall=1.0))
        out.append(
            record(
                OC,
                "sum",
                seed,
                "failed" if seed < 2 else "passed",
                0.5 if seed < 2 else 1.0,
                tokens=(8000, 100),
                calls=5,
                wall=8.0,
            )
        )
        out.append(record(CLAW, "mail", seed, "failed", 0.0, category="communication"))
    out.append(record(OC, "mail", 0, "error", None, category="communication"))
    return out


def test_harnesses_side_by_side_with_paired_differences():
    result = compare_harnesses(records())
    assert result["harnesses"] == ["claw", "openclaw@2026.4.1"] and result["reference"] == "claw"
    claw, oc = result["overall"]
    assert (claw["trials"], claw["errors"], oc["trials"], oc["errors"]) == (8, 0, 5, 1)
    assert claw["reward"]["mean"] == 0.5 and oc["reward"]["mean"] == 0.75 and oc["passed"]["mean"] == 0.5
    assert oc["tokens"]["mean"] == 8100 and oc["turns"]["mean"] == 5 and oc["wall_s"]["mean"] == 8.0
    # paired on the 4 `sum` instances openclaw graded: 0.75 - 1.0; the errored `mail` instance drops out
    assert oc["delta_reward"]["mean"] == -0.25 and oc["delta_reward"]["n"] == 4 and claw["delta_reward"] is None
    lo, hi = oc["delta_reward"]["ci"]
    assert lo <= -0.25 <= hi and hi <= 0.0
    cats = {(g["slice"], g["harness"]): g for g in result["categories"]}
    assert cats[("communication", "openclaw@2026.4.1")]["reward"]["mean"] is None
    tasks = {(g["slice"], g["harness"]) for g in result["tasks"]}
    assert ("sum", "claw") in tasks and ("mail", "openclaw@2026.4.1") in tasks


def test_the_reference_can_be_chosen_and_versions_tell_harnesses_apart():
    recs = records() + [record({**OC, "version": "2026.9.6"}, "sum", 0, "passed", 1.0)]
    result = compare_harnesses(recs, order=["openclaw@2026.4.1"])
    assert result["harnesses"][0] == "openclaw@2026.4.1" and "openclaw@2026.9.6" in result["harnesses"]
    assert harness_label(TrialRecord.from_dict(record(CLAW, "x", 0, "passed", 1.0))) == "claw"


def test_the_page_escapes_names_and_the_cli_prints_writes_and_refuses(tmp_path):
    hostile = {"type": "command", "name": "<script>alert(1)</script>"}
    recs = records() + [record(hostile, "sum", 0, "passed", 1.0)]
    page = html_page(mark_reference(compare_harnesses(recs)))
    assert "<script>" not in page and "&lt;script&gt;" in page and "http" not in page.split("</head>")[1]
    run = tmp_path / "run"
    for rec in records():
        folder = run / "trials" / rec["trial_id"]
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(json.dumps(rec))
    out = CliRunner().invoke(
        main,
        [
            "compare",
            str(run),
            "--by",
            "overall",
            "--by",
            "task",
            "--json",
            str(tmp_path / "c.json"),
            "--html",
            str(tmp_path / "c.html"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "openclaw@2026.4.1" in out.output and "-0.250" in out.output and "(ref)" in out.output
    assert json.loads((tmp_path / "c.json").read_text())["reference"] == "claw"
    bad = CliRunner().invoke(main, ["compare", str(run), "--ref", "hermes"])
    assert bad.exit_code != 0 and "--ref hermes: no trials of that harness" in bad.output
    assert "harnesses found: claw, openclaw@2026.4.1" in bad.output
