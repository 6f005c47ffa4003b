"""`clawgym bench review | run | leaderboard` and `clawgym diff` on tiny benchmarks built here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from clawgym.bench import review as review_mod
from clawgym.bench.discover import compile_instances, discover, key_of, version_info
from clawgym.bench.layout import version_of
from clawgym.bench.leaderboard import load_rows, markdown
from clawgym.bench.llm_review import parse_review
from clawgym.cli.main import main
from clawgym.spec.load import load_file

FIXTURE_LIB = Path(__file__).parent.parent / "fixtures" / "lib"
GOOD_ANSWER = {
    "ambiguity": {"problem": False, "notes": "clear"},
    "leaked_answers": {"problem": True, "notes": "numbers.txt holds the total"},
    "unasked_checks": {"problem": False, "notes": ""},
    "recommendation": "revise",
    "summary": "fix the leak",
}


def _instance(root: Path, category: str, name: str, *, task_name: str | None = None) -> Path:
    """A bench instance copied from the fixture task `good` (sum numbers into output/total.txt)."""
    folder = root / "specs" / "bench" / category / name
    folder.mkdir(parents=True)
    text = (FIXTURE_LIB / "specs" / "good.yaml").read_text()
    text = text.replace("name: good", f"name: {task_name or name}").replace(
        "category: productivity", f"category: {category}"
    )
    (folder / "task.yaml").write_text(text)
    return folder


@pytest.fixture
def bench(tmp_path, monkeypatch) -> Path:
    """A fixture library with a two-instance benchmark, as the current directory; returns the bench folder."""
    root = tmp_path / "lib"
    shutil.copytree(FIXTURE_LIB, root, ignore=shutil.ignore_patterns("bad"))
    _instance(root, "productivity", "sum-a")
    _instance(root, "analysis", "sum-b")
    monkeypatch.chdir(root)
    return root / "specs" / "bench"


def _invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def _reviews(folder: Path) -> dict:
    return yaml.safe_load((folder / "review.yaml").read_text())


def _hash(bench: Path, key: str) -> str:
    [inst] = [i for i in discover(bench) if key_of(i, bench) == key]
    return compile_instances([inst], bench)[key].hash


# ---------------------------------------------------------------------------------------------
# review


def test_review_records_decision_non_interactive(bench):
    res = _invoke(
        "bench",
        "review",
        "productivity/sum-a",
        "--reviewer",
        "Alice",
        "--decision",
        "accept",
        "--comment",
        "clear and fair",
    )
    assert res.exit_code == 0, res.output
    assert "Sum the numbers" in res.output and "numeric_close" in res.output and "not calibrated yet" in res.output
    [rec] = _reviews(bench / "productivity" / "sum-a")["reviews"]
    assert rec["decision"] == "accept" and rec["reviewer"] == "Alice" and rec["comment"] == "clear and fair"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(rec["date"]))
    assert rec["hash"] == _hash(bench, "productivity/sum-a")
    # a second review is appended, newest last
    _invoke("bench", "review", "sum-a", "--reviewer", "Bob", "--decision", "comment", "--comment", "see #12")
    recs = _reviews(bench / "productivity" / "sum-a")["reviews"]
    assert [r["reviewer"] for r in recs] == ["Alice", "Bob"] and recs[1]["decision"] == "comment"


def test_review_prompts_for_decision_and_comment(bench):
    answers = "reject\ntotal is ambiguous\nfail\n" + "\n" * 6  # clarity fails, the rest keep ok
    res = _invoke("bench", "review", "analysis/sum-b", "--reviewer", "Carol", input=answers)
    assert res.exit_code == 0, res.output
    [rec] = _reviews(bench / "analysis" / "sum-b")["reviews"]
    assert (rec["decision"], rec["reviewer"], rec["comment"]) == ("reject", "Carol", "total is ambiguous")
    assert rec["rubric"]["clarity"] == "fail" and rec["rubric"]["category"] == "ok" and len(rec["rubric"]) == 7


ALL_OK = "clarity=ok,hidden_conventions=ok,lazy_credit=ok,sense=ok,realism=ok,persona_fit=ok,category=ok"


def test_review_rubric_scores_are_recorded_and_bound_the_decision(bench):
    res = _invoke(
        "bench",
        "review",
        "sum-a",
        "--reviewer",
        "Ann",
        "--decision",
        "accept",
        "--rubric",
        ALL_OK.replace("realism=ok", "realism=minor"),
    )
    assert res.exit_code == 0, res.output
    [rec] = _reviews(bench / "productivity" / "sum-a")["reviews"]
    assert rec["rubric"]["realism"] == "minor" and rec["rubric"]["clarity"] == "ok"
    # an accept cannot carry a failed criterion, a rubric reject must fail one, and every criterion is scored
    bad = [
        (["--decision", "accept", "--rubric", ALL_OK.replace("sense=ok", "sense=fail")], "cannot accept"),
        (["--decision", "reject", "--comment", "meh", "--rubric", ALL_OK], "must fail at least one"),
        (["--decision", "accept", "--rubric", "clarity=ok"], "unscored"),
        (["--decision", "accept", "--rubric", "clearness=ok"], "criteria: clarity"),
        (["--decision", "accept", "--rubric", ALL_OK.replace("category=ok", "category=great")], "unknown verdict"),
    ]
    for args, message in bad:
        res = CliRunner().invoke(main, ["bench", "review", "sum-b", "--reviewer", "x", *args])
        assert res.exit_code == 2 and message in res.output, (args, res.output)
    assert not (bench / "analysis" / "sum-b" / "review.yaml").exists()


def test_review_summary_counts_current_decisions(bench):
    _invoke("bench", "review", "sum-a", "--reviewer", "A", "--decision", "accept", "--rubric", ALL_OK)
    _invoke(
        "bench",
        "review",
        "sum-b",
        "--reviewer",
        "B",
        "--decision",
        "reject",
        "--comment",
        "gives the count away",
        "--rubric",
        ALL_OK.replace("sense=ok", "sense=fail"),
    )
    res = _invoke("bench", "review", "--all", "--summary")
    assert res.exit_code == 0, res.output
    assert "reviewed 2, accepted 1 (50%), rejected 1, not reviewed 0" in res.output
    assert "sense: fail 1, minor 0" in res.output
    # an instance changed since its review counts as not reviewed
    spec = bench / "analysis" / "sum-b" / "task.yaml"
    spec.write_text(spec.read_text().replace("write the total", "write only the total"))
    res = _invoke("bench", "review", "--all", "--summary")
    assert "reviewed 1, accepted 1 (100%), rejected 0, not reviewed 1" in res.output


def test_review_user_errors(bench):
    res = CliRunner().invoke(main, ["bench", "review", "sum-a", "--reviewer", "x", "--decision", "reject"])
    assert res.exit_code == 2 and "needs a comment" in res.output
    res = CliRunner().invoke(main, ["bench", "review", "sum-z", "--reviewer", "x", "--decision", "accept"])
    assert res.exit_code == 2 and "no benchmark instance 'sum-z'" in res.output and "sum-a" in res.output
    assert not (bench / "productivity" / "sum-a" / "review.yaml").exists()


def test_review_of_older_hash_is_stale(bench):
    folder = bench / "productivity" / "sum-a"
    _invoke("bench", "review", "sum-a", "--reviewer", "Alice", "--decision", "accept")
    [inst] = [i for i in discover(bench) if i.name == "sum-a"]
    task = compile_instances([inst], bench)["productivity/sum-a"]
    assert review_mod.latest_decision(folder, task)["reviewer"] == "Alice"
    spec = folder / "task.yaml"
    spec.write_text(spec.read_text().replace("write the total", "write only the total"))
    changed = compile_instances([inst], bench)["productivity/sum-a"]
    assert changed.hash != task.hash
    assert review_mod.is_stale(_reviews(folder)["reviews"][0], changed)
    assert review_mod.latest_decision(folder, changed) is None
    res = _invoke("bench", "review", "sum-a", "--reviewer", "Bob", "--decision", "accept")
    assert "stale" in res.output and "current" not in res.output.split("earlier reviews")[1].split("recorded")[0]


def _policy_file(tmp_path: Path, turns: list[str]) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"type": "scripted", "turns": turns}))
    return str(path)


def test_llm_review_records_parsed_answer(bench, tmp_path):
    policy = _policy_file(tmp_path, ["Here you go:\n```json\n" + json.dumps(GOOD_ANSWER) + "\n```"])
    res = _invoke("bench", "review", "sum-a", "--policy", policy, "--llm-only")
    assert res.exit_code == 0, res.output
    data = _reviews(bench / "productivity" / "sum-a")
    assert "reviews" not in data
    [rec] = data["llm_reviews"]
    assert rec["review"] == GOOD_ANSWER and rec["hash"] == _hash(bench, "productivity/sum-a")
    assert rec["policy"]["type"] == "scripted" and rec["attempts"] == 1 and "parse_error" not in rec
    assert "```json" in rec["raw"]


def test_llm_review_records_junk_with_parse_error(bench, tmp_path):
    policy = _policy_file(tmp_path, ["I think [/b] this task is fine", '{"ambiguity": 1}'])
    res = _invoke("bench", "review", "sum-b", "--policy", policy, "--reviewer", "Dan", "--decision", "accept")
    assert res.exit_code == 0, res.output
    assert "unusable answer" in res.output
    data = _reviews(bench / "analysis" / "sum-b")
    [rec] = data["llm_reviews"]
    assert "review" not in rec and rec["attempts"] == 2 and rec["raw"] == '{"ambiguity": 1}'
    assert "ambiguity" in rec["parse_error"]
    assert data["reviews"][0]["reviewer"] == "Dan"  # the human review is recorded beside it


def test_parse_review_shapes():
    assert parse_review(json.dumps(GOOD_ANSWER))["recommendation"] == "revise"
    for junk, problem in (
        ("", "empty"),
        ("hello", "not JSON"),
        ("[1, 2]", "object"),
        (json.dumps({**GOOD_ANSWER, "recommendation": "maybe"}), "recommendation"),
    ):
        with pytest.raises(ValueError, match=problem):
            parse_review(junk)


# ---------------------------------------------------------------------------------------------
# diff


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_LIB, root, ignore=shutil.ignore_patterns("bad"))
    (root / "specs" / "effects.yaml").unlink()
    good = root / "specs" / "good.yaml"
    for name in ("keep", "edit", "drop"):
        (root / "specs" / f"{name}.yaml").write_text(good.read_text().replace("name: good", f"name: {name}"))
    good.unlink()
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    monkeypatch.chdir(root)
    return root


def test_diff_lists_added_changed_removed(repo):
    edit = repo / "specs" / "edit.yaml"
    edit.write_text(edit.read_text().replace("// 2 }}", "// 2 + 1 }}"))
    (repo / "specs" / "drop.yaml").unlink()
    (repo / "specs" / "new.yaml").write_text(
        (repo / "specs" / "keep.yaml").read_text().replace("name: keep", "name: new")
    )
    status_before = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    res = _invoke("diff", "HEAD", "--seeds", "0")
    assert res.exit_code == 0, res.output
    listing = [line for line in res.output.splitlines() if re.match(r"(added|changed|removed) ", line)]
    assert listing == [
        "added    new@0  (specs/new.yaml)",
        "changed  edit@0  (specs/edit.yaml)",
        "removed  drop@0  (specs/drop.yaml)",
    ]
    # keep.yaml did not change: it is not compiled
    assert (
        "1 added, 1 changed, 1 removed, 0 unchanged since HEAD (seeds 0); 1 spec file not affected, not compiled"
    ) in res.output
    old, new = map(int, re.search(r"^-  expected: (\d+)\n\+  expected: (\d+)$", res.output, re.MULTILINE).groups())
    assert new == old + 1
    # the working tree and index are untouched
    assert (
        subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
        == status_before
    )
    data = json.loads(_invoke("diff", "HEAD", "--json", "--seeds", "1").output)
    assert data["seeds"] == [0, 1] and data["not_compiled"] == 1
    assert [c["key"] for c in data["changed"]] == ["edit@0", "edit@1"]
    assert [a["key"] for a in data["added"]] == ["new@0", "new@1"]


def test_diff_shows_instruction_and_file_changes(repo):
    edit = repo / "specs" / "edit.yaml"
    edit.write_text(edit.read_text().replace("Sum the numbers", "Add up the numbers").replace("{{ i }}", "{{ i }} "))
    res = _invoke("diff", "HEAD", "--paths", "specs/edit.yaml")
    assert "-Sum the numbers" in res.output and "+Add up the numbers" in res.output
    assert "files changed: input/numbers.txt" in res.output
    assert "0 added, 3 changed, 0 removed, 0 unchanged" in res.output


def test_diff_errors(repo, tmp_path, monkeypatch):
    res = CliRunner().invoke(main, ["diff", "no-such-rev"])
    assert res.exit_code == 2 and "revision 'no-such-rev' does not exist" in res.output
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    res = CliRunner().invoke(main, ["diff", "HEAD"])
    assert res.exit_code == 2 and "is not inside a git repository" in res.output


# ---------------------------------------------------------------------------------------------
# bench run and leaderboard


def _records(run_dir: Path) -> dict[str, float]:
    return {p.parent.name: json.loads(p.read_text())["finished_at"] for p in run_dir.glob("trials/*/record.json")}


def test_bench_run_rows_resume_and_leaderboard(bench, bwrap):
    res = _invoke("bench", "run", "--agent", "oracle", "-k", "2", "--quiet")
    assert res.exit_code == 0, res.output
    row = json.loads(Path("results/leaderboard/oracle.json").read_text())
    hashes = {key.split("/")[1]: t.hash for key, t in compile_instances(discover(bench), bench).items()}
    assert row["benchmark"]["version"] == version_of(hashes) and row["benchmark"]["locked"] is False
    o = row["overall"]
    assert (o["mean_reward"], o["pass_rate"], o["pass@1"], o["pass@2"], o["pass^2"]) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert o["mean_reward_ci"] == [1.0, 1.0] and o["pass@2_ci"] == [1.0, 1.0]
    assert (o["instances"], o["trials"], o["errors"], row["k"]) == (2, 4, 0, 2)
    assert set(row["categories"]) == {"analysis", "productivity"} and row["categories"]["analysis"]["trials"] == 2
    assert o["mean_tokens"] == 0 and o["mean_turns"] == 0 and row["agent"] == {"type": "oracle"}

    before = _records(Path("runs/bench/oracle"))
    res = _invoke("bench", "run", "--agent", "oracle", "-k", "2", "--quiet")
    assert "resuming: 4 of 4 trials already finished" in res.output
    assert _records(Path("runs/bench/oracle")) == before

    res = _invoke("bench", "run", "--agent", "nop", "-k", "2", "--quiet", "--label", "do-nothing")
    nop = json.loads(Path("results/leaderboard/do-nothing.json").read_text())["overall"]
    assert (nop["mean_reward"], nop["pass@2"], nop["pass^2"]) == (0.0, 0.0, 0.0) and nop["pass_rate_ci"] == [0.0, 0.0]

    res = _invoke("bench", "leaderboard", "--out", "lb.md", "--html", "lb.html")
    assert res.exit_code == 0, res.output
    md, page = Path("lb.md").read_text(), Path("lb.html").read_text()
    rows = [line for line in md.splitlines() if line.startswith(("| 1 ", "| 2 "))]
    assert rows[0].startswith("| 1 | oracle |") and rows[1].startswith("| 2 | do-nothing |")
    assert "1.000 [1.000, 1.000]" in rows[0] and "Analysis & Reasoning" in md and "⚠ unlocked" in md
    assert page.index(">oracle<") < page.index(">do-nothing<") and '<table class="stats">' in page


def test_bench_run_refuses_stale_lock(bench, bwrap):
    from clawgym.bench.layout import find_instances
    from clawgym.bench.lock import current_hashes, write_lock

    lock = write_lock(bench, current_hashes(find_instances(bench)))  # what 'clawgym bench lock' writes
    hashes = {k: t.hash for k, t in compile_instances(discover(bench), bench).items()}
    assert version_info(bench, hashes).locked and version_info(bench, hashes).version == lock["version"]
    res = _invoke("bench", "run", "--agent", "nop", "-k", "1", "--quiet", "--only", "analysis")
    row = json.loads(Path("results/leaderboard/nop.json").read_text())
    assert row["benchmark"]["locked"] and row["benchmark"]["version"] == lock["version"]
    assert row["benchmark"]["run_instances"] == 1 and row["trials"] == 1

    spec = bench / "analysis" / "sum-b" / "task.yaml"
    spec.write_text(spec.read_text().replace("write the total", "write just the total"))
    res = CliRunner().invoke(main, ["bench", "run", "--agent", "nop", "-k", "1", "--quiet", "--label", "x"])
    assert res.exit_code == 2 and "lock is stale" in res.output and "changed sum-b" in res.output
    res = _invoke(
        "bench",
        "run",
        "--agent",
        "nop",
        "-k",
        "1",
        "--quiet",
        "--label",
        "x",
        "--allow-unlocked",
        "--only",
        "analysis/sum-b",
    )
    row = json.loads(Path("results/leaderboard/x.json").read_text())
    assert (
        row["benchmark"]["stale"] and not row["benchmark"]["locked"] and row["benchmark"]["version"] != lock["version"]
    )

    md = markdown(load_rows(Path("results/leaderboard")))
    assert "other version" in md  # two versions on one board are flagged


def test_imported_layout_any_depth(tmp_path, monkeypatch, bwrap):
    """An imported benchmark: task.yaml one level down, no lock; runs through the same command."""
    root = tmp_path / "lib"
    shutil.copytree(FIXTURE_LIB, root, ignore=shutil.ignore_patterns("bad"))
    imported = root / "specs" / "imported" / "pub"
    for name in ("task-0001", "task-0002"):
        (imported / name).mkdir(parents=True)
        (imported / name / "task.yaml").write_text(
            (FIXTURE_LIB / "specs" / "good.yaml").read_text().replace("name: good", f"name: {name}")
        )
    monkeypatch.chdir(root)
    assert [key_of(i, imported) for i in discover(imported)] == ["task-0001", "task-0002"]
    res = _invoke(
        "bench",
        "run",
        "--agent",
        "oracle",
        "-k",
        "1",
        "--quiet",
        "--bench",
        "specs/imported/pub",
        "--label",
        "pub-oracle",
    )
    assert res.exit_code == 0, res.output
    row = json.loads(Path("results/leaderboard/pub-oracle.json").read_text())
    assert row["benchmark"]["path"] == "specs/imported/pub" and not row["benchmark"]["locked"]
    assert row["overall"]["mean_reward"] == 1.0 and row["overall"]["instances"] == 2


def test_agent_file_and_errors(bench, tmp_path):
    from clawgym.bench.runbench import agent_config, default_label, describe_agent

    config = agent_config(model="embedded", agent=None, max_tokens=48, max_turns=2)
    assert config == {"type": "claw", "policy": {"type": "hf", "model": "embedded", "max_tokens": 48}, "max_turns": 2}
    assert default_label(config, None) == "embedded"
    secret = {"type": "claw", "policy": {"type": "openai", "model": "m", "api_key": "sk-1", "max_tokens": 5}}
    assert describe_agent(secret)["policy"] == {"type": "openai", "model": "m", "max_tokens": 5}

    path = tmp_path / "my-agent.yaml"
    path.write_text("type: command\nrun: ./agent.sh\npolicy: {type: scripted}\n")
    config = agent_config(model=None, agent=str(path))
    assert config["type"] == "command" and default_label(config, str(path)) == "my-agent"
    path.write_text("type: command\npolicy: {type: scripted}\n")
    res = CliRunner().invoke(main, ["bench", "run", "--agent", str(path)])
    assert res.exit_code == 2 and "run" in res.output
    res = CliRunner().invoke(main, ["bench", "run"])
    assert res.exit_code == 2 and "--model MODEL or --agent AGENT" in res.output
    res = CliRunner().invoke(main, ["bench", "run", "--model", "embedded", "--bench", "nowhere"])
    assert res.exit_code == 2 and "no benchmark folder at nowhere" in res.output
    assert load_file(path).data["type"] == "command"


def test_a_row_with_infrastructure_outcomes_is_marked_and_shows_their_rate(bench, bwrap):
    agent = Path("down.yaml")
    agent.write_text(
        "type: claw\nname: down\npolicy: {type: openai, model: m, base_url: 'http://127.0.0.1:9/v1', max_retries: 0}\n"
    )
    _invoke("bench", "run", "--agent", str(agent), "-k", "1", "--quiet", "--label", "down")
    row = json.loads(Path("results/leaderboard/down.json").read_text())
    assert row["outcomes"] == {"model_error": 1.0} and row["infrastructure"] == 1.0
    assert row["overall"]["mean_reward"] is None  # an endpoint that never answered is not a reward of 0
    _invoke("bench", "run", "--agent", "oracle", "-k", "1", "--quiet")
    md = markdown(load_rows(Path("results/leaderboard")))
    down = next(line for line in md.splitlines() if "| down |" in line)
    ok = next(line for line in md.splitlines() if "| oracle |" in line)
    assert "⚠" in down and "infrastructure outcomes 100%" in down and "model_error* 100%" in down
    assert "infrastructure outcomes" not in ok
    assert "infrastructure outcome (a model endpoint" in md  # the note says what the mark means
