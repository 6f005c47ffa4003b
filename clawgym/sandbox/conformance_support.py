"""What the sandbox conformance checks share: the sandbox factory they are given, the limits they
use, how they fail or skip, a sandbox over a fresh temporary workspace, a host secret outside any
workspace and markers to find host processes a check left behind. The checks themselves are in
`conformance_exec.py`, `conformance_isolation.py`, `conformance_network.py` and
`conformance_limits.py`; :mod:`clawgym.sandbox.conformance` runs them.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .base import Sandbox, SandboxLimits

MakeSandbox = Callable[[Path, SandboxLimits, bool], Sandbox]
LIMITS = SandboxLimits(wall_seconds=30, memory_mb=512, pids=64, output_bytes=200_000, file_size_mb=8)


class CheckFailed(AssertionError):
    """The backend does not conform."""


class CheckSkipped(Exception):
    """The backend does not offer an optional feature."""


def expect(cond: object, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


@contextmanager
def temp_sandbox(
    make: MakeSandbox, limits: SandboxLimits = LIMITS, network: bool = False, files: dict[str, str] | None = None
) -> Iterator[tuple[Sandbox, Path]]:
    with tempfile.TemporaryDirectory(prefix="clawgym-conformance-") as tmp:
        ws = Path(tmp, "ws")
        ws.mkdir()
        for name, text in (files or {}).items():
            (ws / name).write_text(text)
        sb = make(ws, limits, network)
        try:
            yield sb, ws
        finally:
            sb.close()


@contextmanager
def host_secret() -> Iterator[tuple[Path, str]]:
    """A world-readable file in a world-readable host folder outside any workspace."""
    token = "clawgym-secret-" + secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="clawgym-host-") as tmp:
        os.chmod(tmp, 0o755)
        path = Path(tmp, "secret.txt")
        path.write_text(token + "\n")
        path.chmod(0o644)
        yield path, token


def new_marker() -> str:
    return "clawgym-mark-" + secrets.token_hex(6)


def _host_pids_with(marker: str) -> list[int]:
    pids, needle = [], marker.encode()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if needle in f.read():
                        pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def expect_gone(marker: str, what: str, grace: float = 2.0) -> None:
    deadline = time.monotonic() + grace
    while (left := _host_pids_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    expect(not left, f"{what}: processes left behind on the host: {left}")


def host_process_count() -> int:
    return sum(1 for e in os.scandir("/proc") if e.name.isdigit())
