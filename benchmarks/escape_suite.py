"""Run every hostile agent of the red-team suite against a sandbox backend; one line per attack.

    python benchmarks/escape_suite.py                 # local (bubblewrap) and, where a daemon runs, docker
    python benchmarks/escape_suite.py --backend local --only deep_tree

Each attack (tests/hostile.py) runs as a black-box agent in a task shaped like an imported published
task, beside a do-nothing and an honest agent. `contained` means: the run completed, no host file
changed, the attacker was graded (not `error`) no better than doing nothing, the honest agent
still scored 1.0, nothing was left behind, and the attack's own aim failed. Otherwise `ESCAPED`
and what it achieved. Exit status 1 if anything escaped.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from clawgym.cli.main import main as cli  # noqa: E402
from clawgym.files.tempdirs import work_root  # noqa: E402
from hostile import ATTACKS, Arena, contained  # noqa: E402


def _docker_problem() -> str | None:
    from clawgym.sandbox.docker import docker_problem

    return docker_problem()


def run_one(backend: str, attack) -> tuple[str, float]:
    with tempfile.TemporaryDirectory(prefix="escape-suite-") as tmp:
        os.chmod(tmp, 0o755)
        arena = Arena(Path(tmp), ROOT / "tests" / "fixtures" / "lib")
        spec = arena.run_spec(attack, backend)
        before = arena.fingerprint()
        t0 = time.monotonic()
        result = CliRunner().invoke(cli, ["run", str(spec), "--quiet"])
        seconds = time.monotonic() - t0
        if result.exit_code != 0:
            return f"ESCAPED: the run stopped (exit {result.exit_code}): {result.output.strip()[-200:]}", seconds
        leftovers = sorted(p.name for p in work_root().glob(f"clawgym-*-{os.getpid()}-*"))
        problems = contained(arena, attack, before, leftovers)
        return ("contained" if not problems else "ESCAPED: " + "; ".join(problems)[:400]), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend",
        action="append",
        choices=["local", "docker"],
        help="backend(s) to attack (default: local, and docker where a daemon runs)",
    )
    parser.add_argument("--only", action="append", help="attack name(s) to run (default: all)")
    args = parser.parse_args()
    backends = args.backend or ["local", "docker"]
    attacks = [a for a in ATTACKS if not args.only or a.name in args.only]
    escaped = 0
    print(f"{'backend':8} {'attack':17} {'class':52} result")
    for backend in backends:
        if backend == "docker" and (why := _docker_problem()):
            print(f"{backend:8} {'(all)':17} {'':52} skipped: {why}")
            continue
        for attack in attacks:
            verdict, seconds = run_one(backend, attack)
            escaped += not verdict.startswith("contained")
            print(f"{backend:8} {attack.name:17} {attack.cls[:52]:52} {verdict} ({seconds:.1f} s)", flush=True)
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
