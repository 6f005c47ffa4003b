"""How long an endpoint has been generating: seconds during which at least one request to it was
in flight, per endpoint, in this process (a GRPO step's generation time when an engine samples)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

_LOCK = threading.Lock()
_CLOCKS: dict[str, "BusyClock"] = {}


class BusyClock:
    """Accumulates the time during which one or more requests are open."""

    def __init__(self) -> None:
        self.open = 0
        self.since = 0.0
        self.total = 0.0

    def seconds(self) -> float:
        with _LOCK:
            return self.total + (time.monotonic() - self.since if self.open else 0.0)


@contextmanager
def busy(endpoint: str) -> Iterator[None]:
    """Count the enclosed request as generation time of `endpoint`."""
    with _LOCK:
        clock = _CLOCKS.setdefault(endpoint, BusyClock())
        if clock.open == 0:
            clock.since = time.monotonic()
        clock.open += 1
    try:
        yield
    finally:
        with _LOCK:
            clock.open -= 1
            if clock.open == 0:
                clock.total += time.monotonic() - clock.since


def busy_s(endpoint: str) -> float:
    """Seconds `endpoint` has had a request in flight so far in this process (0.0 if never)."""
    with _LOCK:
        clock = _CLOCKS.get(endpoint)
    return clock.seconds() if clock is not None else 0.0
