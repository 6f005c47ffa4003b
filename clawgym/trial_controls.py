"""Per-trial controls the runner hands to the code a trial runs: cancellation, and the run's
caps on live sandboxes and concurrent model requests.

Trials run blocking code (agents, sandboxes, model clients) in worker threads; the runner sets a
`Controls` for the thread with :func:`use`, and library code reads it with :func:`current`:

- `CancelToken`: set when the trial times out or the run is interrupted. Waits in the trial
  (`sleep`, a slot, the verifier) return early; callbacks (closing the sandbox) run at once.
- `sandbox_slot()`: held while a sandbox is alive, at most `sandboxes` at once.
- `model_request()`: held around each model call (agent and judge), at most `model_requests`.

Outside a run (tests, a single `execute_trial`) the defaults impose no cap and never cancel.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from .errors import InfraError

POLL_S = 0.2


class TrialCancelled(InfraError):
    """The trial was cancelled (timed out, or the run was interrupted)."""


class CancelToken:
    """A one-shot, thread-safe cancellation flag with callbacks.

    `finish()` and `cancel()` race for the trial's outcome: whichever comes first wins, so a
    trial that finished is never also recorded as timed out, and a timed-out one never writes.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._finished = False
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str) -> bool:
        """Cancel unless the trial already finished; returns whether this call cancelled it."""
        with self._lock:
            if self._finished or self._event.is_set():
                return False
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - a failing cleanup must not stop the others
                pass
        return True

    def finish(self) -> bool:
        """Claim the outcome for the trial; False if it was cancelled first."""
        with self._lock:
            if self._event.is_set():
                return False
            self._finished = True
            return True

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` when cancelled (at once if already); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._discard(callback)
        callback()
        return lambda: None

    def _discard(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if cancelled meanwhile."""
        return self._event.wait(max(0.0, seconds))

    def check(self) -> None:
        """Raise TrialCancelled if cancelled."""
        if self._event.is_set():
            raise TrialCancelled(self.reason or "the trial was cancelled")


class Semaphore(Protocol):
    """What a cap needs of a semaphore: `threading`'s, or `multiprocessing`'s to share across processes."""

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool: ...

    def release(self) -> None: ...


class Ledger:
    """How many slots of one shared cap this process holds, kept in memory its parent can read
    (a cell of `SharedCounts`): when a worker process dies holding slots, the runner gives them
    back (`reclaim`) instead of the cap shrinking for the rest of the run."""

    def __init__(self, counts: Any, index: int):
        self.counts, self.index = counts, index

    def add(self, n: int) -> None:
        with self.counts.get_lock():
            self.counts[self.index] += n

    def reclaim(self, semaphore: Semaphore) -> int:
        """(In the parent, once the holder is gone.) Release what it held; returns how many."""
        with self.counts.get_lock():
            held, self.counts[self.index] = max(0, self.counts[self.index]), 0
        for _ in range(held):
            semaphore.release()
        return held


class Slots:
    """A counting cap that a cancelled trial stops waiting for (None = no cap).

    `semaphore` (optional) is the counter to use: a `multiprocessing` semaphore makes one cap hold
    across the worker processes that inherit it (see :func:`shared_semaphore`), with a `ledger` of
    what this process holds; any object with `acquire(timeout=)` and `release()` works, such as a
    cluster-wide limiter's client.
    """

    def __init__(self, limit: int | None, semaphore: Semaphore | None = None, ledger: Ledger | None = None):
        self.limit = limit if limit and limit > 0 else None
        self._sem: Semaphore | None = None
        self._ledger = ledger
        if self.limit:
            self._sem = semaphore if semaphore is not None else threading.BoundedSemaphore(self.limit)

    @contextmanager
    def hold(self, token: CancelToken) -> Iterator[None]:
        if self._sem is None:
            token.check()
            yield
            return
        while not self._sem.acquire(True, POLL_S):
            token.check()
        if self._ledger is not None:
            self._ledger.add(1)
        try:
            token.check()
            yield
        finally:
            if self._ledger is not None:
                self._ledger.add(-1)
            self._sem.release()


class SharedCounts:
    """`n` integers that worker processes forked after it was made share with this process (an
    anonymous shared memory map: no file, nothing left open once closed), with a lock."""

    def __init__(self, n: int, context: Any):
        import mmap

        self._map = mmap.mmap(-1, 4 * max(1, n))
        self._cells = memoryview(self._map).cast("i")
        self._lock = context.Lock()

    def get_lock(self) -> Any:
        return self._lock

    def __getitem__(self, index: int) -> int:
        return self._cells[index]

    def __setitem__(self, index: int, value: int) -> None:
        self._cells[index] = value

    def close(self) -> None:
        self._cells.release()
        self._map.close()


def shared_semaphore(limit: int | None, context: Any) -> Any:
    """A semaphore of `limit` slots that worker processes started from `context` (a
    `multiprocessing` context) share when it is handed to them at start; None for no cap."""
    return context.BoundedSemaphore(limit) if limit and limit > 0 else None


@dataclass
class Controls:
    """What one trial shares with its run."""

    token: CancelToken = field(default_factory=CancelToken)
    sandboxes: Slots = field(default_factory=lambda: Slots(None))
    model_requests: Slots = field(default_factory=lambda: Slots(None))


_local = threading.local()


def current() -> Controls:
    """The controls of the trial this thread runs (a no-cap, never-cancelled default outside runs)."""
    controls = getattr(_local, "controls", None)
    if controls is None:
        controls = _local.controls = Controls()
    return controls


@contextmanager
def use(controls: Controls) -> Iterator[Controls]:
    """Make `controls` current in this thread for the duration of the block."""
    previous = getattr(_local, "controls", None)
    _local.controls = controls
    try:
        yield controls
    finally:
        _local.controls = previous


def cpu_turn_count() -> int:
    """How many CPU turns each process has (two per core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 2 * cores


_cpu_turns = threading.BoundedSemaphore(cpu_turn_count())


@contextmanager
def cpu_turn() -> Iterator[None]:
    """Take one of this process's few turns (two per core) for a trial's short CPU-bound stretch:
    setting up its workspace, asking for its grade, writing its records.

    Hundreds of trial threads often wake at once (a round of trials starting or ending together);
    left to contend for the interpreter lock they spend more CPU handing it over at every system
    call than on the work. Waiting here costs one wake-up. Not re-entrant; a cancelled trial stops
    waiting within a second."""
    token = current().token
    while not _cpu_turns.acquire(True, 1.0):
        token.check()
    try:
        yield
    finally:
        _cpu_turns.release()


@contextmanager
def sandbox_slot() -> Iterator[None]:
    controls = current()
    with controls.sandboxes.hold(controls.token):
        yield


@contextmanager
def model_request() -> Iterator[None]:
    """Hold one of the run's model-request slots (re-entrant within a thread)."""
    if getattr(_local, "in_request", False):
        yield
        return
    controls = current()
    with controls.model_requests.hold(controls.token):
        _local.in_request = True
        try:
            yield
        finally:
            _local.in_request = False
    controls.token.check()  # an answer that arrives after cancellation is not used


def sleep(seconds: float) -> None:
    """Sleep, but raise TrialCancelled as soon as the current trial is cancelled."""
    token = current().token
    if token.wait(seconds):
        token.check()
