"""Import and export of the published ClawGym task format, on the fixture tasks in
tests/fixtures/clawgym_format/ (written in that format: data_entry.json, input_files/, reward/)."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.interop.clawgym_export import export_command
from clawgym.interop.clawgym_import import import_command
from clawgym.interop.input_roles import decide
from clawgym.run.trial import Trial, execute_trial
from clawgym.spec.task import thaw
from clawgym.verify import verify
from clawgym.compile.workspace import materialize

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clawgym_format"
GOOD = sorted(p.name for p in (FIXTURES / "good").iterdir() if p.is_dir())
WITH_SOLUTION = [t for t in GOOD if (FIXTURES / "good" / t / "solution" / "solve.sh").is_file()]


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    outcomes = import_command(FIXTURES / "good", out)
    assert [(o.source, o.status) for o in outcomes] == [(t, "imported") for t in GOOD]
    return out


def spec_of(imported: Path, task_id: str) -> Path:
    return imported / task_id.replace("_", "-") / "task.yaml"


def reward_sh(task_id: str, workspace: Path, tmp: Path, payload: Path | None = None) -> float:
    """What the task's own reward.sh prints for `workspace` (reward/ copied in, as the format does)."""
    ws = tmp / "reward-sh-ws"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(workspace, ws, symlinks=True)
    shutil.rmtree(ws / "reward", ignore_errors=True)
    shutil.copytree(FIXTURES / "good" / task_id / "reward", ws / "reward")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    if payload is not None:
        env["OPENCLAW_REWARD_PAYLOAD"] = str(payload)
    out = subprocess.run(
        ["bash", str(ws / "reward" / "reward.sh"), str(ws)], capture_output=True, text=True, env=env, timeout=60
    ).stdout
    return float(out.strip().splitlines()[-1])


def our_reward(spec: Path, workspace: Path, tmp: Path, trajectory: dict | None = None) -> float:
    task = compile_task(load_task_spec(spec), 0)
    original = tmp / "original"
    shutil.rmtree(original, ignore_errors=True)
    materialize(task, original)
    verdict = verify(
        list(thaw(task.checks)),
        workspace=workspace,
        original=original,
        task_dir=Path(task.task_dir),
        params={},
        trajectory=trajectory,
    )
    return verdict.reward


def test_every_good_fixture_imports_as_a_valid_spec(imported):
    for task_id in GOOD:
        task = compile_task(load_task_spec(spec_of(imported, task_id)), 0)
        entry = json.loads((FIXTURES / "good" / task_id / "data_entry.json").read_text(encoding="utf-8"))
        assert task.instruction == entry["user_query"]
        assert task.mount == entry.get("input_mount_dir", "/root/.openclaw/workspace")
        inputs = FIXTURES / "good" / task_id / "input_files"
        for f in (p for p in inputs.rglob("*") if p.is_file()) if inputs.is_dir() else []:
            assert task.files[f.relative_to(inputs).as_posix()] == f.read_bytes()
        check = task.checks[0]
        assert check["type"] == "python" and check["subscores"]["aggregate"] == "mean"
        if check["restore"]:
            assert task.checks[1] == {
                "type": "unchanged",
                "name": "inputs unchanged",
                "paths": check["restore"],
                "gate": True,
                "weight": 0,
            }
    report = [json.loads(line) for line in (imported / "import-report.jsonl").read_text().splitlines()]
    assert len(report) == len(GOOD) and all(r["nop_score"] <= 0.1 for r in report)


def test_restore_decisions_keep_only_what_the_instruction_changes(imported):
    kept = {}
    for task_id in GOOD:
        task = compile_task(load_task_spec(spec_of(imported, task_id)), 0)
        inputs = FIXTURES / "good" / task_id / "input_files"
        all_inputs = (
            {p.relative_to(inputs).as_posix() for p in inputs.rglob("*") if p.is_file()} if inputs.is_dir() else set()
        )
        restored = set(task.checks[0]["restore"])
        if all_inputs - restored:
            kept[task_id] = sorted(all_inputs - restored)
    assert kept == {
        "task_0002": ["notes/journal.md"],
        "task_0003": ["config/app.yaml"],
        "task_0004": [
            "downloads/Budget_2025.CSV",
            "downloads/backup_db.sh",
            "downloads/logo_v2.svg",
            "downloads/offsite_schedule.ics",
        ],
        "task_0011": ["src/parser.py"],
        "task_0014": ["docs/onboarding.md", "docs/team_handbook.md"],  # "apply these changes in place to ..."
        "task_0015": ["config/config.json"],  # "only adjust config/config.json"
        "task_0022": ["tools/budget_check.py"],
    }


def test_decisions_read_the_instruction_sentence_by_sentence():
    inputs = [
        "data/sales.csv",
        "config/app.yaml",
        "src/a.py",
        "tests/test_a.py",
        "data/contacts.csv",
        "notes/todo.md",
        "inbox/x.eml",
    ]
    text = (
        "Read data/sales.csv and write the totals to output/totals.csv. The port in config/app.yaml should "
        "be changed to 8080. Fix the bug in src/a.py so tests/test_a.py passes. Add up the amounts in "
        "data/contacts.csv. Do not modify notes/todo.md; tick nothing. Archive everything in inbox/."
    )
    got = {d.path: d.restore for d in decide(inputs, text)}
    assert got == {
        "data/sales.csv": True,
        "config/app.yaml": False,
        "src/a.py": False,
        "tests/test_a.py": True,
        "data/contacts.csv": True,
        "notes/todo.md": True,
        "inbox/x.eml": False,
    }
    gone = decide(["in/a.txt"], "Tidy up.", "assert not os.path.exists(os.path.join(ws, 'in/a.txt'))")
    assert not gone[0].restore and gone[0].why.startswith("kept: the grader checks that it is gone")


@pytest.mark.parametrize("task_id", GOOD)
def test_oracle_nop_and_parity_with_reward_sh(imported, task_id, tmp_path, bwrap):
    """oracle scores 1.0 where a solution exists, nop at most 0.1, and on every workspace our reward
    equals what the task's own reward.sh prints (aggregate: mean)."""
    spec = spec_of(imported, task_id)
    task = compile_task(load_task_spec(spec), 0)
    nop_ws = tmp_path / "nop"
    nop = execute_trial(Trial(task, {"type": "nop"}), keep_workspace=nop_ws)
    assert nop["status"] != "error" and nop["reward"] <= 0.1
    payload = None
    if task_id in WITH_SOLUTION:
        oracle_ws = tmp_path / "oracle"
        oracle = execute_trial(Trial(task, {"type": "oracle"}), keep_workspace=oracle_ws)
        assert oracle["reward"] == 1.0, oracle["verdict"]
        results = oracle["verdict"]["results"]  # the sub-scores, one result each (unless it prints one number)
        assert len(results) >= 4 or results[0]["reason"] == "reward.sh score 1", results
        workspaces = [nop_ws, oracle_ws]
        # partial work: drop half of what the oracle produced
        partial = tmp_path / "partial"
        shutil.copytree(oracle_ws, partial, symlinks=True)
        made = sorted(p for p in partial.rglob("*") if p.is_file() and not (nop_ws / p.relative_to(partial)).exists())
        for p in made[: max(1, len(made) // 2)]:
            p.unlink()
        workspaces.append(partial)
    else:
        workspaces = [nop_ws]
    for ws in workspaces:
        assert our_reward(spec, ws, tmp_path) == reward_sh(task_id, ws, tmp_path, payload), ws.name


CHAT_ANSWERS = {  # the right final answer of each chat-style fixture task (graded through the payload)
    "task_0010": "The lease ends on 2026-01-18, so the notice must reach the landlord by 2025-11-19.",
    "task_0021": "You land in São Paulo on 2025-03-29 at 05:45 local time and reach the hotel at 08:15, "
    "so yes, you will make it to the 09:30 meeting with 1 h 15 min to spare.",
}


def test_chat_task_is_graded_on_the_final_answer_through_the_payload(imported, tmp_path):
    chat = [
        t
        for t in GOOD
        if "input_mount_dir" not in json.loads((FIXTURES / "good" / t / "data_entry.json").read_text(encoding="utf-8"))
    ]
    assert len(chat) >= 2 and set(CHAT_ANSWERS) <= set(chat)
    for task_id in chat:
        spec = spec_of(imported, task_id)
        task = compile_task(load_task_spec(spec), 0)
        assert task.checks[0]["payload"]["task_id"] == task_id
        ws = tmp_path / task_id
        materialize(task, ws)
        entry = json.loads((FIXTURES / "good" / task_id / "data_entry.json").read_text(encoding="utf-8"))
        messages = [(CHAT_ANSWERS[task_id], True)] if task_id in CHAT_ANSWERS else []
        for message, expect_full in messages + [("I could not work it out.", False)]:
            trajectory = {
                "final_message": message,
                "messages": [
                    {"role": "user", "content": entry["user_query"]},
                    {"role": "assistant", "content": message},
                ],
            }
            payload = tmp_path / "payload.json"
            payload.write_text(
                json.dumps(
                    {
                        "task_id": task_id,
                        "user_query": entry["user_query"],
                        "metadata": entry["metadata"],
                        "final_message": message,
                        "transcript": trajectory["messages"],
                    }
                )
            )
            ours = our_reward(spec, ws, tmp_path, trajectory)
            assert ours == reward_sh(task_id, ws, tmp_path, payload), (task_id, message)
            assert (ours == 1.0) is expect_full


@pytest.mark.parametrize("task_id", WITH_SOLUTION)
def test_input_tampering_scores_no_more_than_doing_nothing(imported, task_id, bwrap):
    task = compile_task(load_task_spec(spec_of(imported, task_id)), 0)
    nop = execute_trial(Trial(task, {"type": "nop"}))
    tamper = execute_trial(Trial(task, {"type": "tamper"}))
    assert tamper["status"] != "error"
    assert tamper["reward"] <= nop["reward"], tamper["verdict"]


def test_export_round_trips_byte_for_byte(imported, tmp_path):
    out = tmp_path / "exported"
    results = export_command([imported], out)
    assert all(r.folder for r in results) and len(results) == len(GOOD)
    cmp = filecmp.dircmp(FIXTURES / "good", out)
    assert sorted(cmp.left_list) == sorted(cmp.right_list)

    def same(a: Path, b: Path) -> None:
        files_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
        files_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
        assert files_a == files_b
        for rel in files_a:
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel

    for task_id in GOOD:
        same(FIXTURES / "good" / task_id, out / task_id)


def test_an_edited_spec_exports_its_edit(imported, tmp_path):
    folder = tmp_path / "edited"
    shutil.copytree(imported / "task-0001", folder / "task-0001")
    shutil.copytree(imported / "personas", folder / "personas")
    shutil.copytree(imported / "workspaces", folder / "workspaces")
    spec = folder / "task-0001" / "task.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("category: productivity", "category: planning"), encoding="utf-8")
    export_command([spec], tmp_path / "out")
    entry = json.loads((tmp_path / "out" / "task_0001" / "data_entry.json").read_text(encoding="utf-8"))
    assert entry["metadata"]["category"] == "Planning & Knowledge"


def test_bad_folders_are_rejected_or_warned_and_never_stop_the_others(tmp_path):
    source = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "bad", source)
    shutil.copytree(FIXTURES / "good" / "task_0001", source / "task_0001")
    result = CliRunner().invoke(main, ["import", "clawgym", str(source), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = {
        r["source"]: r for r in map(json.loads, (tmp_path / "out" / "import-report.jsonl").read_text().splitlines())
    }
    assert {k: v["status"] for k, v in report.items()} == {
        "crashing_grader": "rejected",
        "empty_query": "rejected",
        "invalid_json": "rejected",
        "missing_input": "warned",
        "no_data_entry": "rejected",
        "no_number": "rejected",
        "no_reward": "rejected",
        "task_0001": "imported",
    }
    reasons = {k: v["reasons"][0] for k, v in report.items() if v["reasons"]}
    assert reasons["no_data_entry"] == "no data_entry.json (every task folder needs one with task_id and user_query)"
    assert reasons["empty_query"] == "data_entry.json: `user_query` is '', expected a non-empty string"
    assert reasons["invalid_json"].startswith("data_entry.json:")
    assert "invalid JSON" in reasons["invalid_json"]
    assert reasons["no_reward"].startswith("no reward/ folder")
    assert reasons["crashing_grader"].startswith("grader fails on the untouched workspace (exit status 1; stderr: ")
    assert reasons["crashing_grader"].endswith("KeyError: 'file'); fix reward/check.py")
    assert reasons["no_number"].startswith(
        "grader output is not what reward.sh reads, so every rollout would score 0: "
        "the grader's output is not one JSON document"
    )
    assert reasons["missing_input"].startswith("references input file(s) missing from input_files/: logs/app.log")
    assert "8 task folder(s): 1 imported, 1 imported with warnings, 6 rejected" in " ".join(result.output.split())
    assert (tmp_path / "out" / "task-0001" / "task.yaml").is_file()
    assert not (tmp_path / "out" / "no-data-entry").exists()


def test_reimport_replaces_the_earlier_import(imported, tmp_path):
    out = tmp_path / "again"
    import_command(FIXTURES / "good" / "task_0001", out)
    (out / "task-0001" / "stray.txt").write_text("left over")
    import_command(FIXTURES / "good" / "task_0001", out)
    assert not (out / "task-0001" / "stray.txt").exists()
    assert (out / "task-0001" / "task.yaml").is_file()


def _published_task(folder: Path, check_py: str) -> Path:
    (folder / "input_files" / "input").mkdir(parents=True)
    (folder / "input_files" / "input" / "data.csv").write_text("a,b\n1,2\n")
    (folder / "reward").mkdir()
    (folder / "reward" / "check.py").write_text(check_py)
    (folder / "data_entry.json").write_text(
        json.dumps(
            {
                "task_id": folder.name,
                "user_query": "Sum column b of input/data.csv into output/sum.txt.",
                "input_mount_dir": "/root/.openclaw/workspace",
                "metadata": {"category": "", "grading_type": "automated"},
            }
        )
    )
    return folder


def test_import_runs_untrusted_graders_in_a_sandbox(tmp_path):
    """The one-off grader run at import time happens in a grading sandbox, never on the host, on the
    workspace an agent that does nothing leaves (OpenClaw's seed files included)."""
    from clawgym.interop.clawgym_import import import_one

    marker = tmp_path / "host-marker"
    hostile = (
        f"import json, os, sys\n"
        f"for p in [{str(marker)!r}, '/etc/clawgym-owned']:\n"
        f"    try:\n        open(p, 'w').write('owned')\n    except OSError:\n        pass\n"
        f"ws = sys.argv[1]\n"
        f"print(json.dumps({{'cwd': os.getcwd() == ws, 'inputs': os.path.exists(ws + '/input/data.csv'),"
        f" 'seeded': os.path.isfile(ws + '/.git/HEAD') and os.path.isfile(ws + '/BOOTSTRAP.md'),"
        f" 'out': os.path.exists(ws + '/output/sum.txt')}}, indent=2))\n"
    )
    folder = _published_task(tmp_path / "task_0001", hostile)
    out = tmp_path / "out"
    out.mkdir()
    from clawgym.interop.library import ensure_library

    ensure_library(out)
    outcome = import_one(folder, out)
    assert outcome.status == "warned" and outcome.nop_score == pytest.approx(3 / 4), outcome
    assert not marker.exists() and not os.path.exists("/etc/clawgym-owned")
    (folder / "reward" / "check.py").write_text("print('{\"a\": 1}'); raise SystemExit(3)\n")
    outcome = import_one(folder, out)
    assert outcome.status == "rejected" and "fails on the untouched workspace (exit status 3" in outcome.reasons[0]
    assert (out / "task-0001" / "task.yaml").is_file()  # the earlier import stays
    (folder / "reward" / "check.py").write_text("import time\ntime.sleep(30)\n")
    from clawgym.interop import clawgym_import

    old = clawgym_import.SMOKE_TIMEOUT
    try:
        clawgym_import.SMOKE_TIMEOUT = 0.5
        outcome = import_one(folder, out)
    finally:
        clawgym_import.SMOKE_TIMEOUT = old
    assert outcome.status == "rejected" and "did not finish within 0.5 s" in outcome.reasons[0]


def test_batched_graders_cannot_disturb_each_other(tmp_path, bwrap):
    """The importer runs a dataset's graders in batches, one sandbox each: a grader that kills every
    process, one that hangs and one that leaves a daemon behind do not change the others' results."""
    from clawgym.interop import clawgym_import
    from clawgym.interop.clawgym_import import import_many
    from clawgym.interop.library import ensure_library

    good = (
        "import json, os, sys\nws = sys.argv[1]\n"
        "print(json.dumps({'untouched': not os.path.exists(ws + '/output'), 'here': os.getcwd() == ws}))\n"
    )
    graders = {
        "task_a": "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
        "task_b": good,
        "task_c": "import time\ntime.sleep(60)\n",
        "task_d": (
            "import os, subprocess, sys\nsubprocess.Popen(['sh', '-c', 'sleep 1; mkdir -p output'],"
            " start_new_session=True)\nprint(0.0)\n"
        ),
        "task_e": good,
    }
    folders = [_published_task(tmp_path / name, code) for name, code in graders.items()]
    out = tmp_path / "out"
    ensure_library(out)
    old = clawgym_import.SMOKE_TIMEOUT
    try:
        clawgym_import.SMOKE_TIMEOUT = 3
        outcomes = import_many([(f, out, f.name.replace("_", "-"), True, None) for f in folders])
    finally:
        clawgym_import.SMOKE_TIMEOUT = old
    status = {o.source: (o.status, o.nop_score) for o in outcomes}
    assert status["task_a"][0] == "rejected" and "stopped (exit status 137)" in outcomes[0].reasons[0]
    assert status["task_c"][0] == "rejected" and "did not finish within 3 s" in outcomes[2].reasons[0]
    for name in ("task_b", "task_e"):  # graded alone, in place, on their own untouched workspace
        assert status[name][1] == 1.0, outcomes
    assert status["task_d"][1] == 0.0 and not any("grader" in r for r in outcomes[3].reasons), outcomes[3]


NATIVE = [
    "specs/tasks/analysis/grade-statistics.yaml",
    "specs/tasks/systems/log-incident-report.yaml",
    "specs/tasks/software/fix-failing-function.yaml",
]


def test_native_tasks_export_with_a_portable_grader_and_import_back(tmp_path, bwrap):
    """Any ClawGym task exports to the published format (reward/check.py runs its own checks);
    imported back it scores 1.0 with the reference solution and 0 doing nothing, and reward.sh
    prints the same reward as our verdict on the same workspace."""
    root = Path(__file__).resolve().parents[2]
    results = export_command([root / s for s in NATIVE], tmp_path / "exported")
    assert all(r.folder for r in results), [r.reason for r in results]
    names = sorted(p.name for p in (tmp_path / "exported").iterdir())
    assert names == ["fix-failing-function", "grade-statistics", "log-incident-report"]
    for name in names:
        folder = tmp_path / "exported" / name
        assert {"check.py", "reward.sh", "clawgym.zip", "task.json"} <= {p.name for p in (folder / "reward").iterdir()}
        assert (folder / "input_files" / "AGENTS.md").is_file()  # the whole workspace travels
    outcomes = import_command(tmp_path / "exported", tmp_path / "imported")
    assert [o.status for o in outcomes] == ["imported"] * 3
    for name in names:
        task = compile_task(load_task_spec(tmp_path / "imported" / name / "task.yaml"), 0)
        assert not task.checks[0]["restore"] and len(task.checks) == 1  # the grader has its own pristine copy
        ws = tmp_path / "ws" / name
        oracle = execute_trial(Trial(task, {"type": "oracle"}), keep_workspace=ws)
        nop = execute_trial(Trial(task, {"type": "nop"}))
        assert (oracle["reward"], nop["reward"]) == (1.0, 0.0), oracle["verdict"]
        shutil.copytree(tmp_path / "exported" / name / "reward", ws / "reward")
        out = subprocess.run(["bash", str(ws / "reward" / "reward.sh"), str(ws)], capture_output=True, text=True)
        assert float(out.stdout.split()[-1]) == 1.0


def test_any_file_of_the_graders_folder_is_part_of_the_task_hash(imported, tmp_path):
    folder = tmp_path / "lib"
    shutil.copytree(imported, folder, ignore=shutil.ignore_patterns("import-report.jsonl"))
    with_helper = next(t for t in GOOD if (FIXTURES / "good" / t / "reward" / "helpers.py").is_file())
    spec = spec_of(folder, with_helper)
    before = compile_task(load_task_spec(spec), 0).hash
    helpers = spec.parent / "reward" / "helpers.py"
    helpers.write_text(helpers.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert compile_task(load_task_spec(spec), 0).hash != before


def test_validate_skips_the_yaml_input_files_of_imported_tasks(imported):
    result = CliRunner().invoke(main, ["validate", "--static", str(imported)])
    assert result.exit_code == 0, result.output
    yaml_inputs = sum(1 for t in GOOD for p in (FIXTURES / "good" / t / "input_files").rglob("*.y*ml"))
    assert f"skipped {yaml_inputs} YAML data file(s) without apiVersion or kind" in result.output
    assert f"{len(GOOD) + 3} files valid" in result.output  # the tasks, the persona and the two workspaces
