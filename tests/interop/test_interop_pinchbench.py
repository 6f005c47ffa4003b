"""PinchBench in and out, on the clone-like fixture repository tests/fixtures/pinchbench/repo (task
files in the published style: front matter, sections, a python grader, manifest, assets/)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clawgym.checks.openclaw_transcript import session_events
from clawgym.checks.pinchbench_score import automated_score, hybrid_score, judge_total, run_score
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.compile.workspace import materialize
from clawgym.interop.pinchbench_export import export_command
from clawgym.interop.pinchbench_format import read_task_file
from clawgym.interop.pinchbench_import import import_repo
from clawgym.policy.scripted import tool_call
from clawgym.report.pinchbench import pinchbench_scores
from clawgym.run.trial import Trial, execute_trial
from clawgym.spec.task import thaw
from clawgym.verify import verify
from clawgym.verify.grade import combine_hybrid
from clawgym.verify.judge import RubricResult

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pinchbench"
REPO = FIXTURES / "repo"
TASK_FILES = sorted(p.name for p in (REPO / "tasks").glob("task_*.md"))
CLOCK = "2026-03-02T09:00:00Z"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pinchbench")
    outcomes = import_repo(REPO, out)
    assert len(outcomes) == len(TASK_FILES) == 15
    assert all(o.status != "rejected" for o in outcomes), [o.reasons for o in outcomes if o.status == "rejected"]
    return out


def compiled(imported: Path, task_id: str):
    return compile_task(load_task_spec(imported / task_id.replace("_", "-") / "task.yaml"), 0)


# ---------------------------------------------------------------------------------------------
# Import


def test_import_report_suite_and_order(imported):
    rows = [json.loads(ln) for ln in (imported / "import-report.jsonl").read_text().splitlines()]
    assert rows[0]["task_id"] == "task_sanity"  # run_first, then the manifest's order
    assert [r["task_id"] for r in rows[:3]] == ["task_sanity", "task_calendar", "task_config_audit"]
    warned = {r["task_id"] for r in rows if r["status"] == "warned"}
    assert warned == {"task_project_plan", "task_gh_issues", "task_npm_markdownlint", "task_05_weather"}
    suite = json.loads((imported / "pinchbench-suite.json").read_text())
    assert suite["size"] == 15 and suite["run_first"] == ["task_sanity"] and len(suite["core"]) == 5
    assert (imported / "pinchbench-manifest.yaml").read_bytes() == (REPO / "tasks" / "manifest.yaml").read_bytes()


def test_front_matter_id_is_authoritative(imported):
    task = compiled(imported, "task_05_weather")  # the file is task_04_weather.md
    assert task.name == "task-05-weather"
    assert (imported / "task-05-weather" / "pinchbench" / "task_04_weather.md").is_file()


def test_prompt_is_the_whole_section_with_its_headings(imported):
    task = compiled(imported, "task_project_plan")
    assert task.instruction.startswith("I need a project plan")
    assert "## 2. Timeline" in task.instruction and task.instruction.endswith("Keep the whole plan under two pages.")
    assert "Expected Behavior" not in task.instruction


def test_fixtures_category_timeout_and_tags(imported):
    csv_task = compiled(imported, "task_csv_sales")
    assert csv_task.files["sales_q1.csv"] == (REPO / "assets" / "csvs" / "sales_q1.csv").read_bytes()
    assert csv_task.subcategory == "csv_analysis" and csv_task.category == "analysis"  # the manifest's override
    log = compiled(imported, "task_log_errors")
    assert log.subcategory == "log_analysis" and log.category == "systems"
    assert log.files["logs/app.log"].startswith(b"2026-02-27 08:00:01 INFO")  # inline content
    assert log.limits["seconds"] == 120 and compiled(imported, "task_sanity").limits["seconds"] == 60
    spec = load_task_spec(imported / "task-gh-issues" / "task.yaml").data
    assert "prerequisite-unmet" in spec["tags"] and "core" not in spec["tags"]
    assert "run-first" in load_task_spec(imported / "task-sanity" / "task.yaml").data["tags"]


def test_rubric_and_hybrid_weights(imported):
    csv_task = compiled(imported, "task_csv_sales")
    assert csv_task.rubric_weight == pytest.approx(0.4)  # 0.6 / 0.4
    assert compiled(imported, "task_meeting_actions").rubric_weight == 0.5  # unset: 0.5 / 0.5
    assert compiled(imported, "task_project_plan").rubric_weight == pytest.approx(0.6)
    crits = [c["criterion"] for c in csv_task.rubric]
    assert len(crits) == 3 and crits[0].startswith("Criterion 1: Accuracy of the figures (Weight: 40%)")
    assert {c["weight"] for c in csv_task.rubric} == {1}  # the runner does not apply them
    brief = compiled(imported, "task_research_brief")  # llm_judge without a rubric
    assert brief.rubric_weight == 1.0 and len(brief.rubric) == 4
    assert brief.rubric[0]["criterion"].startswith("brief.md exists")
    automated = compiled(imported, "task_calendar")
    assert not automated.rubric and automated.checks[0]["type"] == "pinchbench_grade"


def test_multi_session_prompts_in_order(imported):
    task = compiled(imported, "task_memory_recall")
    assert task.instruction.startswith("Please remember this")
    (later,) = task.followups
    assert later["message"].startswith("Quick question") and later["new_session"] is True
    assert len(task.checks[0]["prompt"]) == 2


def test_bad_task_files_are_rejected_with_the_reason(tmp_path):
    outcomes = {o.source.split("/")[-1]: o for o in import_repo(FIXTURES / "bad", tmp_path / "out")}
    assert outcomes["task_good.md"].status == "imported"
    expected = {
        "task_no_front_matter.md": "1: no YAML front matter",
        "task_bad_grading_type.md": "grading_type 'manual' is none of automated, llm_judge, hybrid",
        "task_missing_asset.md": "assets/csvs/not_there.csv not found",
        "task_no_grader.md": "holds no ```python block",
        "task_syntax_error.md": "tasks/task_syntax_error.md:18: the grader does not compile",
        "task_no_prompt.md": "no `## Prompt` section",
        "task_escaping_dest.md": "leaves its folder",
    }
    for name, text in expected.items():
        assert outcomes[name].status == "rejected" and text in outcomes[name].reasons[0], outcomes[name].reasons
    assert not (tmp_path / "out" / "task-syntax-error").exists()


# ---------------------------------------------------------------------------------------------
# Parity with the original grader, run directly (plain Python on the host, as PinchBench's runner does)

DIRECT = r"""
import datetime, json, sys
real = datetime.datetime
class Frozen(real):
    @classmethod
    def now(cls, tz=None):
        return real(2026, 3, 2, 9, 0, 0) if tz is None else real(2026, 3, 2, 9, 0, 0, tzinfo=datetime.timezone.utc).astimezone(tz)
datetime.datetime = Frozen
grader, transcript, workspace = sys.argv[1:4]
lines = [json.loads(l) for l in open(transcript) if l.strip()]
ns = {}
try:
    exec(open(grader).read(), ns)
    out = ns["grade"](lines, workspace)
    values = [float(v) for v in out.values() if isinstance(v, (int, float))]
    print(json.dumps(sum(values) / len(values) if values else 0.0))
except Exception:
    print(json.dumps(0.0))
"""


def direct_score(task_file: Path, workspace: Path, events: list[dict], tmp: Path) -> float:
    """The original grader's score on `workspace`: exec'd in a plain interpreter under the same clock."""
    grader = read_task_file(task_file, REPO).grader
    (tmp / "grader.py").write_text(grader)
    (tmp / "transcript.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    out = subprocess.run(
        [sys.executable, "-c", DIRECT, str(tmp / "grader.py"), str(tmp / "transcript.jsonl"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return min(1.0, max(0.0, json.loads(out.stdout.strip().splitlines()[-1])))


def _msgs(*turns: tuple) -> dict:
    """A claw-like trajectory: (role, text, [tool calls]) turns in OpenAI format."""
    messages, pending = [], []
    for role, text, calls in turns:
        m = {"role": role, "content": text}
        if calls:
            m["tool_calls"] = [tool_call(name, call_id=f"c{i}", **args) for i, (name, args) in enumerate(calls)]
            pending = [c["id"] for c in m["tool_calls"]]
        if role == "tool":
            m["tool_call_id"] = pending.pop(0)
        messages.append(m)
    return {"messages": messages, "final_message": messages[-1]["content"]}


def _steps(commands: list[str], final: str) -> dict:
    return {
        "steps": [{"kind": "exec", "command": c, "exit_code": 0, "output": ""} for c in commands],
        "final_message": final,
    }


def _revenue(path: Path) -> dict:
    totals: dict[str, float] = {}
    for row in csv.DictReader(io.StringIO(path.read_text())):
        totals[row["region"]] = totals.get(row["region"], 0.0) + int(row["units"]) * float(row["unit_price"])
    return {k: round(v, 2) for k, v in totals.items()}


def _errors(path: Path) -> dict:
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "ERROR":
            counts[parts[3]] = counts.get(parts[3], 0) + 1
    return counts


def honest(task_id: str, ws: Path) -> dict:
    """Do the task honestly in `ws`; the trajectory an agent would have recorded."""
    w = ws.joinpath
    if task_id == "task_sanity":
        return _msgs(("user", "Hello!", None), ("assistant", "Hello! I'm here and working.", None))
    if task_id == "task_calendar":
        w("project_sync.ics").write_text(
            "BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VEVENT\nDTSTART:20260303T150000\n"
            "SUMMARY:Project Sync\nATTENDEE:mailto:john@example.com\n"
            "DESCRIPTION:Discuss the Q1 roadmap\nEND:VEVENT\nEND:VCALENDAR\n"
        )
        return _steps(["cat > project_sync.ics"], "Saved project_sync.ics for Tuesday 3 March at 15:00.")
    if task_id == "task_config_audit":
        return _msgs(
            ("user", "Which config?", None),
            ("assistant", "", [("read", {"path": "configs/staging.yaml"}), ("read", {"path": "configs/dev.yaml"})]),
            ("tool", "service: billing\ndebug: true", None),
            ("tool", "service: billing", None),
            ("assistant", "It is configs/staging.yaml: it sets debug: true.", None),
        )
    if task_id == "task_csv_sales":
        rev = _revenue(w("sales_q1.csv"))
        w("revenue_by_region.json").write_text(json.dumps(rev))
        best = max(rev, key=rev.get)
        w("summary.md").write_text(f"{best} did best with {rev[best]:.2f}.\n")
        return _steps(["python3 revenue.py"], "Done.")
    if task_id == "task_log_errors":
        w("error_report.json").write_text(json.dumps(_errors(w("logs/app.log"))))
        return _steps(["grep ERROR logs/app.log"], "The worker component has the most errors (3).")
    if task_id == "task_meeting_actions":
        w("action_items.md").write_text(
            "- [ ] Marcus: send staging credentials to Tom (by Friday)\n"
            "- [ ] Alina: send onboarding copy to legal (by Monday)\n"
            "- [ ] Priya and Tom: pair on the flaky login test\n"
            "- [ ] Everyone: merge before the freeze (by 4 March)\n"
            "- [ ] Alina: update the release notes before the freeze\n"
        )
        return _steps([], "Action items saved.")
    if task_id == "task_word_count":
        w("word_count.txt").write_text(f"{len(w('essay.txt').read_text().split())}\n")
        return _steps(["wc -w essay.txt"], "38 words.")
    if task_id == "task_contacts_json":
        w("contacts.json").write_text(json.dumps(list(csv.DictReader(io.StringIO(w("contacts.csv").read_text())))))
        return _steps(["python3 convert.py"], "Converted.")
    if task_id == "task_project_plan":
        w("project_plan.md").write_text(
            "# Wiki migration\n\n## 1. Goals\nMove every page.\n\n## 2. Timeline\n"
            + "".join(f"- Phase {i}: milestone {i}\n" for i in range(1, 5))
            + "\n## 3. Risks\n"
            + "".join(f"- Risk {i}. Mitigation: plan {i}\n" for i in range(1, 4))
        )
        return _steps([], "Plan written.")
    if task_id == "task_memory_recall":
        w("MEMORY.md").write_text("- Dog: Biscuit\n- Favourite colour: teal\n")
        return _steps(["cat MEMORY.md"], "Your dog is Biscuit and your favourite colour is teal.")
    if task_id == "task_gh_issues":
        w("issues.md").write_text("- #12 Stock counts drift\n")
        return _steps(["gh issue list --repo octo-org/inventory --state open"], "Saved issues.md.")
    if task_id == "task_npm_markdownlint":
        w("README.md").write_text(
            "# Inventory Tool\n\nA small command line tool for tracking inventory.\n\n"
            "## Install\n\nRun `npm install`.\n\n## Usage\n\n- add an item\n- remove an item\n"
        )
        return _steps(["npx markdownlint README.md"], "Fixed.")
    if task_id == "task_05_weather":
        w("weather.py").write_text("import sys\nDATA = {'Lisbon': 'sunny, 19C'}\nprint(DATA.get(sys.argv[1], '?'))\n")
        return _steps(["python3 weather.py Lisbon"], "Lisbon: sunny, 19C")
    raise KeyError(task_id)


GRADED = [
    "task_sanity",
    "task_calendar",
    "task_config_audit",
    "task_csv_sales",
    "task_log_errors",
    "task_meeting_actions",
    "task_word_count",
    "task_contacts_json",
    "task_project_plan",
    "task_memory_recall",
    "task_gh_issues",
    "task_npm_markdownlint",
    "task_05_weather",
]
FILE_OF = {"task_05_weather": "task_04_weather.md"}


def ours(task, ws: Path, trajectory: dict | None, tmp: Path):
    original = tmp / "original"
    shutil.rmtree(original, ignore_errors=True)
    materialize(task, original)
    return verify(
        list(thaw(task.checks)),
        workspace=ws,
        original=original,
        task_dir=Path(task.task_dir),
        params={},
        trajectory=trajectory,
        mount=task.mount,
    )


@pytest.mark.parametrize("task_id", GRADED)
def test_parity_with_the_original_grader(imported, task_id, tmp_path, bwrap):
    """On the untouched workspace and on an honest solution, our automated score equals the original
    grader's, run directly on the same workspace and the same transcript."""
    task = compiled(imported, task_id)
    check = dict(task.checks[0])
    task_file = REPO / "tasks" / FILE_OF.get(task_id, f"{task_id}.md")
    for label in ("untouched", "honest"):
        ws = tmp_path / label
        materialize(task, ws)
        trajectory = (
            {"task": task.summary(), "steps": [], "final_message": None}
            if label == "untouched"
            else {"task": task.summary(), **honest(task_id, ws)}
        )
        verdict = ours(task, ws, trajectory, tmp_path)
        auto = next(r for r in verdict.results if r.name == "automated")
        events = session_events(trajectory, prompts=list(check["prompt"]), clock=check["clock"], cwd=task.mount)
        assert auto.score == direct_score(task_file, ws, events, tmp_path), (label, auto.reason)
        if label == "untouched":
            assert auto.score <= 0.34, auto.reason
        elif task_id == "task_05_weather":  # reads tool-call `params`, which OpenClaw transcripts lack
            assert auto.score == pytest.approx(2 / 3), auto.reason
        else:
            assert auto.score == 1.0, auto.reason


TAMPERED = ["task_log_errors", "task_word_count", "task_csv_sales"]


@pytest.mark.parametrize("task_id", TAMPERED)
def test_input_tampering_scores_no_more_than_doing_nothing(imported, task_id, tmp_path, bwrap):
    """Truncate the fixture a grader recomputes its answer from, then answer for the truncated input:
    the original runner gives full marks, we give no more than the untouched workspace."""
    task = compiled(imported, task_id)
    nop_ws = tmp_path / "nop"
    materialize(task, nop_ws)
    nop = ours(task, nop_ws, {"task": task.summary(), "steps": []}, tmp_path).reward
    ws = tmp_path / "tamper"
    materialize(task, ws)
    fixture = {"task_log_errors": "logs/app.log", "task_word_count": "essay.txt", "task_csv_sales": "sales_q1.csv"}[
        task_id
    ]
    lines = (ws / fixture).read_text().splitlines(keepends=True)
    (ws / fixture).write_text("".join(lines[: max(2, len(lines) // 2)]))
    trajectory = {"task": task.summary(), **honest(task_id, ws)}  # outputs consistent with the truncated input
    events = session_events(trajectory, prompts=list(task.checks[0]["prompt"]), clock=CLOCK, cwd=task.mount)
    task_file = REPO / "tasks" / f"{task_id}.md"
    assert direct_score(task_file, ws, events, tmp_path) == 1.0  # the hole in the original
    verdict = ours(task, ws, trajectory, tmp_path)
    assert verdict.reward <= nop, verdict


def test_grader_that_raises_or_returns_nothing_scores_zero(imported, tmp_path, bwrap):
    for task_id, why in (("task_word_count", "FileNotFoundError"), ("task_contacts_json", "no numeric values")):
        task = compiled(imported, task_id)
        ws = tmp_path / task_id
        materialize(task, ws)
        auto = ours(task, ws, None, tmp_path).results[0]
        assert auto.score == 0.0 and why in auto.reason, auto.reason


# ---------------------------------------------------------------------------------------------
# Scoring rules and the run score


def test_scoring_rules_as_the_runner_applies_them():
    assert automated_score({"a": 1.0, "b": 0.0, "c": True, "note": "text"}) == pytest.approx(2 / 3)
    assert automated_score({}) == 0.0
    assert judge_total({"scores": {"a": 0.5, "b": 1.0}, "total": 0.6}) == 0.6
    assert judge_total({"scores": {"a": 0.5, "b": 1.0}, "total": 7.5}) == 0.75  # total > 1: the mean
    assert judge_total({"scores": {"a": 0.5, "b": 1.0}}) == 0.75
    assert hybrid_score(1.0, 0.5) == 0.75 and hybrid_score(1.0, 0.5, (0.6, 0.4)) == pytest.approx(0.8)
    score = run_score([("t1", 1.0), ("t1", 0.0), ("t2", 1.0)], suite_size=147)
    assert score.score == 0.75 and score.tasks_run == 2 and score.subset and "a subset of 147" in score.describe()


def test_hybrid_reward_is_the_task_weighted_combination(imported, tmp_path, bwrap):
    task = compiled(imported, "task_csv_sales")
    ws = tmp_path / "ws"
    materialize(task, ws)
    code = ours(task, ws, {"task": task.summary(), **honest("task_csv_sales", ws)}, tmp_path)
    judged = RubricResult(0.5, [], {"type": "scripted"}, False, 1)
    assert combine_hybrid(code, judged, task.rubric_weight).reward == pytest.approx(hybrid_score(1.0, 0.5, (0.6, 0.4)))


def test_run_score_from_trial_records(imported):
    def rec(task_id: str, reward: float, agent: str = "claw") -> dict:
        spec = str(imported / task_id.replace("_", "-") / "task.yaml")
        return {
            "trial_id": f"{task_id}.{agent}.{reward}",
            "task": {"name": task_id.replace("_", "-"), "spec_file": spec},
            "agent": {"type": agent},
            "status": "passed" if reward == 1 else "failed",
            "reward": reward,
        }

    records = [
        rec("task_sanity", 1.0),
        rec("task_calendar", 0.5),
        rec("task_calendar", 1.0),
        rec("task_sanity", 0.0, "nop"),
    ]
    scores = pinchbench_scores(
        records
        + [
            {
                "trial_id": "x",
                "task": {"name": "other", "spec_file": "/nowhere/t.yaml"},
                "agent": {"type": "claw"},
                "status": "passed",
                "reward": 1.0,
            }
        ]
    )
    assert scores["claw"].score == pytest.approx((1.0 + 0.75) / 2) and scores["claw"].tasks_run == 2
    assert scores["claw"].subset and scores["claw"].suite_size == 15
    assert scores["nop"].sanity_failed and "task_sanity scored 0" in scores["nop"].describe()


# ---------------------------------------------------------------------------------------------
# Every harness gives graders the same transcript shape


def test_transcript_has_openclaws_shape_for_any_trajectory():
    claw = session_events(
        _msgs(
            ("user", "Which config?", None),
            ("assistant", "", [("read", {"path": "a.yaml"})]),
            ("tool", "x: 1", None),
            ("assistant", "a.yaml", None),
        ),
        clock=CLOCK,
    )
    steps = session_events(_steps(["ls configs"], "a.yaml"), prompts=["Which config?"], clock=CLOCK)
    for events in (claw, steps):
        assert [e["type"] for e in events[:2]] == ["session", "model_change"]
        msgs = [e["message"] for e in events if e["type"] == "message"]
        assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "assistant"]
        call = msgs[1]["content"][0]
        assert call["type"] == "toolCall" and isinstance(call["arguments"], dict) and "params" not in call
        assert msgs[2]["toolCallId"] == call["id"] and msgs[2]["toolName"] == call["name"]
        assert msgs[3]["content"] == [{"type": "text", "text": "a.yaml"}] and "usage" in msgs[3]
        assert events[2]["timestamp"].startswith("2026-03-02T09:00:02")


def test_runs_with_nop_oracle_claw_and_command_agents(imported, bwrap):
    task = compiled(imported, "task_config_audit")
    for agent in ({"type": "nop"}, {"type": "oracle"}):
        record = execute_trial(Trial(task, agent))
        assert record["status"] == "failed" and record["reward"] == 0.0, record
    script = [
        {"content": "", "tool_calls": [tool_call("read", call_id="r1", path="configs/staging.yaml")]},
        "configs/staging.yaml is the one with debug: true.",
    ]
    claw = execute_trial(Trial(task, {"type": "claw", "policy": {"type": "scripted", "turns": script}}))
    assert claw["status"] == "passed" and claw["reward"] == 1.0, claw
    count = compiled(imported, "task_word_count")
    command = {
        "type": "command",
        "run": "wc -w < essay.txt | tr -d ' ' > word_count.txt",
        "policy": {"type": "scripted"},
    }
    record = execute_trial(Trial(count, command))
    assert record["status"] == "passed" and record["reward"] == 1.0, record


# ---------------------------------------------------------------------------------------------
# Export


def test_export_round_trips_byte_for_byte(imported, tmp_path):
    out = tmp_path / "exported"
    results = export_command([imported], out)
    assert len(results) == 15 and all(r.verbatim for r in results)
    for name in TASK_FILES + ["manifest.yaml"]:
        assert (out / "tasks" / name).read_bytes() == (REPO / "tasks" / name).read_bytes(), name
    for path in (REPO / "assets").rglob("*"):
        if path.is_file():
            assert (out / "assets" / path.relative_to(REPO / "assets")).read_bytes() == path.read_bytes()


def test_edited_import_exports_its_edit_with_its_own_grader(imported, tmp_path):
    edited = tmp_path / "lib"
    shutil.copytree(imported, edited)
    spec = edited / "task-word-count" / "task.yaml"
    spec.write_text(spec.read_text().replace("How many words are in essay.txt?", "Count the words in essay.txt."))
    result = export_command([spec], tmp_path / "out")[0]
    text = (tmp_path / "out" / result.file).read_text()
    assert result.file == "tasks/task_word_count.md" and not result.verbatim
    assert "Count the words in essay.txt." in text and 'reported = int((workspace / "word_count.txt")' in text
    back = read_task_file(tmp_path / "out" / result.file, tmp_path / "out")
    assert back.id == "task_word_count" and back.files[0].dest == "essay.txt" and back.grading_type == "automated"


def test_native_task_exports_with_a_grade_that_calls_the_portable_grader(tmp_path, bwrap):
    spec = Path(__file__).parents[2] / "specs" / "tasks" / "productivity" / "invoice-followup.yaml"
    out = tmp_path / "pb"
    result = export_command([spec], out)[0]
    assert result.file, result.reason
    parsed = read_task_file(out / result.file, out)
    assert parsed.grading_type == "automated" and "clawgym_grade" in parsed.grader
    task = compile_task(load_task_spec(spec), 0)
    scores = {}
    for agent in ("oracle", "nop"):
        ws = tmp_path / agent
        record = execute_trial(Trial(task, {"type": agent}), keep_workspace=ws)
        (tmp_path / "g.py").write_text(parsed.grader)
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                "import json, sys; ns = {}; exec(open(sys.argv[1]).read(), ns); "
                "print(json.dumps(ns['grade']([], sys.argv[2])))",
                str(tmp_path / "g.py"),
                str(ws),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=out,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        scores[agent] = json.loads(run.stdout.strip().splitlines()[-1])["clawgym_reward"]
        assert scores[agent] == pytest.approx(record["reward"]), (agent, record["verdict"])
    assert scores == {"oracle": 1.0, "nop": pytest.approx(scores["nop"])} and scores["nop"] <= 0.1


def test_cli_import_run_report_and_export(tmp_path, bwrap):
    from click.testing import CliRunner

    from clawgym.cli.main import main

    runner = CliRunner()
    res = runner.invoke(main, ["import", "pinchbench", str(REPO), "--out", str(tmp_path / "specs"), "--quiet"])
    assert (
        res.exit_code == 0 and "15 PinchBench task(s): 11 imported, 4 imported with warnings, 0 rejected" in res.output
    )
    res = runner.invoke(
        main,
        [
            "run",
            str(tmp_path / "specs" / "task-sanity" / "task.yaml"),
            "--agent",
            "nop",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["report", str(tmp_path / "run"), "--pinchbench"])
    assert res.exit_code == 0 and "nop: PinchBench score 0.0% (1 task; a subset of 15" in res.output, res.output
    res = runner.invoke(
        main,
        [
            "bench",
            "run",
            "--bench",
            str(tmp_path / "specs"),
            "--agent",
            "nop",
            "-k",
            "1",
            "--only",
            "task-sanity",
            "--allow-unlocked",
            "--quiet",
            "--pinchbench",
            "--out",
            str(tmp_path / "bench-run"),
            "--leaderboard",
            str(tmp_path / "rows"),
        ],
    )
    assert res.exit_code == 0 and "nop: PinchBench score 0.0% (1 task; a subset of 15" in res.output, res.output
    res = runner.invoke(main, ["export", "pinchbench", str(tmp_path / "specs"), "--out", str(tmp_path / "pb")])
    assert res.exit_code == 0 and "15 exported (15 unchanged from their import)" in res.output
