"""One engine per run (`engines/shared.py`), with a stand-in for the vLLM server (a supervised
`sleep`): a run starts each distinct engine once before its trials and stops it at its end;
policies and forked worker processes find it instead of starting their own; a dead engine is
started again; an engine running before the run is left running."""

from __future__ import annotations

import os
import signal
import time

import pytest

from clawgym.engines import shared
from clawgym.engines.process import Supervised
from clawgym.engines.vllm import EngineSettings

CONFIG = {"type": "vllm", "model": "embedded", "engine": {"kv_cache_gb": 1}}


class FakeServer:
    """Starts `sleep 300` supervised, as VLLMServer starts the engine."""

    started: list["FakeServer"] = []

    def __init__(self, settings: EngineSettings, folder):
        self.settings, self.folder = settings, folder
        self.base_url = f"http://127.0.0.1:{40000 + len(FakeServer.started)}/v1"
        self.served_name = settings.name
        self.process: Supervised | None = None

    def start(self) -> "FakeServer":
        self.process = Supervised(["sleep", "300"], log=self.folder / "engine.log")
        FakeServer.started.append(self)
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def owned(self) -> bool:
        return self.process is None or self.process.owner == os.getpid()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def describe(self) -> dict:
        return {"engine": "vllm", "version": "test", "base_url": self.base_url}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    FakeServer.started = []
    monkeypatch.setattr(shared, "VLLMServer", lambda settings: FakeServer(settings, tmp_path))
    monkeypatch.delenv(shared.URLS_VAR, raising=False)
    yield FakeServer
    shared.stop_all()


def test_a_run_starts_its_engine_once_and_stops_it_at_the_end(fake):
    settings = EngineSettings.from_config(CONFIG)
    with shared.run_scope([{"type": "claw", "policy": CONFIG}, {"type": "openclaw", "policy": dict(CONFIG)}]) as refs:
        assert len(refs) == 1 and len(fake.started) == 1
        assert shared.ensure(settings).base_url == refs[0].base_url, "trials find the run's engine"
        assert len(fake.started) == 1 and shared.URLS_VAR in os.environ
        (server,) = fake.started
        assert server.alive()
    assert not server.alive() and shared.URLS_VAR not in os.environ


def test_a_forked_worker_uses_the_parents_engine(fake):
    settings = EngineSettings.from_config(CONFIG)
    with shared.run_scope([CONFIG]) as (ref,):
        child = os.fork()
        if child == 0:  # as the local executor forks its worker processes
            try:
                ok = shared.ensure(settings).base_url == ref.base_url and len(fake.started) == 1
            finally:
                shared.stop_all()  # a worker's exit must not stop the parent's engine
            os._exit(0 if ok else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert fake.started[0].alive()


def test_a_dead_engine_is_started_again(fake):
    settings = EngineSettings.from_config(CONFIG)
    first = shared.ensure(settings)
    os.killpg(fake.started[0].process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while fake.started[0].alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = shared.ensure(settings)
    assert len(fake.started) == 2 and second.base_url != first.base_url


def test_an_engine_running_before_the_run_keeps_running(fake):
    settings = EngineSettings.from_config(CONFIG)
    shared.ensure(settings)
    with shared.run_scope([CONFIG]):
        pass
    assert len(fake.started) == 1 and fake.started[0].alive()


def test_a_policy_with_a_base_url_needs_no_engine(fake):
    with shared.run_scope([{**CONFIG, "base_url": "http://127.0.0.1:9/v1"}]) as refs:
        assert refs == [] and fake.started == []
