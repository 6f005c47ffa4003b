"""The cluster-wide limiter's counting: caps, leases, and slots taken back from holders that died."""

from __future__ import annotations

from clawgym.run.executors.ray_support import LimiterState


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_caps_hold_and_every_release_gives_a_slot_back():
    state = LimiterState({"sandboxes": 2, "model_requests": None}, clock=Clock())
    assert state.acquire("sandboxes", "a") and state.acquire("sandboxes", "b")
    assert not state.acquire("sandboxes", "c")
    assert state.acquire("model_requests", "c")  # no cap on this kind
    state.release("sandboxes", "a")
    assert state.acquire("sandboxes", "c")
    assert state.stats()["held"] == {"sandboxes": 2} and state.stats()["most"] == {"sandboxes": 2}


def test_a_holder_that_stops_renewing_loses_its_slots_after_the_lease():
    clock = Clock()
    state = LimiterState({"sandboxes": 2}, lease_s=30, clock=clock)
    assert state.acquire("sandboxes", "dead") and state.acquire("sandboxes", "dead")
    assert state.acquire("sandboxes", "alive") is False
    for t in (10, 20, 29):  # "dead" never renews: its leases run until 30
        clock.now = t
        assert not state.acquire("sandboxes", "alive")
    clock.now = 31
    assert state.acquire("sandboxes", "alive")
    stats = state.stats()
    assert stats["held"] == {"sandboxes": 1} and stats["reclaimed"] == {"sandboxes": 2}
    state.release("sandboxes", "dead")  # a late release of a lease taken back: ignored
    assert state.stats()["held"] == {"sandboxes": 1}


def test_a_holder_that_renews_keeps_its_slots_however_long():
    clock = Clock()
    state = LimiterState({"sandboxes": 1}, lease_s=30, clock=clock)
    assert state.acquire("sandboxes", "busy")
    for t in range(10, 300, 10):
        clock.now = t
        state.renew("busy")
        assert not state.acquire("sandboxes", "other")
    state.release("sandboxes", "busy")
    assert state.acquire("sandboxes", "other") and state.stats()["reclaimed"] == {"sandboxes": 0}
