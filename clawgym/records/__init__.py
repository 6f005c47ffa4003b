"""Records that cross stages: the `Trajectory` noun (`trajectory.py`), the typed, versioned
`TrialRecord` the run stage writes and every later stage reads (`trial_record.py`), and the JSONL
trajectory and results-folder store (`store.py`).
"""
