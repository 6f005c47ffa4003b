"""Records that cross stages: the `Trajectory` noun (`trajectory.py`) and the JSONL trajectory
and results-folder store (`store.py`).
"""
