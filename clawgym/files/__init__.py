"""File helpers every layer uses: safe walks and reads that never follow links (`safefs.py`),
private temp folders (`tempdirs.py`), printable and quoted text (`textsafe.py`) and every
atomic writer (`atomic.py`: bytes, text, JSON and JSON Lines).
"""
