"""`python -m clawgym.cli` runs the command line (as `clawgym` does)."""

from .main import main

main()
