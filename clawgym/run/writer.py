"""Write-behind for trial results: a trial's files are written by a writer thread of lower CPU
priority, so the trial's concurrency slot is free for the next trial as soon as it ends.

With many trials in flight, trials end in bursts (they start together and wait on models for the
same stretches); writing each one's files on the spot (a folder and three files, two of them
fsynced) then sits between a trial and the next one's start, competing for the CPU with the trials
that are starting. Handed to `ResultsWriter`, the files are written in the idle time between
bursts instead. Nothing is weaker than before: a trial counts as finished (progress, `on_result`,
resume) only once its files are written (record.json last, as `write_outcome` does), a kill loses
only trials not yet written, which resume runs again, and a run returns after every write.

One writer per process: the executors (`local.py`, `process_worker.py`) share it. Writes from
each trial are independent, so a few threads write at once (the fsyncs of several trials share
the file system's journal commits).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .trial import TrialOutcome, write_outcome

log = logging.getLogger(__name__)

WRITER_THREADS = 4
WRITER_NICE = 10  # below the trials' own threads: writes use the CPU the trials leave idle


def _lower_priority() -> None:
    try:  # per thread on Linux: the kernel schedules threads, and this one's id is its own
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WRITER_NICE)
    except (AttributeError, OSError):
        pass


class ResultsWriter:
    """Writes trials' files in the background; `submit` returns a future done once they are on disk."""

    def __init__(self, threads: int = WRITER_THREADS) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """In a forked child (a worker process): the parent's threads are not here; start afresh."""
        self._lock = threading.Lock()
        self._pool = None

    def submit(self, trial_dir: Path, outcome: TrialOutcome) -> "Future[TrialOutcome]":
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._threads, thread_name_prefix="clawgym-results", initializer=_lower_priority
                )
            return self._pool.submit(_write, trial_dir, outcome)

    def close(self) -> None:
        """Wait for every queued write; the threads end (a later `submit` starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def _write(trial_dir: Path, outcome: TrialOutcome) -> TrialOutcome:
    write_outcome(trial_dir, outcome)
    return outcome


WRITER = ResultsWriter()
