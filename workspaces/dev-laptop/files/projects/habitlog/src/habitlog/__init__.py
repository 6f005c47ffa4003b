"""habitlog: track habits from a plain CSV log."""

__version__ = "1.4.2"
