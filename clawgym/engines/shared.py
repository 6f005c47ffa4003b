"""One engine per settings in a process, shared by every policy that asks for it.

`run_scope(configs)` is how a run holds its engines: it starts one engine for each distinct
`vllm` policy in the run that has no `base_url` of its own, before the first trial, and stops
them when the run ends (finished, interrupted or failed). Trials' policies find the running
engine with `ensure(settings)`; so do the local executor's worker processes, forked after the
engines started (they inherit the engines' addresses through `$CLAWGYM_ENGINE_URLS`).

A policy made outside a run (a script, the rubric judge) starts its engine on first use; it runs
until the process exits (at exit, or through the watchdog if the process dies). An engine found
dead is started again by the next policy that asks for it.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from .vllm import EngineSettings, VLLMServer

URLS_VAR = "CLAWGYM_ENGINE_URLS"
_ENGINES: dict[str, VLLMServer] = {}
_KEY_LOCKS: dict[str, threading.Lock] = {}
_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []


@dataclass(frozen=True)
class EngineRef:
    """Where a running engine answers."""

    base_url: str
    served_name: str
    info: dict[str, Any]


def digest(settings: EngineSettings) -> str:
    return hashlib.sha256(settings.key().encode()).hexdigest()[:16]


def _key_lock(key: str) -> threading.Lock:
    with _LOCK:
        return _KEY_LOCKS.setdefault(key, threading.Lock())


def _published() -> dict[str, dict[str, Any]]:
    try:
        value = json.loads(os.environ.get(URLS_VAR) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _publish(key: str, server: VLLMServer | None) -> None:
    urls = _published()
    if server is None:
        urls.pop(key, None)
    else:
        urls[key] = {"base_url": server.base_url, "served_name": server.served_name, "info": server.describe()}
    if urls:
        os.environ[URLS_VAR] = json.dumps(urls, sort_keys=True)
    else:
        os.environ.pop(URLS_VAR, None)


def ensure(settings: EngineSettings) -> EngineRef:
    """The running engine for `settings`: this process's, one a parent process published, or a new one."""
    key = digest(settings)
    with _key_lock(key):
        server = _ENGINES.get(key)
        if server is not None and not server.owned():
            server = None  # a forked worker's copy of its parent's engine: the parent published it
        if server is not None and server.alive():
            return EngineRef(server.base_url, server.served_name, server.describe())
        found = _published().get(key)
        if server is None and isinstance(found, dict):
            return EngineRef(str(found["base_url"]), str(found["served_name"]), dict(found.get("info") or {}))
        if server is not None:
            server.stop()  # it died: whatever is left of it goes before a new one starts
        server = VLLMServer(settings).start()
        with _LOCK:
            _ENGINES[key] = server
            if not _AT_EXIT:
                atexit.register(stop_all)
                _AT_EXIT.append(True)
        _publish(key, server)
        return EngineRef(server.base_url, server.served_name, server.describe())


def stop(settings: EngineSettings) -> None:
    """Stop this process's engine for `settings`, if it has one."""
    key = digest(settings)
    with _key_lock(key):
        with _LOCK:
            server = _ENGINES.pop(key, None)
        if server is not None:
            server.stop()
            _publish(key, None)


def stop_all() -> None:
    """Stop every engine this process started (at exit)."""
    with _LOCK:
        servers = list(_ENGINES.items())
        _ENGINES.clear()
    for key, server in servers:
        server.stop()
        _publish(key, None)


def policy_settings(configs: Iterable[Any]) -> list[EngineSettings]:
    """The distinct engines that `vllm` policy configs found anywhere in `configs` (agent configs,
    a judge config) start: those without a `base_url` of their own."""
    found: dict[str, EngineSettings] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "vllm":
                if not value.get("base_url"):
                    settings = EngineSettings.from_config(value)
                    found.setdefault(settings.key(), settings)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    for config in configs:
        walk(config)
    return list(found.values())


@contextmanager
def run_scope(configs: Iterable[Any]) -> Iterator[list[EngineRef]]:
    """Start the engines the `vllm` policies in `configs` need (those not running yet) for the
    length of a run, and stop the ones it started when the run ends."""
    started: list[EngineSettings] = []
    refs = []
    try:
        for settings in policy_settings(configs):
            running = _ENGINES.get(digest(settings))
            if running is None or not running.alive():
                started.append(settings)
            refs.append(ensure(settings))
        yield refs
    finally:
        for settings in started:
            stop(settings)
