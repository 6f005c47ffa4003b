"""The HTML report's plots (clawgym.report.plots and its plot_* modules): round ticks, zero and no-data
marks, labels that fit, outliers cut off, and SVG that carries no record text and no styles the page's
policy would block."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from clawgym.report import plot_categories, plot_scale, plots  # noqa: E402
from clawgym.report.html import build_report_data, write_html  # noqa: E402

LONG_CAT = "customer-support-escalations-and-refund-handling"
OUTLIER_TOKENS = 400_000


def _trial(
    trials: Path, task: str, seed: int, agent: str, category: str, reward: float | None, tokens: int, turns: int
) -> None:
    trial_id = f"{task}.s{seed}.{agent}.a0"
    status = "error" if reward is None else "passed" if reward >= 1 else "failed"
    info = {
        "name": task,
        "id": f"{task}@{seed}",
        "hash": f"h{task}{seed}",
        "seed": seed,
        "category": category,
        "params": {},
        "persona": "p",
    }
    record = {
        "format": "clawgym.trial/v1",
        "trial_id": trial_id,
        "task": info,
        "agent": {"type": agent, "name": agent},
        "attempt": 0,
        "status": status,
        "reward": reward,
        "verdict": None
        if reward is None
        else {"reward": reward, "passed": reward >= 1, "gate_failed": None, "error": None, "results": []},
        "error": "InfraError: sandbox failed" if reward is None else None,
        "timings": {"total_s": 1.0},
    }
    folder = trials / trial_id
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps(record))
    if reward is not None:
        completion = tokens // 10
        traj = {
            "format": "clawgym.trajectory/v1",
            "task": info,
            "agent": record["agent"],
            "steps": [],
            "outcome": "completed",
            "final_message": "done",
            "error": None,
            "messages": [],
            "tools": [],
            "turns": [{"index": t, "finish_reason": "stop", "usage": {}} for t in range(turns)],
            "usage": {"prompt_tokens": tokens - completion, "completion_tokens": completion, "turns": turns},
            "side_effects": {},
        }
        (folder / "trajectory.json").write_text(json.dumps(traj))


# claw: (task, category, reward, tokens, turns); nop: no model calls, reward 0, no trial in LONG_CAT.
CLAW = [
    ("invoice", "productivity", 1.0, 3000, 3),
    ("invoice", "productivity", 1.0, 4000, 4),
    ("invoice", "productivity", 0.8, 5000, 5),
    ("invoice", "productivity", 0.55, 6000, 6),
    ("ledger", "analysis", 0.0, 2000, 2),
    ("ledger", "analysis", 0.0, 2500, 2),
    ("ledger", "analysis", 0.0, OUTLIER_TOKENS, 8),
    ("refunds", LONG_CAT, 0.5, 3500, 4),
]
NOP = [
    ("invoice", "productivity", 0.0),
    ("invoice", "productivity", 0.0),
    ("ledger", "analysis", 0.0),
    ("ledger", "analysis", None),
]


def crafted_run(root: Path) -> Path:
    """A run with a one-trial reward bin and a one-trial category, zero-reward groups (nop everywhere, claw
    on analysis), a category nop never ran (no data), a long category name and a 100x-tokens outlier."""
    for seed, (task, cat, reward, tokens, turns) in enumerate(CLAW):
        _trial(root / "trials", task, seed, "claw", cat, reward, tokens, turns)
    for seed, (task, cat, reward) in enumerate(NOP):
        _trial(root / "trials", task, seed, "nop", cat, reward, 0, 0)
    return root


# What the crafted run must show (series 0 = claw, 1 = nop; categories sorted: analysis, LONG_CAT, productivity).
REWARD_COUNTS = {(0, 0): 3, (0, 5): 2, (0, 8): 1, (0, 9): 2, (1, 0): 3}
CATEGORY_MEANS = {(0, 0): 0.0, (0, 1): 0.5, (0, 2): (1 + 1 + 0.8 + 0.55) / 4, (1, 0): 0.0, (1, 2): 0.0}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> Path:
    return crafted_run(tmp_path_factory.mktemp("crafted") / "run")


@pytest.fixture(scope="module")
def crafted_data(crafted) -> dict:
    return build_report_data([crafted])


# ---- numbers ----


def _is_round_step(step: float) -> bool:
    exp = math.floor(math.log10(step))
    return any(math.isclose(step, m * 10.0**exp, rel_tol=1e-9) for m in (1, 2, 5))


@pytest.mark.parametrize("vmax", [0.3, 1, 2, 3, 5, 7, 9, 10, 11, 17, 23, 99, 100, 101, 250, 999, 4321, 12_345, 400_000])
@pytest.mark.parametrize("integer", [True, False])
def test_nice_ticks_are_round_and_cover_the_maximum(vmax, integer):
    if integer and vmax < 1:
        return
    ticks = plot_scale.nice_ticks(vmax, integer=integer)
    assert ticks[0] == 0 and ticks[-1] >= vmax and ticks[-2] < vmax and 2 <= len(ticks) <= 7, ticks
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1 and _is_round_step(steps.pop()), ticks
    if integer:
        assert all(isinstance(t, int) for t in ticks), ticks


def test_the_issue_axis_reads_0_1_2_3_4_5():
    # The old page drew ticks at ymax/4, rounded: 0, 1, 3, 4, 5 for ymax 5.
    assert plot_scale.nice_ticks(5, integer=True) == [0, 1, 2, 3, 4, 5]
    assert plot_scale.nice_ticks(1, integer=True) == [0, 1]
    assert plot_scale.fmt_ticks([0, 5000, 10000, 15000]) == ["0", "5k", "10k", "15k"]
    assert plot_scale.fmt_ticks([0, 0.2, 0.4, 1.0]) == ["0", "0.2", "0.4", "1"]
    assert plot_scale.fmt_ticks([0, 500_000, 1_000_000]) == ["0", "0.5M", "1M"]


def test_nice_step():
    assert [plot_scale.nice_step(x) for x in (0.07, 0.1, 0.13, 3, 7, 11, 760)] == [0.1, 0.1, 0.2, 5, 10, 20, 1000]
    assert plot_scale.nice_step(0.3, integer=True) == 1 and plot_scale.nice_step(0) == 1


def test_outlier_cut():
    ordinary = [2000, 2500, 3000, 3500, 4000, 5000, 6000]
    assert plot_scale.outlier_cut(ordinary) == (6000, None)
    assert plot_scale.outlier_cut(ordinary + [OUTLIER_TOKENS]) == (6000, 6000)
    assert plot_scale.outlier_cut(ordinary + [20_000]) == (20_000, None)  # within 4x: nothing is cut
    assert plot_scale.outlier_cut([5, 5, 5, 5, 5, 5]) == (5, None)
    assert plot_scale.outlier_cut([1, 400]) == (400, None)  # too few values to call one an outlier
    assert plot_scale.outlier_cut([]) == (0.0, None)


def test_bins():
    b = plot_scale.Bins(12, integer=True)
    assert (b.width, b.centred, b.n, b.index(0), b.index(12)) == (1, True, 13, 0, 12)
    b = plot_scale.Bins(6000, integer=True, cut=6000)
    assert b.width == 500 and b.hi == 6000 and b.index(6000) == b.n - 1 and b.index(6001) == b.n
    assert b.describe(0, "tokens") == "0–499 tokens" and b.describe(b.n, "tokens") == "more than 6,000 tokens"
    r = plot_scale.Bins(1.0, integer=False, width=0.1, lo=0.0, n=10)
    assert [r.index(v) for v in (0.0, 0.09, 0.1, 0.3, 0.5, 0.55, 0.7, 0.99, 1.0)] == [0, 0, 1, 3, 5, 5, 7, 9, 9]


def test_wrap_and_shorten():
    assert plot_scale.wrap("Productivity & Collaboration", 80) == ["Productivity &", "Collaboration"]
    lines = plot_scale.wrap(LONG_CAT, 90)
    assert lines and "".join(lines) == LONG_CAT and len(lines) <= 3
    assert all(plot_scale.text_width(line, plot_scale.FONT) <= 90 for line in lines)
    assert plot_scale.wrap("Supercalifragilisticexpialidocious", 60) is None  # one word wider than the slot
    short = plot_scale.shorten("x" * 200, 100)
    assert short.endswith("…") and plot_scale.text_width(short, plot_scale.FONT) <= 100


# ---- the page's plots ----


def _svgs(page: str) -> dict[str, str]:
    return dict(re.findall(r'<div id="(plot-\w+)">(<svg class="mpl".*?</svg>)</div>', page, re.DOTALL))


def test_plots_are_inline_svg_without_styles_links_or_record_text(crafted, tmp_path):
    out = tmp_path / "report.html"
    write_html([crafted], out)
    page = out.read_text(encoding="utf-8")
    svgs = _svgs(page)
    assert set(svgs) == {"plot-reward", "plot-category", "plot-tokens", "plot-turns"}
    for name, svg in svgs.items():
        assert " style=" not in svg and "<style" not in svg and "<script" not in svg and "http" not in svg, name
        ids = re.findall(r'\sid="([^"]+)"', svg)
        assert ids and all(i.startswith(name + "-") for i in ids), name
        refs = re.findall(r'(?:href="#|url\(#)([^")]+)', svg)
        assert refs and set(refs) <= set(ids), name
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        for text in texts:  # numbers and the module's own words only
            assert "claw" not in text and "nop" not in text and "customer" not in text and "Productivity" not in text
    # The long category name is drawn as outlines, its full name is in the data as a tooltip.
    assert LONG_CAT not in svgs["plot-category"]
    assert LONG_CAT in page.split('<script type="application/json" id="data-index">')[1]


def test_plot_data_tips_and_series(crafted_data):
    p = crafted_data["plots"]
    assert p["series"] == [{"name": "claw", "color": plots.PALETTE[0]}, {"name": "nop", "color": plots.PALETTE[1]}]
    tips = p["tips"]
    assert tips["plot-reward-bar-0-8"] == "claw: 1 trial with reward 0.8 to 0.9 (upper end excluded)"
    assert tips["plot-category-label-1"] == LONG_CAT
    assert tips["plot-category-label-2"] == "Productivity & Collaboration"
    assert tips["plot-category-zero-1-0"].startswith("nop · Analysis & Reasoning: mean reward 0.000 over 2 trials")
    assert tips["plot-category-nodata-1-1"] == f"nop · {LONG_CAT}: no data, no trials"
    assert "over 1 trial" in tips["plot-category-bar-0-1"]
    over = [k for k in tips if k.startswith("plot-tokens-over-")]
    assert over == ["plot-tokens-over-0-12"] and tips[over[0]] == "claw: 1 trial with more than 6,000 tokens"
    for (s, b), n in REWARD_COUNTS.items():
        assert f" {n} trial" in tips[f"plot-reward-bar-{s}-{b}"]
    for (s, c), mean in CATEGORY_MEANS.items():
        kind = "bar" if mean > 0 else "zero"
        assert f"mean reward {mean:.3f}" in tips[f"plot-category-{kind}-{s}-{c}"]


def _note(svg: str, name: str) -> str:
    group = svg[svg.index(f'<g id="{name}-note">') :]
    group = group[: group.index("</g>")]
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", group))


def test_plot_notes_say_what_is_not_shown(crafted_data):
    svg = crafted_data["plot_svg"]
    assert _note(svg["plot-reward"], "plot-reward") == "not shown: 1 trial without a reward (errors)"
    assert _note(svg["plot-tokens"], "plot-tokens") == (
        "axis cut at 6,000 tokens: 1 trial above it (up to 400k) in the hatched bar; not shown: 3 trials without "
        "model calls (0 tokens); not shown: 1 trial without a trajectory"
    )
    assert _note(svg["plot-turns"], "plot-turns") == (
        "not shown: 3 trials without model calls (0 turns); not shown: 1 trial without a trajectory"
    )
    assert ">&gt; 6,000<" in svg["plot-tokens"]


def test_hostile_names_stay_out_of_the_svg(tmp_path):
    root = tmp_path / "run"
    evil = "</text><script>alert(1)</script>$\\frac{1}{2}$ \x1b[31m\u202e"
    _trial(root / "trials", "t", 0, evil, evil, 0.5, 100, 1)
    _trial(root / "trials", "t", 1, "claw", "x\ny" + evil, 0.0, 100, 1)
    data = build_report_data([root])
    for svg in data["plot_svg"].values():
        assert "alert" not in svg and "script" not in svg and "\x1b" not in svg and "\u202e" not in svg
    tips = json.dumps(data["plots"]["tips"], ensure_ascii=False)
    assert "\\x1b[31m" in tips and "\x1b" not in tips and "\u202e" not in tips  # escapes made visible


def test_without_matplotlib_the_page_says_so(crafted, tmp_path, monkeypatch):
    import clawgym.report.html as report_html

    def missing(*args, **kwargs):
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(report_html, "build_plots", missing)
    out = tmp_path / "r.html"
    info = write_html([crafted], out)
    page = out.read_text(encoding="utf-8")
    assert info["trials"] == 12 and "<svg" not in page and "plots need matplotlib" in page


def test_svg_is_deterministic(crafted):
    a, b = build_report_data([crafted]), build_report_data([crafted])
    assert a["plot_svg"] == b["plot_svg"]


def test_plots_cost_little_at_10000_trials():
    import random
    import time

    rand = random.Random(0)
    n = 10_000
    agents = [rand.choice(["claw", "oracle", "nop"]) for _ in range(n)]
    index = {
        "run": ["r"] * n,
        "agent": agents,
        "cat": [rand.choice(["analysis", "content"]) for _ in range(n)],
        "reward": [None if rand.random() < 0.03 else rand.random() for _ in range(n)],
        "tokens": [0 if a != "claw" else rand.randint(500, 30_000) for a in agents],
        "turns": [0 if a != "claw" else rand.randint(1, 40) for a in agents],
    }
    stats = {
        "r": [
            {"agent": a, "category": c, "trials": 100, "errors": 3, "mean_reward": 0.5, "mean_reward_ci": [0.4, 0.6]}
            for a in ("claw", "oracle", "nop")
            for c in ("analysis", "content", "all")
        ]
    }
    t0 = time.monotonic()
    out = plots.build_plots(index, stats, ["r"], {}, [True] * n)
    seconds = time.monotonic() - t0
    assert set(out["svg"]) == {"plot-reward", "plot-category", "plot-tokens", "plot-turns"}
    assert sum(len(svg) for svg in out["svg"].values()) < 400_000
    assert seconds < 5, seconds


def test_many_categories_become_rows_with_names_beside_them():
    cats = [f"category-number-{i}-with-a-rather-long-name" for i in range(25)]
    rows = {
        (s, c): {"mean_reward": 0.0 if c == 3 else 0.5, "mean_reward_ci": [0.4, 0.6], "trials": 2, "errors": 0}
        for s in range(3)
        for c in range(25)
        if (s, c) != (2, 7)
    }
    with __import__("matplotlib").rc_context(plots._RC):
        plot = plot_categories.category_plot(cats, cats, rows, ["a", "b", "c"], plots.PALETTE[:3])
        svg = plot.svg()
    assert plot.ax_h == 25 * (3 * plot_categories.ROW_H + 8)  # as tall as the rows need
    assert plot.ax.get_yticks().size == 0 and list(plot.ax.get_xticks()) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert {f"label-{c}" for c in range(25)} <= set(plot.tips) and plot.tips["label-4"] == cats[4]
    assert {f"zero-{s}-3" for s in range(3)} <= set(plot.tips) and "nodata-2-7" in plot.tips
    assert "category-number" not in svg and 'id="plot-category-label-24"' in svg


def test_fit_lines():
    assert plot_scale.fit_lines("short", 100) == ["short"]
    lines = plot_scale.fit_lines("a" * 80, 60)
    assert (
        len(lines) == 2
        and lines[1].endswith("…")
        and all(plot_scale.text_width(x, plot_scale.FONT) <= 60 for x in lines)
    )
    assert plot_scale.fit_lines("one two three four five six seven", 40, max_lines=2)[-1].endswith("…")
