"""The report page in headless Chromium: at 10,000 trials it renders, lists, filters and opens a trial; on
crafted records its plots read correctly (round ticks, proportional bars, visible zeros, labels that fit,
an outlier that does not flatten the tokens axis), measured with getBoundingClientRect, and a screenshot."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import time

import pytest

from clawgym.report.html import write_html
from report_fixtures import make_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RENDER_BUDGET_MS = 2000


def dump_dom(url: str, profile) -> str:
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report10k")
    run = make_run(tmp / "run", 10_000)
    t0 = time.monotonic()
    info = write_html([run], tmp / "report.html")
    print(
        f"\nreport.html: {info['trials']} trials, {info['bytes'] / 1e6:.1f} MB, written in {time.monotonic() - t0:.1f} s"
    )
    assert info["trials"] == 10_000
    return tmp / "report.html", tmp


def test_page_renders_10000_trials_within_budget(page):
    html_path, tmp = page
    dom = dump_dom(html_path.as_uri(), tmp / "profile1")
    assert 'data-ready="1"' in dom, dom[-3000:]
    assert re.search(r'id="count">10000<', dom) and re.search(r'id="total">10000<', dom)
    rows = re.findall(r'class="trial-row[^"]*" data-i="(\d+)"', dom)
    assert 10 <= len(rows) <= 200  # the list is virtual: only the visible rows exist
    assert rows[0] == "0"
    ms = int(re.search(r'id="render-ms">(\d+)<', dom).group(1))
    print(f"render time at 10,000 trials: {ms} ms")
    assert ms < RENDER_BUDGET_MS
    for plot in ("plot-reward", "plot-category", "plot-tokens", "plot-turns"):
        assert re.search(f'id="{plot}"><svg', dom), plot
    assert "Analysis &amp; Reasoning" in dom and "pass@1" in dom


def test_page_opens_a_trial_step_by_step(page):
    html_path, tmp = page
    dom = dump_dom(html_path.as_uri() + "#trial=analysis-task-0.s2.claw.a1", tmp / "profile2")
    assert 'id="detail-title">analysis-task-0.s2.claw.a1<' in dom
    assert "Verdict: 2 checks" in dom and "totals match" in dom
    assert "Messages (" in dom and "→ exec" in dom and "Steps (1)" in dom
    assert "Workspace diff" in dom and 'class="add">+# Summary<' in dom


def test_screenshot(page):
    html_path, tmp = page
    shot = tmp / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp / 'profile3'}",
            "--window-size=1400,1800",
            f"--screenshot={shot}",
            html_path.as_uri() + "#trial=analysis-task-0.s2.claw.a1",
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 20_000


# ---- the plots, measured in the browser ----

# Runs after the page's own code: each plot's tick labels with their tick marks' positions, and the
# bounding box, tooltip and text of every bar, mark and label the plots module names.
MEASURE = r"""
(function () {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const res = {};
  for (const svg of document.querySelectorAll(".plot svg.mpl")) {
    const pid = svg.parentElement.id, p = res[pid] = {svg: box(svg), card: box(svg.closest(".plot")), x: [], y: [], el: {}};
    for (const axis of ["x", "y"]) for (const g of svg.querySelectorAll('g[id^="' + pid + "-" + axis + 'tick_"]')) {
      const t = g.querySelector("text"), u = g.querySelector("use");
      if (t && u) p[axis].push({label: t.textContent, at: box(u), text: box(t)});
    }
    for (const g of svg.querySelectorAll("g[id]")) {
      const k = g.id.slice(pid.length + 1);
      if (!/^(bar|over|zero|nodata|value|label|note)\b/.test(k)) continue;
      const title = g.querySelector(":scope > title");
      p.el[k] = {box: box(g), title: title ? title.textContent : null,
                 text: Array.from(g.querySelectorAll("text"), (t) => t.textContent).join(" ")};
    }
  }
  const out = document.createElement("pre");
  out.id = "measured"; out.textContent = JSON.stringify(res); document.body.append(out);
})();
"""
WINDOW = "--window-size=1400,1100"
PX = 0.75  # how far (CSS pixels) a measured edge may be from where its value puts it


def _with_measuring_script(page: str) -> str:
    """The page with MEASURE appended and its policy recomputed (so the page runs under its usual CSP)."""
    import html

    from clawgym.report.html import content_security_policy

    page = page.replace("</body>", f"<script>{MEASURE}</script>\n</body>")
    csp = html.escape(content_security_policy(page), quote=False).replace('"', "&quot;")
    return re.sub(
        r'(<meta http-equiv="Content-Security-Policy" content=")[^"]*(")', lambda m: m.group(1) + csp + m.group(2), page
    )


def _tick_value(label: str) -> float:
    scale = {"k": 1e3, "M": 1e6}.get(label[-1:], 1)
    return float(label.rstrip("kM").replace(",", "")) * scale


def _axis(ticks: list[dict], coord: int, *, integer: bool) -> callable:
    """Check one axis's ticks (round numbers in order, evenly placed); returns value -> screen position."""
    values = [_tick_value(t["label"]) for t in ticks]
    assert len(values) >= 2 and values[0] == 0, values
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    assert len(steps) == 1, values
    step = steps.pop()
    exp = math.floor(math.log10(step))
    assert any(math.isclose(step, m * 10.0**exp) for m in (1, 2, 5)), values
    if integer:
        assert all(v == int(v) for v in values), values
    pos = [(t["at"][coord] + t["at"][coord + 2]) / 2 for t in ticks]
    gaps = [b - a for a, b in zip(pos, pos[1:])]
    assert all(abs(g - gaps[0]) < 0.5 for g in gaps) and abs(gaps[0]) > 8, pos  # evenly spaced, in order
    return lambda v: pos[0] + (pos[-1] - pos[0]) * v / values[-1]


def _inside(inner, outer, slack=0.5) -> bool:
    return (
        inner[0] >= outer[0] - slack
        and inner[1] >= outer[1] - slack
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )


@pytest.fixture(scope="module")
def crafted_page(tmp_path_factory):
    pytest.importorskip("matplotlib")
    from test_report_plots import crafted_run

    tmp = tmp_path_factory.mktemp("plots")
    write_html([crafted_run(tmp / "run")], tmp / "report.html")
    measured = tmp / "measured.html"
    measured.write_text(_with_measuring_script((tmp / "report.html").read_text(encoding="utf-8")), encoding="utf-8")
    result = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp / 'profile'}",
            WINDOW,
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            measured.as_uri() + "#trial=invoice.s2.claw.a0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert 'data-ready="1"' in dom, dom[-3000:]
    import html
    import json

    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-3000:]
    return tmp, dom, result.stderr, json.loads(html.unescape(found.group(1)))


def test_plots_render_under_the_pages_policy_and_keep_deep_links(crafted_page):
    _, dom, log, m = crafted_page
    assert set(m) == {"plot-reward", "plot-category", "plot-tokens", "plot-turns"}
    assert "Content Security Policy" not in log, log[-2000:]  # nothing in the SVG is blocked
    assert 'id="detail-title">invoice.s2.claw.a0<' in dom  # report.html#trial=... still opens the trial
    legend = dom[dom.index('id="plot-legend"') :][:2000]
    assert "</i>claw</span>" in legend and "</i>nop</span>" in legend


def test_axes_read_as_round_numbers_and_bars_are_proportional(crafted_page):
    from test_report_plots import CATEGORY_MEANS, REWARD_COUNTS

    _, _, _, m = crafted_page
    for name in ("plot-reward", "plot-tokens", "plot-turns"):
        _axis(m[name]["x"], 0, integer=name != "plot-reward")
    y = _axis(m["plot-reward"]["y"], 1, integer=True)
    bars = m["plot-reward"]["el"]
    assert {k for k in bars if k.startswith("bar-")} == {f"bar-{s}-{b}" for s, b in REWARD_COUNTS}
    for (s, b), count in REWARD_COUNTS.items():
        left, top, right, bottom = bars[f"bar-{s}-{b}"]["box"]
        assert abs(bottom - y(0)) < PX and abs(top - y(count)) < PX, (s, b, count, top, y(count))
        assert bars[f"value-{s}-{b}"]["text"] == str(count)
    # The one-trial bar ends on the "1" tick, not below it.
    one = next(t for t in m["plot-reward"]["y"] if t["label"] == "1")
    assert abs(bars["bar-0-8"]["box"][1] - (one["at"][1] + one["at"][3]) / 2) < PX
    y = _axis(m["plot-category"]["y"], 1, integer=False)
    assert [t["label"] for t in m["plot-category"]["y"]] == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    el = m["plot-category"]["el"]
    for (s, c), mean in CATEGORY_MEANS.items():
        if mean > 0:
            left, top, right, bottom = el[f"bar-{s}-{c}"]["box"]
            assert abs(bottom - y(0)) < PX and abs(top - y(mean)) < PX, (s, c, mean)
        assert el[f"value-{s}-{c}"]["text"] == f"{mean:.2f}"


def test_zero_is_visible_and_differs_from_no_data(crafted_page):
    from test_report_plots import CATEGORY_MEANS

    _, _, _, m = crafted_page
    y = _axis(m["plot-category"]["y"], 1, integer=False)
    el = m["plot-category"]["el"]
    zeros = [k for k, mean in CATEGORY_MEANS.items() if mean == 0]
    assert len(zeros) == 3
    for s, c in zeros:
        left, top, right, bottom = el[f"zero-{s}-{c}"]["box"]
        assert bottom - top >= 2 and right - left >= 4, (s, c)  # a visible mark...
        assert abs(top - y(0)) < PX  # ...right under the baseline, where no positive bar can be
        label = el[f"value-{s}-{c}"]
        assert label["text"] == "0.00" and label["box"][3] <= y(0) + PX and label["box"][3] - label["box"][1] > 4
        assert "mean reward 0.000" in el[f"zero-{s}-{c}"]["title"]
    nodata = el["nodata-1-1"]  # nop never ran the long category
    assert nodata["text"] == "no data" and nodata["title"].endswith("no data, no trials")
    assert nodata["box"][3] <= y(0) + PX and nodata["box"][3] - nodata["box"][1] > 10
    assert "zero-1-1" not in el and "bar-1-1" not in el


def test_category_labels_fit_with_the_full_name_in_the_tooltip(crafted_page):
    from test_report_plots import LONG_CAT

    _, _, _, m = crafted_page
    p = m["plot-category"]
    y0 = _axis(p["y"], 1, integer=False)(0)
    labels = [p["el"][f"label-{c}"] for c in range(3)]
    assert [lab["title"] for lab in labels] == ["Analysis & Reasoning", LONG_CAT, "Productivity & Collaboration"]
    for c, lab in enumerate(labels):
        box = lab["box"]
        assert box[2] - box[0] > 20 and box[3] - box[1] > 6, lab  # drawn
        assert _inside(box, p["svg"]) and _inside(p["svg"], p["card"]), (c, box, p["svg"])  # not cut
        assert box[1] > y0, (c, box)  # under the axis
        # centred under its group of bars (claw's bar or zero mark, then nop's slot of the same width)
        first = (p["el"].get(f"bar-0-{c}") or p["el"][f"zero-0-{c}"])["box"]
        centre = first[0] + (first[2] - first[0])
        assert abs((box[0] + box[2]) / 2 - centre) < 2, (c, box, centre)
    for a, b in zip(labels, labels[1:]):
        assert a["box"][2] < b["box"][0], (a, b)  # no overlap with the neighbour
    # The long name is wrapped onto several lines, not cut to "customer-support-…".
    assert labels[1]["box"][3] - labels[1]["box"][1] > 2 * (labels[0]["box"][3] - labels[0]["box"][1])


def test_tokens_axis_is_not_flattened_by_the_outlier(crafted_page):
    _, _, _, m = crafted_page
    p = m["plot-tokens"]
    x = _axis(p["x"], 0, integer=True)
    y = _axis(p["y"], 1, integer=True)
    ordinary = [v["box"] for k, v in p["el"].items() if k.startswith("bar-")]
    over = p["el"]["over-0-12"]
    assert len(ordinary) == 7 and over["title"] == "claw: 1 trial with more than 6,000 tokens"
    start = x(0)
    spread = max(b[2] for b in ordinary) - start
    assert spread > 0.6 * (over["box"][0] - start), (spread, over["box"])  # the ordinary trials fill the axis
    for b in ordinary + [over["box"]]:
        assert abs(b[1] - y(1)) < PX and abs(b[3] - y(0)) < PX  # one trial each
    assert max(_tick_value(t["label"]) for t in p["x"]) <= 6000 and over["box"][0] > max(b[2] for b in ordinary)
    assert "axis cut at 6,000 tokens: 1 trial above it (up to 400k)" in p["el"]["note"]["text"]


def test_plots_screenshot(crafted_page):
    tmp, _, _, _ = crafted_page
    shot = tmp / "plots.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp / 'profile-shot'}",
            WINDOW,
            f"--screenshot={shot}",
            (tmp / "report.html").as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 1100)
    print(f"\nscreenshot of the plots: {shot}")
