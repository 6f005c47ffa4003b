"""The red team: hostile agents against the whole trial machinery (see tests/hostile.py).

For every attack: the run completes, the host is untouched (canary folder, task folder, /etc),
the attacker's grade is no better than doing nothing, an honest agent in the same run still
scores 1.0, the attacker's trials are graded (never `error`, which would let an agent escape a
bad reward), and nothing is left behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.cli.main import main
from clawgym.files.tempdirs import work_root

sys.path.insert(0, str(Path(__file__).parent.parent))
from hostile import ATTACKS, Arena, Attack, contained  # noqa: E402

FIXTURE_LIB = Path(__file__).parent.parent / "fixtures" / "lib"
BY_NAME = {a.name: a for a in ATTACKS}


def _leftovers() -> list[str]:
    pid = os.getpid()
    return sorted(p.name for p in work_root().glob(f"clawgym-*-{pid}-*"))


@pytest.fixture
def arena(tmp_path, bwrap):
    os.chmod(tmp_path, 0o755)  # the canary must be reachable: a contained attack, not an unreachable one
    return Arena(tmp_path, FIXTURE_LIB)


@pytest.mark.parametrize("name", [a.name for a in ATTACKS])
def test_attack_is_contained(arena, name):
    attack = BY_NAME[name]
    spec = arena.run_spec(attack)
    before = arena.fingerprint()
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output  # the run goes on whatever the agent did
    assert contained(arena, attack, before, _leftovers()) == []
    if name == "deep_tree":  # the next run on this machine starts (and sweeps) cleanly
        spec = arena.run_spec(Attack("after", "", "true"))
        again = CliRunner().invoke(main, ["run", str(spec), "--quiet", "--out", str(arena.root / "again")])
        assert again.exit_code == 0, again.output


def test_each_attack_would_have_won_before(arena):
    """The judge is not blind: the problems it reports are the ones the attacks aim at."""
    attack = BY_NAME["planted_program"]
    spec = arena.run_spec(attack)
    before = arena.fingerprint()
    (arena.canary / "owned.txt").write_text("owned\n")  # as if the planted program had reached the host
    CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    problems = contained(arena, attack, before, ["clawgym-trial-1-x"])
    assert any("new host file" in p for p in problems) and any("left behind" in p for p in problems)


def test_agent_configs_may_bind_only_their_own_folders(arena):
    """`ro_binds: [["/", "/host"]]` and binding the task folder are refused at their lines, before anything runs."""
    spec = arena.run_spec(Attack("binds", "agent configs", "true"))
    own = arena.root / "agent-install"
    own.mkdir()
    text = (
        f"apiVersion: clawgym/v1\nkind: Run\nname: binds\ntasks: [{arena.task('binds', False)}]\n"
        f"agents:\n  - type: command\n    run: 'true'\n    policy: {{type: scripted, turns: [ok]}}\n"
        f"    install: {own}\n"
        f"    ro_binds:\n      - ['/', '/host']\n      - ['{arena.task_dir}', '/task']\n      - '{own}'\n"
        f"out: {arena.root / 'out'}\n"
    )
    spec.write_text(text)
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 2, result.output
    out = result.output + (result.stderr or "")
    assert f"{spec}:11: agents[0].ro_binds[0]: bind / is not inside the agent's own folders" in out
    assert f"{spec}:12: agents[0].ro_binds[1]" in out
    assert "ro_binds[2]" not in out and "Traceback" not in out
    assert not (arena.root / "out").exists()
    for install, why in (("/", "is a system folder"), (str(arena.lib), "holds"), ("/proc/self", "lies inside /proc")):
        spec.write_text(text.replace(f"install: {own}", f"install: {install}"))
        result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
        assert result.exit_code == 2 and why in result.output + (result.stderr or ""), result.output


def test_a_socket_inside_an_agent_folder_is_refused(arena):
    import socket

    own = arena.root / "agent-install"
    own.mkdir()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(own / "daemon.sock"))
    try:
        from clawgym.agent.binds import bind_problems

        problems = bind_problems({"install": str(own), "ro_binds": [str(own)]})
        assert len(problems) == 1 and "a socket, device or pipe (daemon.sock)" in problems[0][1]
    finally:
        s.close()


def test_escape_suite_prints_one_line_per_attack():
    root = Path(__file__).parents[2]
    p = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "escape_suite.py"),
            "--backend",
            "local",
            "--only",
            "diff_injection",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"^local\s+diff_injection\s+.*contained", p.stdout, re.M), p.stdout
