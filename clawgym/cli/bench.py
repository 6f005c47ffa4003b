"""`clawgym bench ...` and `clawgym diff`: the benchmark's commands.

The commands themselves live next to what they drive: calibration and versioning in
`cli_calibrate.py`, review, runs and the leaderboard in `cli_tools.py`; each module registers its
commands on the `bench` group here.
"""

from __future__ import annotations

import click

from . import bench_calibrate as cli_calibrate, bench_tools as cli_tools


@click.group()
def bench() -> None:
    """The benchmark: calibrate, review, run any model, and rank the results."""


cli_calibrate.register(bench)
cli_tools.register(bench)
diff_command = cli_tools.diff_command
