"""The command line: `main.py` holds the root `clawgym` group and the small commands; each command
group has its own module (`import_export.py`, `synth_group.py`, `train.py`, `bench.py`, `agents.py`;
`default_group.py` is the group that sends a bare argument to its default subcommand), and so does
each larger command (`run.py` is `clawgym run`, `validate.py`, `render.py`, `synth.py`,
`bench*.py`, `compare.py`, `docgen.py`); `support.py` maps errors to messages and exit codes.
"""

from .main import main

__all__ = ["main"]
