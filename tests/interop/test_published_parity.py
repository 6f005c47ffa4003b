"""Published graders see the world they were written for.

Every fixture task in tests/fixtures/clawgym_format/good/ is graded twice: our way (imported, a
trial with the `nop` agent and, where the task has a solution, the `oracle` agent, graded in our
grading sandbox) and the published way, rebuilt from the format's documentation: a workspace at
/root/.openclaw/workspace holding the input files and what OpenClaw 2026.4.1 seeds, the solution
run there as root, reward/ copied in after it, reward.sh run there. Both must give the same
number. A probe grader then compares what the two worlds show a grader, fact by fact.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from clawgym.checks.base import CheckContext
from clawgym.checks.grading import grading_folder, keep_as_left
from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.interop.clawgym_import import import_command
from clawgym.run.trial import Trial, execute_trial

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clawgym_format" / "good"
GOOD = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
MOUNT = "/root/.openclaw/workspace"
SEEDED = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def published_workspace(task_dir: Path, ws: Path) -> None:
    """A new workspace as the published rollouts had it before the first turn: the input files
    (copied verbatim), then what OpenClaw 2026.4.1 seeds (bootstrap files, `git init`, its state)."""
    if (task_dir / "input_files").is_dir():
        shutil.copytree(task_dir / "input_files", ws, symlinks=True)
    ws.mkdir(exist_ok=True)
    for name in SEEDED:
        (ws / name).write_text(f"# {name[:-3].title()}\n", encoding="utf-8")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(ws)], check=True, capture_output=True)
    else:
        (ws / ".git").mkdir()
    (ws / ".openclaw").mkdir()
    (ws / ".openclaw" / "workspace-state.json").write_text('{"version": 1, "bootstrapSeeded": true}\n')


def in_published_env(
    ws: Path, command: list[str], *, binds: tuple = (), env: tuple = ()
) -> subprocess.CompletedProcess:
    """Run `command` as root (all capabilities) with `ws` at /root/.openclaw/workspace as cwd, HOME=/root,
    a fresh /tmp and the host's system read-only."""
    argv = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL"]
    argv += ["--die-with-parent", "--ro-bind", "/", "/", "--tmpfs", "/root", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--bind", str(ws), MOUNT]
    for host, inside in binds:
        argv += ["--ro-bind", str(host), inside]
    argv += ["--chdir", MOUNT, "env", "-i", "HOME=/root", f"PATH={PATH}", *env, *command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def published_reward(task_dir: Path, tmp: Path, *, solve: bool) -> float:
    """What the task's own reward.sh prints, run the published way (0 when it fails)."""
    ws = tmp / ("published-solved" if solve else "published-untouched")
    published_workspace(task_dir, ws)
    if solve:
        done = in_published_env(
            ws, ["bash", "/run/solution/solve.sh"], binds=((task_dir / "solution", "/run/solution"),)
        )
        assert done.returncode == 0, done.stderr
    shutil.copytree(task_dir / "reward", ws / "reward")  # after the agent, as the format does
    entry = json.loads((task_dir / "data_entry.json").read_text(encoding="utf-8"))
    payload = tmp / "payload.json"
    payload.write_text(
        json.dumps(
            {**{k: entry[k] for k in ("task_id", "user_query", "metadata")}, "final_message": "", "transcript": []}
        )
    )
    res = in_published_env(
        ws,
        ["bash", f"{MOUNT}/reward/reward.sh"],
        binds=((payload, "/run/payload.json"),),
        env=("OPENCLAW_REWARD_PAYLOAD=/run/payload.json",),
    )
    return float(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else 0.0


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    outcomes = import_command(FIXTURES, out, quiet=True)
    assert [(o.source, o.status) for o in outcomes] == [(t, "imported") for t in GOOD]
    return out


def test_the_sandbox_python_has_the_published_test_runner(tmp_path, bwrap):
    """The published environment had pytest; graders run it with the system's python3, as ours do."""
    res = in_published_env(tmp_path, ["python3", "-c", "import pytest"])
    assert res.returncode == 0, "the system python3 has no pytest: run scripts/setup.sh (python3-pytest)"
    assert in_published_env(tmp_path, ["pytest", "--version"]).returncode == 0


@pytest.mark.parametrize("task_id", GOOD)
def test_untouched_and_solved_grade_as_published(imported, task_id, tmp_path, bwrap):
    task_dir = FIXTURES / task_id
    task = compile_task(load_task_spec(imported / task_id.replace("_", "-") / "task.yaml"), 0)
    nop = execute_trial(Trial(task, {"type": "nop"}))
    assert nop["reward"] == published_reward(task_dir, tmp_path, solve=False), nop["verdict"]
    if (task_dir / "solution" / "solve.sh").is_file():
        oracle = execute_trial(Trial(task, {"type": "oracle"}))
        assert oracle["reward"] == published_reward(task_dir, tmp_path, solve=True), oracle["verdict"]


def test_the_failing_shapes_score_above_zero_untouched(tmp_path, bwrap):
    """The two shapes that graded differently: a sub-score that passes on an untouched workspace
    only where nothing looks written outside output/ (task_0025), or where pytest runs (task_0026)."""
    for task_id, want in (("task_0025", 1 / 11), ("task_0026", 1 / 12)):
        assert published_reward(FIXTURES / task_id, tmp_path / task_id, solve=False) == want


PROBE = r"""
import importlib.util, json, locale, os, shutil, stat, subprocess, sys, tempfile

WS = "/root/.openclaw/workspace"
ws = sys.argv[1]
SHIPPED = ["data/a.csv", "tools/run.sh", "tests/test_probe.py", "lib/probe_helper.py"]
SEEDED = ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md",
          ".openclaw/workspace-state.json"]


def ok(cmd):
    try:
        return subprocess.run(cmd, cwd=ws, capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def nothing_written():
    start = max(os.lstat(os.path.join(ws, p)).st_mtime for p in SHIPPED + SEEDED)
    for root, dirs, files in os.walk(ws):
        if root == ws:
            dirs[:] = [d for d in dirs if d not in ("reward", ".git")]
        if any(os.lstat(os.path.join(root, n)).st_mtime > start for n in dirs + files):
            return False
    return True


def home_writable():
    home = os.path.expanduser("~")
    with tempfile.NamedTemporaryFile(dir=home):
        return home == "/root"


facts = {"nothing_written_before_grading": nothing_written()}
facts["argv_is_the_workspace"] = ws == WS
facts["file_in_the_workspace"] = os.path.abspath(__file__) == WS + "/reward/check.py"
facts["sys_path_starts_with_reward"] = sys.path[0] == WS + "/reward"
facts["cwd_is_the_workspace"] = os.getcwd() == WS
facts["runs_as_root"] = (os.getuid(), os.getgid()) == (0, 0)
facts["workspace_owned_by_root"] = all(
    os.lstat(os.path.join(r, n)).st_uid == 0 for r, ds, fs in os.walk(ws) for n in ds + fs
)
facts["home_is_root_and_writable"] = home_writable()
with tempfile.NamedTemporaryFile() as fh:
    facts["tmp_is_writable"] = tempfile.gettempdir() == "/tmp" and os.path.dirname(fh.name) == "/tmp"
facts["python3_on_path"] = shutil.which("python3") is not None
facts["pytest_importable"] = importlib.util.find_spec("pytest") is not None
facts["pytest_command"] = shutil.which("pytest") is not None and ok(["pytest", "--version"])
facts["unittest_runs_the_tests"] = ok([sys.executable, "-m", "unittest", "discover", "-s", "tests"])
facts["pytest_runs_the_tests"] = ok([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
facts["tests_leave_bytecode"] = os.path.isdir(os.path.join(ws, "tests", "__pycache__"))
sys.path.insert(0, os.path.join(ws, "lib"))
import probe_helper  # noqa: E402
facts["imports_leave_bytecode"] = probe_helper.ANSWER == 42 and os.path.isdir(os.path.join(ws, "lib", "__pycache__"))
facts["workspace_mode_755"] = stat.S_IMODE(os.stat(ws).st_mode) == 0o755
facts["reward_mode_755"] = stat.S_IMODE(os.stat(os.path.join(ws, "reward")).st_mode) == 0o755
facts["input_modes_kept"] = [stat.S_IMODE(os.stat(os.path.join(ws, p)).st_mode) for p in SHIPPED] == [
    0o644, 0o755, 0o644, 0o644]
facts["openclaw_seed_present"] = all(os.path.isfile(os.path.join(ws, p)) for p in SEEDED) and os.path.isdir(
    os.path.join(ws, ".git"))
facts["utf8"] = sys.getfilesystemencoding() == "utf-8" and locale.getpreferredencoding(False).lower() in (
    "utf-8", "utf8")
facts["stdin_is_empty"] = sys.stdin.read() == ""
print(json.dumps(facts))
"""


def probe_task(folder: Path) -> Path:
    """A published-layout task whose grader reports what it sees of its environment."""
    task = folder / "task_probe"
    for rel, text in {
        "data/a.csv": "city,visits\nLisbon,3\nPorto,5\n",
        "tools/run.sh": "#!/usr/bin/env bash\necho ok\n",
        "tests/test_probe.py": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n"
        "        self.assertTrue(True)\n",
        "lib/probe_helper.py": "ANSWER = 42\n",
    }.items():
        (task / "input_files" / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / "input_files" / rel).write_text(text)
    os.chmod(task / "input_files" / "tools" / "run.sh", 0o755)
    (task / "reward").mkdir()
    (task / "reward" / "check.py").write_text(PROBE)
    shutil.copy(FIXTURES / "task_0001" / "reward" / "reward.sh", task / "reward" / "reward.sh")
    entry = {
        "task_id": "task_probe",
        "user_query": "Add up the visits in data/a.csv and write the total to output/total.txt. Don't change "
        "anything else in the workspace.",
        "input_mount_dir": MOUNT,
        "metadata": {"category": "Systems & Automation", "grading_type": "automated"},
    }
    (task / "data_entry.json").write_text(json.dumps(entry, indent=2))
    return task


def test_a_grader_sees_what_it_saw_where_it_was_written(tmp_path, bwrap):
    task_dir = probe_task(tmp_path / "source")
    ws = tmp_path / "published"
    published_workspace(task_dir, ws)
    shutil.copytree(task_dir / "reward", ws / "reward")
    res = in_published_env(ws, ["python3", f"{MOUNT}/reward/check.py", MOUNT])
    published = {k: float(v) for k, v in json.loads(res.stdout).items()}
    assert set(published.values()) == {1.0}, published  # every fact holds where graders were written
    out = tmp_path / "imported"
    assert import_command(task_dir.parent, out, quiet=True)[0].status in ("imported", "warned")
    task = compile_task(load_task_spec(out / "task-probe" / "task.yaml"), 0)
    results = execute_trial(Trial(task, {"type": "nop"}))["verdict"]["results"]
    ours = {r["name"].removeprefix("reward: "): r["score"] for r in results if r["name"].startswith("reward: ")}
    assert ours == published


def test_the_copy_keeps_what_the_agent_left(tmp_path):
    """Times and file modes survive the copy into the grading sandbox; what grading rewrites with
    the same bytes gets them back, what it changes or adds does not."""
    final = tmp_path / "final"
    (final / "data").mkdir(parents=True)
    (final / "data" / "a.csv").write_text("x\n")
    (final / "data" / "b.csv").write_text("agent's\n")
    (final / "locked.txt").write_text("r\n")
    os.chmod(final / "locked.txt", 0o444)
    (final / "link").symlink_to("data/a.csv")
    old = 1_000_000_000
    for p in (final / "data" / "a.csv", final / "data" / "b.csv", final / "locked.txt", final / "data", final):
        os.utime(p, (old, old))
    os.utime(final / "link", (old, old), follow_symlinks=False)
    ctx = CheckContext(workspace=final, original=final, task_dir=tmp_path, params={})
    with grading_folder(ctx) as g:
        w = g.workspace
        (w / "data" / "a.csv").unlink()  # restored with the same bytes
        (w / "data" / "a.csv").write_text("x\n")
        (w / "data" / "b.csv").write_text("pristine\n")  # restored over the agent's change
        (w / "reward").mkdir(mode=0o700)  # the grader's folder, placed by grading
        (w / "reward" / "check.py").write_text("")
        keep_as_left(g)
        assert os.stat(w / "data" / "a.csv").st_mtime == old and os.stat(w / "data").st_mtime == old
        assert os.lstat(w / "link").st_mtime == old
        assert stat.S_IMODE(os.stat(w / "locked.txt").st_mode) == 0o444 and os.stat(w / "locked.txt").st_mtime == old
        assert os.stat(w / "data" / "b.csv").st_mtime > old  # grading wrote it
        assert os.stat(w).st_mtime > old  # reward/ was added
        assert stat.S_IMODE(os.stat(w).st_mode) == 0o755 and stat.S_IMODE(os.stat(w / "reward").st_mode) == 0o755
