"""The command line: `main.py` holds the root `clawgym` group and the small commands; each
larger command has its own module (`run.py` is `clawgym run`, `validate.py`, `render.py`, `synth.py`,
`bench*.py`, `docgen.py`), and `support.py` maps errors to messages and exit codes.
"""

from .main import main

__all__ = ["main"]
