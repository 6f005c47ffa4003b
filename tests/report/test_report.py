"""Report statistics (pass@k, pass^k, bootstrap CIs), the report command and the HTML page."""

from __future__ import annotations

import json
from math import comb

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.report.summary import summarize
from clawgym.report.html import build_report_data, write_html
from clawgym.report.stats import bootstrap_ratio_ci, group_stats, parse_ks, pass_at_k, pass_hat_k
from report_fixtures import make_run


def test_pass_at_k_hand_computed():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(10, 3, 4) == pytest.approx(1 - comb(7, 4) / comb(10, 4))
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(5, 3, 3) == 1.0  # n - c < k: every draw of 3 holds a pass
    assert pass_at_k(3, 1, 5) is None  # fewer attempts than k
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_pass_hat_k_hand_computed():
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)  # C(2,2)/C(5,2)
    assert pass_hat_k(4, 3, 2) == pytest.approx(3 / 6)
    assert pass_hat_k(5, 1, 2) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(2, 2, 3) is None
    for n, c in ((5, 2), (8, 5), (3, 3)):  # k = 1: both are the plain pass rate
        assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pytest.approx(pass_hat_k(n, c, 1))


def test_parse_ks():
    assert parse_ks("5,1,5") == (1, 5)
    assert parse_ks(None) == (1, 5)
    with pytest.raises(ValueError):
        parse_ks("0,2")


def _records(spec):
    """spec: {instance: [status, ...]} -> records of one agent (passed = reward 1, failed = 0)."""
    out = []
    for inst, statuses in spec.items():
        for a, st in enumerate(statuses):
            out.append(
                {
                    "trial_id": f"{inst}.a{a}",
                    "task": {"name": inst, "hash": inst, "seed": 0, "category": "analysis"},
                    "agent": {"type": "x"},
                    "attempt": a,
                    "status": st,
                    "reward": None if st == "error" else float(st == "passed"),
                }
            )
    return out


def test_group_stats_by_instance():
    recs = _records(
        {"t1": ["passed", "failed", "failed", "passed"], "t2": ["failed"] * 4, "t3": ["passed", "passed", "error"]}
    )
    s = group_stats(recs, ks=(1, 2, 3), n_boot=200)
    assert s["instances"] == 3
    assert s["pass@1"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert s["pass@2"] == pytest.approx(((1 - 1 / 6) + 0 + 1) / 3)  # t3 has 2 graded attempts
    assert s["pass^2"] == pytest.approx((1 / 6 + 0 + 1) / 3)
    assert s["pass@3_instances"] == 2  # t3's error is no attempt
    assert s["pass@3"] == pytest.approx((1 - 0 / 4 + 0) / 2)  # C(2,3)=0 -> t1 certain; t2 none
    assert s["pass^3"] == pytest.approx(0.0)


def test_bootstrap_ci_contains_the_mean_and_is_deterministic():
    rewards = [0.0, 0.2, 0.5, 0.9, 1.0, 1.0, 0.3, 0.7, 0.1, 0.6] * 5
    mean = sum(rewards) / len(rewards)
    for use_numpy in (True, False):
        a = bootstrap_ratio_ci(rewards, [1.0] * len(rewards), seed=3, use_numpy=use_numpy)
        b = bootstrap_ratio_ci(rewards, [1.0] * len(rewards), seed=3, use_numpy=use_numpy)
        assert a == b and a[0] < mean < a[1] and 0 <= a[0] and a[1] <= 1
        assert a[1] - a[0] < 0.3
    assert bootstrap_ratio_ci([1.0] * 4, [1.0] * 4) == (1.0, 1.0)  # no spread, no interval
    assert bootstrap_ratio_ci([], []) is None


def test_summarize_keeps_its_columns_and_adds_cis(tmp_path):
    records = [json.loads(p.read_text()) for p in sorted(make_run(tmp_path / "r", 96).glob("trials/*/record.json"))]
    rows = summarize(records, ks=(1, 4))
    assert rows == summarize(records, ks=(1, 4))  # deterministic
    for row in rows:
        assert {
            "agent",
            "category",
            "trials",
            "errors",
            "mean_reward",
            "pass_rate",
            "min_reward",
            "max_reward",
            "mean_reward_ci",
            "pass_rate_ci",
            "pass@1",
            "pass@4",
            "pass^4",
            "pass@4_ci",
        } <= set(row)
        if row["mean_reward"] is not None:
            lo, hi = row["mean_reward_ci"]
            assert lo - 1e-9 <= row["mean_reward"] <= hi + 1e-9
    oracle = next(r for r in rows if r["agent"] == "oracle" and r["category"] == "all")
    assert oracle["pass@4"] == oracle["pass^4"] == 1.0 and oracle["mean_reward_ci"] == [1.0, 1.0]


def test_report_one_run_prints_pass_at_k(tmp_path):
    run = make_run(tmp_path / "r", 96)
    result = CliRunner().invoke(main, ["report", str(run), "--k", "1,4"])
    assert result.exit_code == 0, result.output
    assert "pass@4" in result.output and "pass^4" in result.output and "95% CI" in result.output


def test_report_compares_runs_side_by_side(tmp_path):
    a = make_run(tmp_path / "base", 96, seed=1)
    b = make_run(tmp_path / "better", 96, seed=1, pass_bias=0.3)
    result = CliRunner().invoke(main, ["report", str(a), str(b), "--k", "1,4"], terminal_width=400)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Comparison of 2 runs" in out and "base" in out and "better" in out and "Δ reward" in out
    claw_all = next(line for line in out.splitlines() if "claw" in line and " all " in line)
    assert "+0." in claw_all  # the second run scores higher


def test_report_bad_k_and_empty_folder(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path), "--k", "0"])
    assert result.exit_code == 2 and "--k" in result.stderr
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "no finished trials" in result.stderr


def test_report_html_is_written_and_self_contained(tmp_path):
    run = make_run(tmp_path / "r", 48)
    out = tmp_path / "page" / "report.html"
    result = CliRunner().invoke(main, ["report", str(run), "--html", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="data-index"' in text and 'id="data-details"' in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "<script src" not in text and "<link" not in text
    assert text.count("</script>") == 3  # the two data blocks and the code: no data closes a script early


def test_report_data_columns_details_and_interning(tmp_path):
    run = make_run(tmp_path / "r", 24, attempts=2)
    (run / "trials" / "x.s0.claw.a0").mkdir()  # a folder without a record is not a trial
    data = build_report_data([run], ks=(1, 2))
    index = data["index"]
    assert len(index["id"]) == 24 and len(data["details"]) == 24
    i = next(
        j
        for j, a in enumerate(index["agent"])
        if a == "claw" and index["status"][j] != "error" and index["turns"][j] > 0
    )
    detail = data["details"][i]
    assert index["tokens"][i] > 0 and index["turns"][i] == len(detail["turns"])
    assert "prompt_token_ids" not in json.dumps(detail["turns"])
    assert detail["messages"][0]["content"] == {"@": 0}  # the shared system prompt is stored once
    assert data["strings"][0].startswith("You are a personal assistant")
    assert detail["verdict"]["checks"][1]["type"] == "json_match" and detail["diff"].startswith("--- a/")
    oracle = index["agent"].index("oracle")
    assert index["tokens"][oracle] == 0 and index["turns"][oracle] == 0


def test_html_escapes_script_endings(tmp_path):
    run = make_run(tmp_path / "r", 2, agents=("claw",), attempts=1)
    rec_path = next(run.glob("trials/*/record.json"))
    rec = json.loads(rec_path.read_text())
    rec["error"] = "</script><script>alert(1)</script>"
    rec["status"], rec["reward"], rec["verdict"] = "error", None, None
    rec_path.write_text(json.dumps(rec))
    info = write_html([run], tmp_path / "p.html")
    text = (tmp_path / "p.html").read_text()
    assert info["trials"] == 2 and "alert(1)" in text and "<script>alert" not in text
