"""The docker SDK client the docker sandbox backend shares, and what keeps the backend from running
here. The ``docker`` package is imported on first use, so importing this costs nothing.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import PrerequisiteError

IMAGE = "clawgym/base:bookworm"
DAEMON_HINT = "install and start Docker (apt-get install docker.io; dockerd &), or use the local sandbox"
_client_lock = threading.Lock()
_client: Any = None


def docker_client() -> Any:
    """The shared docker SDK client (imported and connected on first use)."""
    global _client
    with _client_lock:
        if _client is None:
            try:
                import docker  # noqa: PLC0415 - optional, heavy: only when a docker sandbox is made
            except ImportError:
                raise PrerequisiteError(
                    "the docker Python package is not installed", hint="pip install docker"
                ) from None
            try:
                client = docker.from_env(timeout=120)
                client.ping()
            except Exception as exc:  # noqa: BLE001 - any failure means no usable daemon
                raise PrerequisiteError(f"cannot reach a Docker daemon: {exc}", hint=DAEMON_HINT) from None
            _client = client
        return _client


def release_client() -> None:
    """Close the shared client's connections (the end of a run); the next use reconnects."""
    global _client
    with _client_lock:
        if _client is not None:
            try:
                _client.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
            _client = None


def docker_problem() -> str | None:
    """Why the docker sandbox cannot run here (no SDK, no daemon, no base image), or None."""
    try:
        client = docker_client()
        import docker.errors  # noqa: PLC0415
    except PrerequisiteError as exc:
        return str(exc)
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        return f"image {IMAGE} is missing: build it with scripts/build-image.sh"
    return None
