"""Harbor interop: import Harbor task folders, export task specs to them, the harbor_tests check.

Fixtures (tests/fixtures/harbor/): three good tasks (reward.txt from a test script; reward.json
metrics with ENV; a Dockerfile whose RUN steps build files without the network) and two bad ones
(no instruction.md; a Dockerfile that runs pip install).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.checks.base import CheckContext
from clawgym.cli.main import main
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.interop import harbor_export, harbor_import
from clawgym.spec.task import Task, thaw
from clawgym.files.tempdirs import make_temp
from clawgym.verify import combine, run_checks

from conftest import BWRAP_PROBLEM

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the importer reads task.toml with tomli there
    tomllib = None

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "harbor"
SPECS = ROOT / "specs" / "tasks"
EXPORTED = [
    SPECS / "systems" / "disk-cleanup-script.yaml",  # exec + write steps, command checks
    SPECS / "planning" / "study-plan.yaml",  # script steps, python checks with scripts
    SPECS / "analysis" / "sales-trend.yaml",
]  # python step, many file checks
ROUND_TRIP = EXPORTED[:2]
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"local sandbox unavailable: {BWRAP_PROBLEM}")

PIP_REASON = (
    "Dockerfile line 3: RUN pip install --no-cache-dir pandas==2.2.2 needs the network at build time "
    "(pip), so the workspace cannot be built here"
)


# ---------------------------------------------------------------------------------------------
# Shared: fixtures imported, specs exported, everything run once through the normal runner


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("harbor")
    imported = harbor_import.import_command(FIXTURES, root / "imported")
    exported = harbor_export.export_command(EXPORTED, root / "exported", seed=0)
    return {"root": root, "imported": {o.source: o for o in imported}, "exported": exported}


@pytest.fixture(scope="module")
def runs(world):
    """oracle and nop over the imported fixtures and the export → import round trip, via `clawgym run`."""
    if BWRAP_PROBLEM:
        pytest.skip(f"local sandbox unavailable: {BWRAP_PROBLEM}")
    root = world["root"]
    trip = harbor_import.import_command(root / "exported", root / "imported", sandbox=None)
    assert {o.source: o.status for o in trip if o.source in {p.stem for p in ROUND_TRIP}} == {
        p.stem: "imported" for p in ROUND_TRIP
    }
    tasks = ", ".join(
        f'"{n}/task.yaml"' for n in ["csv-summary", "log-level-report", "notes-index", *(p.stem for p in ROUND_TRIP)]
    )
    spec = root / "imported" / "run.yaml"
    spec.write_text(
        f"apiVersion: clawgym/v1\nkind: Run\nname: harbor\ntasks: [{tasks}]\n"
        f"agents: [{{type: oracle}}, {{type: nop}}]\nconcurrency: 6\nout: {root / 'out'}\n"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    return {p.parent.name: json.loads(p.read_text()) for p in (root / "out" / "trials").glob("*/record.json")}


# ---------------------------------------------------------------------------------------------
# Import


def test_import_summary_names_each_outcome(world):
    got = {name: (o.status, o.reasons) for name, o in world["imported"].items()}
    assert got["no-instruction"] == ("rejected", ["no instruction.md (the instruction given to the agent)"])
    assert got["pip-install"] == ("rejected", [PIP_REASON])
    assert got["csv-summary"] == ("imported", [])
    assert got["log-metrics"] == (
        "warned",
        ["ENV PYTHONUNBUFFERED, REPORT_DIR reach the Harbor tests but not the agent"],
    )
    if BWRAP_PROBLEM is None:
        assert got["notes-index"] == ("imported", [])
    report = [json.loads(ln) for ln in (world["root"] / "imported" / "import-report.jsonl").read_text().splitlines()]
    assert [r["source"] for r in report] == sorted(world["imported"])
    assert not (world["root"] / "imported" / "pip-install").exists()


def test_imported_spec_maps_toml_dockerfile_and_folders(world):
    folder = world["root"] / "imported" / "log-level-report"  # named after [task] name
    spec = load_task_spec(folder / "task.yaml")
    data = spec.data
    assert data["category"] == "systems" and data["difficulty"] == "medium"
    assert data["tags"] == ["logs", "csv", "harbor"]
    assert data["persona"] == "workspace-owner" and data["workspace"] == "blank"
    assert data["mount"] == "/workspace"
    assert data["limits"] == {"seconds": 240.0, "verify_seconds": 150.0, "memory_mb": 1024}
    assert "network" not in data
    assert data["solution"] == [{"name": "solution/solve.sh", "script": "solution/solve.sh"}]
    assert data["checks"] == [
        {
            "type": "harbor_tests",
            "name": "Harbor tests",
            "script": "tests/test.sh",
            "workdir": "/workspace",
            "timeout": 90.0,
            "env": {"REPORT_DIR": "report", "PYTHONUNBUFFERED": "1"},
            "memory_mb": 1024,
        }
    ]
    task = compile_task(spec, 0)
    assert task.instruction == (FIXTURES / "log-metrics" / "instruction.md").read_text()
    # COPY service.log logs/service.log, relative to WORKDIR
    assert task.files["logs/service.log"] == (FIXTURES / "log-metrics" / "environment" / "service.log").read_bytes()
    # the verifier and the solution never reach the agent's workspace
    for name in ("csv-summary", "log-level-report"):
        files = compile_task(load_task_spec(world["root"] / "imported" / name / "task.yaml"), 0).files
        assert not any(p.startswith(("tests/", "solution/")) or p.endswith(("test.sh", "solve.sh")) for p in files)
        assert not any(b"/logs/verifier" in content for content in files.values())
    csv = load_task_spec(world["root"] / "imported" / "csv-summary" / "task.yaml").data
    assert csv["category"] == "analysis" and csv["mount"] == "/app" and csv["limits"]["memory_mb"] == 1024


@needs_bwrap
def test_dockerfile_run_steps_build_files_without_network(world):
    spec = load_task_spec(world["root"] / "imported" / "notes-index" / "task.yaml")
    assert "category" not in spec.data and spec.data["tags"] == ["markdown", "note-taking", "harbor"]
    files = compile_task(spec, 0).files
    assert files["notes/archive/2025-02.md"] == b"# Archive 02\n\nOld notes.\n"  # ARG seen by RUN, cwd /app
    assert files["index.toml"] == b'title_prefix = "Index of notes"\n'
    assert files["notes/work/todo.txt"] == b"not a markdown file\n"


def test_bad_task_toml_missing_solution_and_tests(tmp_path):
    src = tmp_path / "src"
    for name in ("broken-toml", "no-solution", "no-tests", "outside-workdir"):
        shutil.copytree(FIXTURES / "csv-summary", src / name)
    (src / "broken-toml" / "task.toml").write_text('version = "1.0"\n[metadata\ndifficulty = "easy"\n')
    shutil.rmtree(src / "no-solution" / "solution")
    (src / "no-tests" / "tests" / "test.sh").unlink()
    (src / "outside-workdir" / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim-bookworm\nWORKDIR /app\nCOPY data/ /srv/data/\n"
    )
    out = {o.source: (o.status, o.reasons) for o in harbor_import.import_command(src, tmp_path / "out")}
    status, reasons = out["broken-toml"]
    assert status == "rejected" and len(reasons) == 1
    assert reasons[0].startswith("task.toml is not valid TOML: ") and "line 2" in reasons[0]
    assert out["no-solution"] == (
        "warned",
        ["no solution/solve.sh: imported without a reference solution (the oracle agent has nothing to run)"],
    )
    assert "solution" not in load_task_spec(tmp_path / "out" / "no-solution" / "task.yaml").data
    assert out["no-tests"] == ("rejected", ["no tests/test.sh (the verifier that writes the reward)"])
    assert out["outside-workdir"] == (
        "rejected",
        ["Dockerfile line 3: destination /srv/data lies outside the WORKDIR /app; only the workspace is carried over"],
    )


def test_import_cli_prints_summary(tmp_path):
    result = CliRunner().invoke(main, ["import", "harbor", str(FIXTURES / "pip-install"), "--out", str(tmp_path)])
    assert result.exit_code == 0
    assert f"rejected pip-install: {PIP_REASON}" in " ".join(result.output.split())
    assert "1 Harbor task folder(s): 0 imported, 0 imported with warnings, 1 rejected" in result.output


def test_network_detection():
    assert harbor_import.network_word("apt-get update && apt-get install -y jq") == "apt-get"
    assert harbor_import.network_word("python3 -m pip install requests") == "pip"
    assert harbor_import.network_word("git clone https://example.com/x.git") == "git clone"
    assert harbor_import.network_word("set -o pipefail; mkdir -p out && git init") is None
    assert harbor_import.network_word("# curl is not used\necho hi > a.txt") is None


# ---------------------------------------------------------------------------------------------
# Imported tasks through the normal runner


@needs_bwrap
def test_imported_tasks_oracle_passes_nop_fails(runs):
    for name in ("csv-summary", "log-level-report", "notes-index"):
        oracle, nop = runs[f"{name}.s0.oracle.a0"], runs[f"{name}.s0.nop.a0"]
        assert oracle["status"] == "passed" and oracle["reward"] == 1.0, oracle
        assert nop["reward"] is not None and nop["reward"] <= 0.1, nop
    metrics = runs["log-level-report.s0.oracle.a0"]["verdict"]["results"][0]
    assert metrics["reason"].startswith("reward 1 (mean of 5 metrics in reward.json: levels_header=1")
    assert {s["name"] for s in metrics["details"]["subscores"]} == {
        "levels_header",
        "levels_counts",
        "levels_order",
        "first_error",
        "log_untouched",
    }
    notes = runs["notes-index.s0.nop.a0"]["verdict"]["results"][0]
    assert notes["reason"] == "reward 0 (reward.json 'reward')"


@needs_bwrap
def test_round_trip_export_import_oracle(runs):
    for path in ROUND_TRIP:
        assert runs[f"{path.stem}.s0.oracle.a0"]["reward"] == 1.0
        assert runs[f"{path.stem}.s0.nop.a0"]["reward"] <= 0.1


# ---------------------------------------------------------------------------------------------
# The harbor_tests check on its own


def _grade(tmp_path: Path, script: str, timeout: float = 20, files: dict | None = None) -> dict:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    for rel, text in (files or {"data.txt": "hello\n"}).items():
        (ws / rel).write_text(text)
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "test.sh").write_text(script)
    (tmp_path / "t" / "helper.txt").write_text("from the tests folder\n")
    ctx = CheckContext(workspace=ws, original=ws, task_dir=tmp_path, params={})
    check = {
        "type": "harbor_tests",
        "script": "t/test.sh",
        "workdir": "/app",
        "timeout": timeout,
        "env": {"GREETING": "hi"},
    }
    verdict = combine(run_checks([check], ctx))
    return verdict.results[0].to_dict()


@needs_bwrap
def test_harbor_check_sees_workspace_tests_and_logs_only(tmp_path):
    r = _grade(
        tmp_path,
        """
set -e
test "$PWD" = /app && grep -q hello data.txt && test "$GREETING" = hi
grep -q 'from the tests folder' /tests/helper.txt
if touch /tests/new 2>/dev/null; then exit 3; fi
if (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null; then exit 5; fi
echo changed > data.txt
echo 0.75 > /logs/verifier/reward.txt
""",
    )
    assert r["score"] == 0.75 and r["reason"] == "reward 0.75 (reward.txt)", r
    assert (tmp_path / "ws" / "data.txt").read_text() == "hello\n"  # graded a copy


@needs_bwrap
@pytest.mark.parametrize(
    "script, reason",
    [
        (
            "echo checking\n",
            "the verifier wrote no reward (/logs/verifier/reward.txt or reward.json) (last output: checking)",
        ),
        ("echo abc > /logs/verifier/reward.txt\n", "reward.txt holds 'abc', not a number"),
        ("echo '[1, 2]' > /logs/verifier/reward.json\n", "reward.json is not a JSON object of named numbers: '[1, 2]'"),
        ("echo 1 > /logs/verifier/reward.txt; sleep 30\n", "t/test.sh timed out after 1s"),
        ("echo 2.5 > /logs/verifier/reward.txt\n", "reward 2.5 (reward.txt) clamped to [0, 1]"),
        # a verifier that fails is a failed grade, whatever reward it wrote before
        ("echo 1 > /logs/verifier/reward.txt; exit 4\n", "test.sh failed (exit status 4)"),
        (
            "echo 1 > /logs/verifier/reward.txt; kill -9 $$\n",
            "test.sh failed (exit status 137)",
        ),  # + a shell's "Killed"
    ],
)
def test_harbor_check_bad_rewards(tmp_path, script, reason):
    r = _grade(tmp_path, script, timeout=1 if "sleep" in script else 20)
    assert r["reason"] == reason or r["reason"].startswith(reason + "; last output:")
    assert r["score"] == (1.0 if "clamped" in reason else 0.0)


# ---------------------------------------------------------------------------------------------
# Export


def test_export_refuses_what_harbor_cannot_express(tmp_path):
    spec = ROOT / "tests" / "fixtures" / "lib" / "specs" / "effects.yaml"
    (outcome,) = harbor_export.export_command([spec], tmp_path)
    assert outcome.status == "refused" and not (tmp_path / "effects").exists()
    assert outcome.reasons == [
        "solution step 1 is a `message` step (a simulated tool call recorded in the trajectory), which "
        "solution/solve.sh cannot express",
        "solution step 2 is a `cron` step (a simulated tool call recorded in the trajectory), which "
        "solution/solve.sh cannot express",
        "check 'message_sent #1' (message_sent) grades the agent's recorded tool calls, which Harbor does not record",
        "check 'cron_job #2' (cron_job) grades the agent's recorded tool calls, which Harbor does not record",
    ]
    result = CliRunner().invoke(
        main,
        ["export", "harbor", str(spec), str(SPECS / "analysis" / "sales-trend.yaml"), "--out", str(tmp_path / "cli")],
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "refused effects" in text and "exported sales-trend" in text
    assert "2 spec(s): 1 exported, 1 refused" in text


def test_export_layout_and_no_leaks(world):
    assert [(o.name, o.status, o.reasons) for o in world["exported"]] == [(p.stem, "exported", []) for p in EXPORTED]
    folder = world["root"] / "exported" / "sales-trend"
    task = compile_task(load_task_spec(EXPORTED[2]), 0)
    assert (folder / "instruction.md").read_text() == task.instruction
    toml = (tomllib or pytest.importorskip("tomli")).loads((folder / "task.toml").read_text())
    assert toml["task"]["name"] == "sales-trend"
    assert toml["metadata"]["author"] == "clawgym export"
    assert toml["metadata"]["category"] == "analysis" and toml["metadata"]["difficulty"] == "medium"
    assert toml["metadata"]["tags"][-1] == "clawgym" and "time-series" in toml["metadata"]["tags"]
    assert toml["metadata"]["clawgym_spec"] == "specs/tasks/analysis/sales-trend.yaml"
    assert toml["agent"]["timeout_sec"] == 600 and toml["verifier"]["timeout_sec"] == 300
    assert toml["environment"] == {"cpus": 1, "memory_mb": 2048, "gpus": 0, "allow_internet": False}
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    assert "FROM python:3.12-slim-bookworm" in dockerfile and f"WORKDIR {task.mount}\n" in dockerfile
    env_files = {
        p.relative_to(folder / "environment" / "workspace").as_posix()
        for p in (folder / "environment" / "workspace").rglob("*")
        if p.is_file()
    }
    assert env_files == set(task.files)  # the agent's workspace, nothing more
    graded = json.loads((folder / "tests" / "task.json").read_text())
    assert graded["checks"] == json.loads(json.dumps(thaw(task.checks), default=str))
    for p in (folder / "environment").rglob("*"):  # expected values only under tests/
        assert p.name not in ("task.json", "clawgym.zip") and "harbor_grade" not in p.name
    assert os.access(folder / "tests" / "test.sh", os.X_OK) and os.access(folder / "solution" / "solve.sh", os.X_OK)
    for p in folder.rglob("*"):  # no path of this machine inside
        if p.is_file() and p.suffix != ".zip":
            assert str(ROOT) not in p.read_text(errors="replace")
    study = world["root"] / "exported" / "study-plan" / "tests" / "task_files" / "study-plan" / "grade_plan.py"
    assert study.is_file()


def _workdir(folder: Path) -> str:
    return re.search(r"^WORKDIR (\S+)$", (folder / "environment" / "Dockerfile").read_text(), re.M)[1]


def _harbor_way(folder: Path, solve: bool, grader: list[str] | None = None) -> str | None:
    """Run an exported folder as Harbor would: workspace from environment/, solve.sh, then tests/test.sh."""
    from clawgym.sandbox.bubblewrap import LocalSandbox

    tmp = make_temp("harbortest")  # below a world-searchable folder: a root-run sandbox binds it as its uid
    try:
        os.chmod(tmp, 0o711)
        ws, logs = tmp / "ws", tmp / "logs"
        shutil.copytree(folder / "environment" / "workspace", ws)  # COPY workspace/ WORKDIR/
        shutil.copytree(folder / "solution", tmp / "solution")
        shutil.copytree(folder / "tests", tmp / "tests")
        (logs / "verifier").mkdir(parents=True)
        mount = _workdir(folder)
        if solve:
            with LocalSandbox(ws, mount=mount, ro_binds=[[str(tmp / "solution"), "/solution"]]) as box:
                res = box.exec(["bash", "/solution/solve.sh"], timeout=120)
                assert res.exit_code == 0, res.output[-2000:]
        with LocalSandbox(
            ws, mount=mount, ro_binds=[[str(tmp / "tests"), "/tests"]], rw_binds=[[str(logs), "/logs"]]
        ) as box:
            res = box.exec(grader or ["bash", "/tests/test.sh"], timeout=120)
            assert res.exit_code == 0, res.output[-2000:]
        reward = logs / "verifier" / "reward.txt"
        return reward.read_text() if reward.is_file() else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("spec", EXPORTED, ids=lambda p: p.stem)
def test_export_is_faithful_the_harbor_way(world, spec):
    folder = world["root"] / "exported" / spec.stem
    assert float(_harbor_way(folder, solve=True)) == 1.0
    assert float(_harbor_way(folder, solve=False)) <= 0.1


@needs_bwrap
def test_exported_grader_needs_only_the_standard_library(world, tmp_path):
    """Graded with `python3 -I -S` (no site-packages: no pyyaml, jinja2, jsonschema) it still gives 1.0."""
    folder = world["root"] / "exported" / "disk-cleanup-script"  # command checks: the inline sandbox
    grader = [
        "python3",
        "-I",
        "-S",
        "/tests/clawgym.zip",
        "--tests",
        "/tests",
        "--workspace",
        _workdir(folder),
        "--logs",
        "/logs/verifier",
    ]
    assert float(_harbor_way(folder, solve=True, grader=grader)) == 1.0
    # on this host, outside any sandbox, against the untouched workspace
    logs = tmp_path / "logs"
    res = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            str(folder / "tests" / "clawgym.zip"),
            "--tests",
            str(folder / "tests"),
            "--workspace",
            str(folder / "environment" / "workspace"),
            "--logs",
            str(logs),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    metrics = json.loads((logs / "reward.json").read_text())
    assert metrics["reward"] == float((logs / "reward.txt").read_text()) <= 0.1
    assert len(metrics) == 1 + len(json.loads((folder / "tests" / "task.json").read_text())["checks"])


@needs_bwrap
def test_solve_script_writes_exact_bytes(tmp_path):
    from clawgym.sandbox.bubblewrap import LocalSandbox

    steps = [
        {"write": {"path": "out/a.txt", "content": "no newline at the end"}},
        {"write": {"path": "b.txt", "content": "two lines\nend\n"}},
        {"python": "open('c.txt', 'w').write('CLAWGYM_PY_2\\n')"},
        {"exec": "cd out && printf '%s' \"$(cat a.txt)\" > ../d.txt; cd /nowhere 2>/dev/null; true"},
        {"script": "s.sh", "interpreter": "bash", "source": "echo from-script > e.txt\n"},
    ]
    task = Task(
        name="t",
        category="",
        seed=0,
        params={},
        persona="p",
        skills=(),
        workspace="w",
        instruction="x",
        files={},
        executables=frozenset(),
        solution=tuple(steps),
        checks=({"type": "file_exists"},),
        mount="/app",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    with LocalSandbox(ws, mount="/app") as box:
        res = box.exec(["bash", "-s"], stdin=harbor_export.solve_script(task), timeout=60)
    assert res.exit_code == 0, res.output
    assert (ws / "out" / "a.txt").read_bytes() == b"no newline at the end"
    assert (ws / "b.txt").read_bytes() == b"two lines\nend\n"
    assert (ws / "c.txt").read_text() == "CLAWGYM_PY_2\n"
    assert (ws / "d.txt").read_bytes() == b"no newline at the end"
    assert (ws / "e.txt").read_text() == "from-script\n"
    failing = Task(
        **{
            **{
                f: getattr(task, f)
                for f in (
                    "name",
                    "category",
                    "seed",
                    "params",
                    "persona",
                    "skills",
                    "workspace",
                    "instruction",
                    "files",
                    "executables",
                    "checks",
                    "mount",
                )
            },
            "solution": ({"exec": "false"}, {"write": {"path": "never.txt", "content": "x\n"}}),
        }
    )
    with LocalSandbox(ws, mount="/app") as box:
        res = box.exec(["bash", "-s"], stdin=harbor_export.solve_script(failing), timeout=60)
    assert res.exit_code == 1 and "solve.sh: step 1 failed (exit status 1)" in res.output
    assert not (ws / "never.txt").exists()


@needs_bwrap
def test_local_sandbox_writable_bind_is_handed_back(tmp_path):
    from clawgym.sandbox.bubblewrap import LocalSandbox

    tmp = make_temp("harbortest")
    try:
        os.chmod(tmp, 0o711)
        (tmp / "ws").mkdir()
        (tmp / "logs").mkdir()
        (tmp / "logs" / "old.txt").write_text("kept\n")
        with LocalSandbox(tmp / "ws", mount="/app", rw_binds=[[str(tmp / "logs"), "/logs"]]) as box:
            res = box.exec("cat /logs/old.txt && echo new > /logs/new.txt && touch /app/x && ! touch /elsewhere")
            assert res.exit_code == 0, res.output
        assert (tmp / "logs" / "new.txt").read_text() == "new\n" and (tmp / "ws" / "x").exists()
        owner = (os.getuid(), os.getgid())
        for p in (tmp / "logs", tmp / "logs" / "new.txt", tmp / "logs" / "old.txt"):
            assert (p.stat().st_uid, p.stat().st_gid) == owner
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.docker
def test_imported_harbor_tasks_run_in_the_docker_sandbox(world, tmp_path):
    """The harbor_tests check binds /tests and /logs into a Docker sandbox as well as into bubblewrap."""
    from clawgym.sandbox.docker import docker_problem

    why = docker_problem()
    if why is not None:
        pytest.skip(f"docker sandbox unavailable: {why}")
    root = world["root"] / "imported"
    spec = tmp_path / "run.yaml"
    spec.write_text(
        "apiVersion: clawgym/v1\nkind: Run\nname: harbor-docker\n"
        f"tasks: [{root / 'csv-summary' / 'task.yaml'}, {root / 'log-level-report' / 'task.yaml'}]\n"
        "agents: [{type: oracle}, {type: nop}]\nsandbox: {type: docker}\nconcurrency: 2\n"
        f"out: {tmp_path / 'out'}\n"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "trials").glob("*/record.json")]
    rewards = sorted((r["agent"]["type"], r["task"]["name"], r["reward"]) for r in records)
    assert rewards == [
        ("nop", "csv-summary", 0.0),
        ("nop", "log-level-report", 0.0),
        ("oracle", "csv-summary", 1.0),
        ("oracle", "log-level-report", 1.0),
    ]
