"""Every artefact a person opens is inert: one hostile corpus (terminal escapes, window-title and
clipboard writes, carriage-return overwrites, bidi overrides, C1 controls, bytes that are not UTF-8)
in file contents, file names, final messages, grader reasons and task names of a real run, then no
raw character of that class in workspace.diff, `clawgym run`, `report`, `compare`, `diff`, the
leaderboard, the HTML pages and the exported datasets' human-readable fields; the escapes are shown
instead, so a reader sees what was hidden. Training content (messages) stays byte for byte."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.files.textsafe import html_safe, markdown_code, markdown_safe, printable, split_lines
from conftest import BWRAP_PROBLEM

ESCAPES = [
    "\x1b[31mred\x1b[0m",  # SGR colours
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b]0;pwned title\x07",  # window title
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",  # OSC 52: write the clipboard
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[6n",  # ask the terminal to type a reply
    "\x1bP+q544e\x1b\\",  # DCS
    "\x1b[?1049h",  # alternate screen
    "\x1bc",  # full reset
    "\x1b[1;1H",  # cursor to the top
]
CORPUS = " ".join(
    [
        *ESCAPES,
        "all good\rFAKE",
        "safe\b\b\b\bRM",
        "\x9b31m\x9d0;t\x9c\x85",  # C1 CSI, OSC, ST, NEL
        "invoice\u202etxt.exe",
        "\u2066iso\u2069\u202aemb\u202c",
        "line\u2028sep\u2029para",
        "zero\u200bwidth\ufeff",
        "[bold]x[/bold] <img src=x onerror=alert(1)> |pipe| `tick` [link](http://evil.example/)",
    ]
)
# What must never reach a reader raw (newline and tab are allowed where they are structure).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ud800-\udfff]")
# What a reader sees instead.
SHOWN = ["\\x1b]52;c;ZWNobyBwd25lZA==\\a", "\\x1b]0;pwned title\\a", "\\x1b[2J", "invoice\\u202etxt.exe", "\\x9b31m"]

TASK = """\
apiVersion: clawgym/v1
kind: Task
name: inert
category: productivity
persona: ada
skills: [notes]
workspace: plain
files:
  - path: input/numbers.txt
    content: "1\\n2\\n"
instruction: Sum the numbers in input/numbers.txt and write the total to output/total.txt.
solution:
  - exec: mkdir -p output && echo 3 > output/total.txt
checks:
  - {type: file_exists, path: output/total.txt}
  - {type: python, name: quotes the agent, script: quote.py, args: ["${CLAWGYM_WORKSPACE}"]}
  - {type: python, name: dies loudly, script: die.py, args: ["${CLAWGYM_WORKSPACE}"]}
"""
READ = (
    "import json, os, sys\n"
    'text = open(os.path.join(sys.argv[1], "output", "total.txt"), encoding="utf-8", errors="replace").read()\n'
)
# The black-box agent: hostile contents and names, a file that is not UTF-8, one model call.
AGENT = f"""
import json, os, urllib.request as u
corpus = {ascii(CORPUS)}
os.makedirs("output", exist_ok=True)
open("output/total.txt", "wb").write(corpus.encode() + b" \\xff\\xfe not utf-8\\n")
with open("input/numbers.txt", "a") as f:
    f.write("3 " + corpus + "\\n")
open("evil " + corpus[:70].replace("/", "_") + ".txt", "w").write("x\\n")
fd = os.open(b"raw\\xffname.txt", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"y\\n")
os.close(fd)
body = json.dumps({{"model": "x", "messages": [{{"role": "user", "content": corpus}}]}}).encode()
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
u.urlopen(u.Request(url, data=body, headers={{"Content-Type": "application/json"}}))
print(corpus)
"""
FIXTURE_LIB = Path(__file__).parent.parent / "fixtures" / "lib"


def assert_inert(text: str, where: str) -> None:
    found = RAW.search(text)
    assert found is None, f"{where}: raw {found.group()!r}: {text[max(0, found.start() - 120) : found.start() + 60]!r}"


def assert_shown(text: str, where: str, needles: list[str] = SHOWN) -> None:
    missing = [n for n in needles if n not in text]
    assert not missing, f"{where}: escapes not shown: {missing}"


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), terminal_width=250)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> dict[str, Path | str]:
    """A real run of a hostile `command` agent (and nop), then the task names, categories and agent
    names of its records made hostile too (as a foreign or hand-edited record would be)."""
    if BWRAP_PROBLEM:
        pytest.skip(BWRAP_PROBLEM)
    root = tmp_path_factory.mktemp("inert")
    shutil.copytree(FIXTURE_LIB, root / "lib", ignore=shutil.ignore_patterns("bad"))
    spec_dir = root / "lib" / "specs" / "inert"
    spec_dir.mkdir()
    (spec_dir / "inert.yaml").write_text(TASK)
    (spec_dir / "quote.py").write_text(READ + 'print(json.dumps({"score": 0, "reason": "the agent wrote: " + text}))\n')
    (spec_dir / "die.py").write_text(READ + "sys.stderr.write(text)\nsys.exit(3)\n")
    agent = {
        "type": "command",
        "name": "hostile",
        "run": "python3 - <<'EOF'\n" + AGENT + "\nEOF\n",
        "policy": {"type": "scripted", "turns": ["Done. " + CORPUS]},
    }
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Run",
        "name": "inert",
        "tasks": [str(spec_dir / "inert.yaml")],
        "seeds": [0],
        "agents": [agent, {"type": "nop"}],
        "retries": {"max": 0},
        "out": str(root / "out"),
        "sandbox": {"type": "local"},
    }
    (root / "run.yaml").write_text(json.dumps(spec))
    run_output = _invoke("run", str(root / "run.yaml"))
    trial = next((root / "out" / "trials").glob("*hostile*"))
    for folder in (root / "out" / "trials").iterdir():
        for name in ("record.json", "trajectory.json"):
            data = json.loads((folder / name).read_text())
            data["task"].update(name="imported " + CORPUS, category="cat " + CORPUS)
            data["agent"]["name"] = data["agent"]["name"] + " " + CORPUS
            (folder / name).write_text(json.dumps(data))
    return {"root": root, "out": root / "out", "trial": trial, "run_output": run_output}


def test_textsafe_helpers_make_the_class_visible():
    assert split_lines("a\rb\nc\u2028d\x0ce\n") == ["a\rb\n", "c\u2028d\x0ce\n"] and split_lines("x") == ["x"]
    assert printable("a\udcffb") == "a\\xffb"  # a byte that was not UTF-8
    assert printable("tag\U000e0041 zw\u200b bom\ufeff") == "tag\\U000e0041 zw\\u200b bom\\ufeff"
    assert markdown_safe("a|b `c` <i>&#x202e;</i> & [x](y) \x1b") == (
        "a\\|b \\`c\\` &lt;i&gt;&amp;#x202e;&lt;/i&gt; & [x]\\(y) \\x1b"
    )
    assert markdown_code("a``b") == "```a``b```" and markdown_code("`x|", table=True) == "`` `x\\| ``"
    assert html_safe("<b>\u202e</b>") == "&lt;b&gt;\\u202e&lt;/b&gt;"


def test_workspace_diff_shows_contents_and_names_escaped(hostile_run):
    data = (hostile_run["trial"] / "workspace.diff").read_bytes()
    text = data.decode("utf-8")  # strict: no byte that is not UTF-8 either
    assert_inert(text, "workspace.diff")
    assert_shown(text, "workspace.diff", [*SHOWN, "all good\\rFAKE", "\\xff\\xfe not utf-8", '"b/raw\\udcffname.txt"'])
    lines = text.split("\n")
    # One escaped line per line of the file, a readable unified diff.
    assert [line for line in lines if line.startswith("+3 ")] == ["+3 " + printable(CORPUS)]
    assert " 1" in lines and " 2" in lines and "--- a/input/numbers.txt" in lines
    assert any(line.startswith('+++ "b/evil \\x1b[31mred') for line in lines)


def test_run_and_report_tables(hostile_run):
    assert_inert(hostile_run["run_output"], "clawgym run")
    out = _invoke("report", str(hostile_run["out"]))
    assert_inert(out, "clawgym report")
    assert "hostile \\x1b[31mred\\x1b[0m \\x1b[2J\\x1b[H \\x1b]0;pwned title\\a \\x1b]52;c;" in out


def test_compare_terminal_and_page(hostile_run, tmp_path):
    page = tmp_path / "compare.html"
    out = _invoke("compare", str(hostile_run["out"]), "--by", "task", "--by", "category", "--html", str(page))
    assert_inert(out, "clawgym compare")
    assert "hostile \\x1b[31mred\\x1b[0m" in out and "[bold]x[/bold]" in out
    text = page.read_text(encoding="utf-8")
    assert_inert(text, "compare --html")
    assert_shown(text, "compare --html")
    assert "<img" not in text


def test_html_report_file(hostile_run, tmp_path):
    page = tmp_path / "report.html"
    _invoke("report", str(hostile_run["out"]), "--html", str(page))
    text = page.read_text(encoding="utf-8")
    assert_inert(text, "report --html")
    # the diff, the reasons quoting the agent's file and the grader's stderr, the final message
    for needle in ("\\\\xff\\\\xfe not utf-8", "the agent wrote: ", "stderr ends: ", "Done. \\\\x1b[31mred"):
        assert needle in text, needle
    assert_shown(text.replace("\\\\", "\\"), "report --html")


def test_exported_dataset_fields_for_people_are_escaped(hostile_run, tmp_path):
    rows_path = tmp_path / "rows.jsonl"
    _invoke("export", "trajectories", str(hostile_run["out"]), "--out", str(rows_path), "--format", "openai")
    rows = [json.loads(line) for line in rows_path.read_text().split("\n") if line]  # not splitlines: \x85 is data
    assert len(rows) == 1
    meta = rows[0]["metadata"]
    for key in ("task_id", "task_name", "category", "agent"):
        assert_inert(meta[key], key)
    assert meta["task_name"] == "imported " + printable(CORPUS)
    assert rows[0]["messages"][0]["content"] == CORPUS  # training content: byte for byte
    datasets = pytest.importorskip("datasets")
    _invoke("export", "trajectories", str(hostile_run["out"]), "--hf", str(tmp_path / "hf"))
    row = datasets.load_from_disk(str(tmp_path / "hf"))[0]
    for key in ("task_id", "category", "status"):
        assert_inert(row[key], key)
    assert row["category"] == "cat " + printable(CORPUS)
    assert row["messages"][0]["content"] == CORPUS


def test_leaderboard_markdown_page_and_terminal(tmp_path):
    rows = tmp_path / "rows"
    rows.mkdir()
    row = {
        "format": "clawgym.leaderboard-row/v1",
        "label": "label " + CORPUS,
        "model": "model " + CORPUS,
        "agent": {"type": "claw"},
        "benchmark": {"version": "v1 " + CORPUS, "locked": True},
        "overall": {"mean_reward": 0.5, "pass_rate": 0.5},
        "categories": {"cat " + CORPUS: {"mean_reward": 0.5}},
        "trials": 1,
        "errors": 0,
        "date": "2024" + CORPUS,
    }
    (rows / "row.json").write_text(json.dumps(row))
    md, page = tmp_path / "board.md", tmp_path / "board.html"
    out = _invoke("bench", "leaderboard", "--dir", str(rows), "--out", str(md), "--html", str(page))
    assert_inert(out, "leaderboard terminal")
    assert "[bold]x[/bold]" in out
    for path in (md, page):
        text = path.read_text(encoding="utf-8")
        assert_inert(text, path.name)
        assert_shown(text, path.name)
        assert "<img" not in text
    table = [line for line in md.read_text().splitlines() if line.startswith("| ")]
    assert len(table) == 2 and all(line.count(" | ") == table[0].count(" | ") for line in table)  # no cell split
    assert "\\|pipe\\|" in table[1] and "\\`tick\\`" in table[1] and "[link]\\(http" in table[1]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


def test_clawgym_diff_terminal_and_markdown(tmp_path, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE_LIB, repo, ignore=shutil.ignore_patterns("bad", "effects.yaml"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    monkeypatch.chdir(repo)
    spec = repo / "specs" / "good.yaml"
    hostile = json.dumps("Sum them. " + CORPUS + "\n```\nnot a fence")  # JSON strings are YAML strings
    spec.write_text(re.sub(r"(?m)^instruction: .*$", lambda _: "instruction: " + hostile, spec.read_text()))
    (repo / "specs" / ("new " + CORPUS[:70].replace("/", "_") + ".yaml")).write_text(
        spec.read_text().replace("name: good", "name: other")
    )
    text = _invoke("diff", "HEAD", "--seeds", "0")
    markdown = _invoke("diff", "HEAD", "--seeds", "0", "--format", "markdown")
    for where, out in (("clawgym diff", text), ("clawgym diff --format markdown", markdown)):
        assert_inert(out, where)
        assert "\\x1b]52;c;ZWNobyBwd25lZA==\\a" in out and "invoice\\u202etxt.exe" in out and "all good\\rFAKE" in out
    assert "added    other@0  (specs/new \\x1b[31mred" in text
    assert "+Sum them. \\x1b[31mred" in text
    # the fence outlives the content's own; the new spec's name is one code span in its heading
    assert "````diff" in markdown and "### `specs/new \\x1b[31mred" in markdown
    assert "<img" not in markdown.split("````diff")[0]
