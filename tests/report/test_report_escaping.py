"""Hostile agent data in reports: the terminal shows it literally, the HTML page only as text."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.console import Console

from clawgym.cli import run as run_cmd
from clawgym.bench.leaderboard import html_page, markdown
from clawgym.cli.main import main
from clawgym.cli.support import error_text, friendly
from clawgym.errors import ClawgymError
from clawgym.report.summary import compare_table, print_summary, summarize
from clawgym.report.html import build_report_data, json_script, write_html
from clawgym.files.textsafe import markup_safe, printable, quote_path
from report_fixtures import make_run

# What agents put in file names, messages and outputs to attack the reader's terminal or browser.
NEWLINE = "evil\nFAKE LINE"
ANSI = "\x1b[31mred\x1b[0m"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
MARKUP = "[bold]x[/bold]"
LINK = "[link=file:///etc/passwd]x[/link]"
SCRIPT = "</script><script>document.documentElement.setAttribute('data-pwned','script');alert(1)</script>"
IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img');alert(1)\">"
BIDI = "invoice\u202etxt.exe"
CR = "all good\rFAKE"
BACKSPACE = "safe\b\b\b\bRM -RF"
HOSTILE = " ".join([NEWLINE, ANSI, OSC8, MARKUP, LINK, SCRIPT, IMG, BIDI, CR, BACKSPACE])
BAD_ID = "evil\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','id')\">.s0.claw.a0"

RICH_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours rich itself writes


# ---- textsafe ----


def test_printable_makes_controls_visible():
    assert printable("plain text, ünïcödé ✓") == "plain text, ünïcödé ✓"
    assert (
        printable("a\nb\tc\rd\x1b[31m\x7f\x85\u202e\u2066\u2028\x00")
        == "a\\nb\\tc\\rd\\x1b[31m\\x7f\\x85\\u202e\\u2066\\u2028\\x00"
    )
    assert printable("a\nb\tc\rd\x1b", multiline=True) == "a\nb\tc\\rd\\x1b"
    assert printable("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    for text in (HOSTILE, OSC8, BIDI, CR, BACKSPACE):
        shown = printable(text)
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u2028" for c in shown), shown


def test_quote_path_is_unambiguous():
    assert quote_path("out/summary.md") == "out/summary.md"
    assert quote_path("notes/café menu.txt") == "notes/café menu.txt"
    assert quote_path("a\nb") == '"a\\nb"'
    assert quote_path('say "hi".txt') == '"say \\"hi\\".txt"'
    assert quote_path("back\\slash") == '"back\\\\slash"'
    assert quote_path("x\x1b[31m") == '"x\\x1b[31m"'
    assert quote_path(BIDI) == '"invoice\\u202etxt.exe"'
    assert quote_path("trailing ") == '"trailing "' and quote_path("") == '""'
    assert quote_path("nb\u00a0sp") == '"nb\\xa0sp"' and quote_path("zero\u200bwidth") == '"zero\\u200bwidth"'
    # Distinct names stay distinct once shown.
    names = ["a\nb", "a\\nb", '"a\\nb"', "a b", "a\tb", "a\\tb"]
    assert len({quote_path(n) for n in names}) == len(names)


def test_markup_safe_shows_markup_literally():
    text = f"{MARKUP} {LINK} \\[bold]y a\\b"
    buf = io.StringIO()
    Console(file=buf, width=300, color_system=None).print(f"[red]label[/red] {markup_safe(text)}")
    assert buf.getvalue() == f"label {text}\n"


# ---- a results folder with hostile records ----


def _hostile_run(root: Path) -> Path:
    """A small run whose records, trajectories and diffs are full of hostile strings."""
    run = make_run(root, 8, agents=("claw",), attempts=2)
    paths = sorted(run.glob("trials/*/record.json"))
    for n, path in enumerate(paths[:3]):
        rec = json.loads(path.read_text())
        rec["agent"]["name"] = ["a" + ANSI + "b", MARKUP, LINK][n]
        rec["task"]["category"] = ["cat" + OSC8, "x\ny", BIDI][n]
        rec["task"]["name"] = HOSTILE
        rec["status"], rec["reward"] = "failed", 0.0
        rec["verdict"] = {
            "reward": 0.0,
            "passed": False,
            "gate_failed": HOSTILE,
            "error": HOSTILE,
            "results": [
                {
                    "name": HOSTILE,
                    "type": IMG,
                    "score": 0.0,
                    "weight": 1.0,
                    "gate": True,
                    "passed": False,
                    "reason": "file not found: " + HOSTILE,
                    "details": {"path": HOSTILE, HOSTILE: SCRIPT},
                }
            ],
        }
        rec["error"] = rec["note"] = rec["traceback"] = HOSTILE
        rec["timings"] = {HOSTILE: 1.0, "total_s": 1.0}
        if n == 0:
            rec["trial_id"] = BAD_ID
        path.write_text(json.dumps(rec))
        traj = {
            "format": "clawgym.trajectory/v1",
            "task": rec["task"],
            "agent": rec["agent"],
            "outcome": HOSTILE,
            "final_message": "Done. " + HOSTILE,
            "error": None,
            "tools": [{"function": {"name": IMG}}],
            "messages": [
                {"role": "user", "content": HOSTILE},
                {"role": IMG, "name": SCRIPT, "content": [{"type": "text", "text": HOSTILE}]},
                {
                    "role": "assistant",
                    "content": HOSTILE,
                    "tool_calls": [{"id": SCRIPT, "type": "function", "function": {"name": IMG, "arguments": HOSTILE}}],
                },
                {"role": "tool", "tool_call_id": IMG, "content": "x" * 200 + HOSTILE},
            ],
            "steps": [
                {"index": 0, "kind": IMG, "description": HOSTILE, "output": HOSTILE, "stderr": SCRIPT, "exit_code": 1}
            ],
            "turns": [{"index": 0, "finish_reason": IMG, "usage": {HOSTILE: 1}, "latency_s": 0.1}],
            "usage": {"prompt_tokens": "lots", "completion_tokens": None, "turns": 1},
            "side_effects": {"messages": [HOSTILE]},
        }
        (path.parent / "trajectory.json").write_text(json.dumps(traj))
        (path.parent / "workspace.diff").write_text(
            f"--- a/{NEWLINE}\n+++ b/{IMG}\n@@ -1 +1 @@\n-{SCRIPT}\n+{HOSTILE}\n", encoding="utf-8"
        )
    return run


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return _hostile_run(tmp_path_factory.mktemp("hostile") / "run[bold]\x1b[31m")


def _records(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run.glob("trials/*/record.json"))]


def _assert_terminal_safe(out: str, *, colours: bool = False) -> None:
    """No escape sequence but rich's own colours, markup shown literally, no cell split over lines."""
    rest = RICH_SGR.sub("", out) if colours else out
    assert "\x1b" not in rest and "\r" not in rest and "\b" not in rest, repr(rest[:2000])
    assert "\u202e" not in rest and "\x9b" not in rest
    assert "[bold]x[/bold]" in rest and "[link=file:///etc/passwd]x[/link]" in rest
    # Each hostile agent name and its hostile category stay on one line, with the escapes visible.
    lines = rest.splitlines()
    for agent, category in (
        ("a\\x1b[31mred\\x1b[0mb", "cat\\x1b]8;;http://evil.example/\\x1b\\click"),
        (MARKUP, "x\\ny"),
        (LINK, "invoice\\u202etxt.exe"),
    ):
        assert any(agent in line and category in line for line in lines), (agent, category, rest)


# ---- terminal ----


@pytest.mark.parametrize("colours", [False, True])
def test_summary_table_shows_hostile_text_literally(hostile, colours):
    buf = io.StringIO()
    console = Console(file=buf, width=1000, force_terminal=colours, color_system="truecolor" if colours else None)
    print_summary(summarize(_records(hostile)), console, title=f"Results: {hostile}")
    out = buf.getvalue()
    _assert_terminal_safe(out, colours=colours)
    assert "\x1b]8" not in out  # no hyperlink at all, from the data or from markup
    assert "run[bold]\\x1b[31m" in out  # the title (the run folder's name) too


def test_compare_table_shows_hostile_text_literally(hostile, tmp_path):
    other = make_run(tmp_path / "[link=http://x]other[/link]", 4, agents=("claw",), attempts=1)
    runs = [("[link=http://x]other[/link]\x1b[2J", summarize(_records(other))), ("base", summarize(_records(hostile)))]
    buf = io.StringIO()
    Console(file=buf, width=1000, color_system=None).print(compare_table(runs))
    out = buf.getvalue()
    _assert_terminal_safe(out)
    assert "[link=http://x]other[/link]\\x1b[2J" in out


def test_report_command_output(hostile):
    result = CliRunner().invoke(main, ["report", str(hostile)], terminal_width=400)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "[bold]x[/bold]" in out and "run[bold]\\x1b[31m" in out


def test_run_command_prints_errors_literally(monkeypatch, tmp_path):
    records = [
        {
            "trial_id": f"t{i}.{MARKUP}",
            "task": {"name": "t", "category": LINK, "hash": str(i), "seed": 0},
            "agent": {"type": "claw", "name": MARKUP},
            "status": "error",
            "reward": None,
            "error": HOSTILE,
        }
        for i in range(2)
    ]
    plan = SimpleNamespace(name="[blink]" + ANSI, trials=[None, None], out=tmp_path / "out[bold]")
    plan.out.mkdir()
    monkeypatch.setattr(run_cmd, "build_plan", lambda *a, **k: (plan, False))
    monkeypatch.setattr(run_cmd, "execute", lambda *a, **k: records)
    buf = io.StringIO()
    run_cmd.run_command(
        "x.yaml",
        agents=[],
        seeds="0",
        attempts=1,
        out=None,
        resume_dir=None,
        quiet=False,
        console=Console(file=buf, width=1000, color_system=None),
    )
    out = buf.getvalue()
    assert "\x1b" not in out and "\r" not in out and "\b" not in out
    error_lines = [line for line in out.splitlines() if line.startswith("error ")]
    assert len(error_lines) == 2 and all("FAKE LINE" in line and MARKUP in line for line in error_lines)
    assert "[blink]\\x1b[31mred" in out and "results: " + str(tmp_path / "out[bold]") in out


def test_error_messages_cannot_forge_lines(capsys):
    @friendly
    def fails() -> None:
        raise ClawgymError(f"check failed: file not found: {HOSTILE}\nerror: all checks passed")

    with pytest.raises(SystemExit):
        fails()
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "\b" not in err and "\u202e" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[0]]
    assert error_text("a\nb\x1b") == "a\n  b\\x1b"


# ---- HTML ----


def _outside_data(text: str) -> str:
    """The page without the bodies of its JSON data blocks."""
    return re.sub(r'(<script type="application/json" id="[\w-]+">).*?(</script>)', r"\1\2", text, flags=re.DOTALL)


def test_json_script_escapes_everything_that_could_end_the_block():
    block = json_script("x", {"a": "</script><!-- <b>&amp; \u2028\u2029 '\""})
    body = block[len('<script type="application/json" id="x">') : -len("</script>")]
    assert not set(body) & set("<>&\u2028\u2029")
    assert json.loads(body) == {"a": "</script><!-- <b>&amp; \u2028\u2029 '\""}


@pytest.fixture(scope="module")
def hostile_page(hostile, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    info = write_html([hostile], out)
    assert info["trials"] == 8
    return out


def test_html_has_no_markup_from_data(hostile_page):
    text = hostile_page.read_text(encoding="utf-8")
    assert text.count("</script>") == 3 and text.count("<script") == 3
    assert "<img" not in text and "\x1b" not in text and "\u202e" not in text and "\r" not in text
    outside = _outside_data(text)
    for needle in ("onerror", "alert(", "data-pwned", "evil", "javascript:", "[link="):
        assert needle not in outside, needle
    assert re.search(r"<title>ClawGym report: run\[bold\]\\x1b\[31m</title>", text)


def test_html_data_keeps_hostile_text_visible(hostile_page):
    text = hostile_page.read_text(encoding="utf-8")
    blocks = dict(re.findall(r'<script type="application/json" id="([\w-]+)">(.*?)</script>', text, re.DOTALL))
    index, details = json.loads(blocks["data-index"]), json.loads(blocks["data-details"])
    i = index["index"]["id"].index(BAD_ID)
    detail = details["details"][i]
    reason = detail["verdict"]["checks"][0]["reason"]
    reason = details["strings"][reason["@"]] if isinstance(reason, dict) else reason
    assert reason.startswith("file not found: evil\nFAKE LINE \\x1b[31mred")
    assert "invoice\\u202etxt.exe" in reason and "all good\\rFAKE" in reason and SCRIPT in reason
    assert index["index"]["tokens"][i] == 0 and index["index"]["reward"][i] == 0.0
    assert "x\\ny" in index["index"]["cat"] and detail["task"]["name"].startswith("evil\\nFAKE LINE")  # one line each
    assert "evil\nFAKE LINE" in details["strings"][detail["messages"][0]["content"]["@"]]  # messages keep theirs


def test_fast_scan_finds_every_character_printable_changes():
    from clawgym.report.html import _MAYBE_UNSAFE, _MAYBE_UNSAFE_LINE

    for code in [*range(0x10000), 0x1F600, 0xE0001, 0x10FFFF]:
        ch = chr(code)
        text = json.dumps([ch], ensure_ascii=False)
        if printable(ch, multiline=True) != ch:
            assert _MAYBE_UNSAFE.search(text), hex(code)
        if printable(ch) != ch:
            assert _MAYBE_UNSAFE_LINE.search(text), hex(code)


def test_build_report_data_is_visible_text(hostile):
    data = json.dumps(build_report_data([hostile]), ensure_ascii=False)
    assert "\x1b" not in data and "\u202e" not in data and "\ud800" not in data


def test_csp_allows_only_the_pages_own_script(hostile_page):
    text = hostile_page.read_text(encoding="utf-8")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text).group(1)
    code = re.search(r"<script>(.*?)</script>", text, re.DOTALL).group(1)
    digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp.replace("&#x27;", "'")
    assert "default-src 'none'" in csp.replace("&#x27;", "'") and "unsafe-inline" not in csp


def test_template_inserts_data_only_as_text():
    from clawgym.report.html import TEMPLATE

    code = TEMPLATE.read_text(encoding="utf-8")
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'querySelector("#" +',
        'setTimeout("',
    ):
        assert sink not in code, sink


def test_leaderboard_escapes_row_text():
    row = {
        "format": "clawgym.leaderboard-row/v1",
        "label": IMG + ANSI + "|x\ny",
        "model": SCRIPT,
        "agent": {"type": "claw"},
        "benchmark": {"version": "v1" + BIDI, "locked": True},
        "overall": {"mean_reward": 0.5, "pass_rate": 0.5},
        "trials": 1,
        "errors": 0,
        "date": "2024\x1b[2J",
    }
    md, page = markdown([row]), html_page([row])
    for text in (md, page):
        assert "<img" not in text and "<script>" not in text and "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[31m" in md and "\\|x y" not in md and "\\|x\\ny" in md


# ---- in a browser ----

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
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
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)


class _Elements(HTMLParser):
    """Every element of a serialized DOM, with its attributes."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _assert_no_elements_from_data(dom: str) -> None:
    for tag, attrs in _Elements(dom).found:
        assert tag not in ("img", "iframe", "object", "embed", "a", "form"), (tag, attrs)
        assert tag != "script" or attrs in (
            {},
            {"type": "application/json", "id": "data-index"},
            {"type": "application/json", "id": "data-details"},
        ), attrs
        assert not any(k.startswith("on") or k == "data-pwned" for k in attrs), (tag, attrs)


def _dump(url: str, profile: Path) -> tuple[str, str]:
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, result.stderr


@needs_chromium
@pytest.mark.parametrize("csp", [True, False], ids=["with-csp", "without-csp"])
def test_browser_shows_hostile_trial_as_text(hostile_page, tmp_path, csp):
    page = hostile_page
    if not csp:  # the page's code must be safe on its own, not only thanks to the policy
        page = tmp_path / "no-csp.html"
        page.write_text(
            re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", hostile_page.read_text(encoding="utf-8")),
            encoding="utf-8",
        )
    from urllib.parse import quote

    dom, log = _dump(page.as_uri() + "#trial=" + quote(BAD_ID, safe=""), tmp_path / "profile")
    assert 'data-ready="1"' in dom, dom[-3000:]
    _assert_no_elements_from_data(dom)
    assert 'id="detail-title">' in dom and "Verdict: 1 checks" in dom
    assert "&lt;img src=x onerror=" in dom  # the text itself is shown
    assert "file not found: evil\nFAKE LINE \\x1b[31mred" in dom and "invoice\\u202etxt.exe" in dom
    assert "[bold]x[/bold]" in dom.split('<script type="application/json"')[0]
    assert "Content Security Policy" not in log, log[-2000:]  # nothing of the page's own is blocked


@needs_chromium
@pytest.mark.parametrize(
    "fragment",
    ["%E0%A4%A", "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", "x%22%5D%2C%20*%20%7B%7D", "javascript:alert(1)"],
)
def test_browser_survives_hostile_fragments(hostile_page, tmp_path, fragment):
    dom, _ = _dump(hostile_page.as_uri() + "#trial=" + fragment, tmp_path / "profile")
    assert 'data-ready="1"' in dom, dom[-3000:]
    _assert_no_elements_from_data(dom)
    assert 'id="detail-title"' not in dom  # no such trial: nothing opened
