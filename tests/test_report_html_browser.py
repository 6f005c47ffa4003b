"""The report page at 10,000 trials in headless Chromium: it renders, lists, filters and opens a trial."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from clawgym.report.html import write_html
from report_fixtures import make_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RENDER_BUDGET_MS = 2000


def dump_dom(url: str, profile) -> str:
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report10k")
    run = make_run(tmp / "run", 10_000)
    t0 = time.monotonic()
    info = write_html([run], tmp / "report.html")
    print(f"\nreport.html: {info['trials']} trials, {info['bytes'] / 1e6:.1f} MB, written in {time.monotonic() - t0:.1f} s")
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
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile3'}", "--window-size=1400,1800",
                    f"--screenshot={shot}", html_path.as_uri() + "#trial=analysis-task-0.s2.claw.a1"],
                   capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000
