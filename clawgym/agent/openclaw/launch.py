"""How OpenClaw runs inside the trial's sandbox: where the install, its compile cache and the
per-trial state are shown (OPT, STATE), the ports and file names of a run, its environment (ENV)
and the shell line of one run (`shell_line`), shared by the turn and gateway modes."""

from __future__ import annotations

from ...sandbox.base import PRIVATE_MOUNT
from ..proxy import FORWARDER_NAME, SOCKET_NAME

PORT = 18080
GATEWAY_PORT = 18789
GATEWAY_PLAN = "gateway-plan.json"
OPT = "/opt/openclaw"
STATE = "/var/lib/openclaw"
CONFIG_NAME = "openclaw.json"
ADDRESS_SPACE_MB = 32768  # Node reserves far more address space than it uses (2026.9.6 needs > 8 GB)
QUIET = {
    "OPENCLAW_NO_AUTO_UPDATE": "1",
    "OPENCLAW_DISABLE_BONJOUR": "1",
    "OPENCLAW_SKIP_CHANNELS": "1",
    "OPENCLAW_NO_RESPAWN": "1",
    "NODE_OPTIONS": "--disable-wasm-trap-handler",
    "NODE_COMPILE_CACHE": f"{OPT}/compile-cache",
    "PATH": f"{OPT}/node/bin:/usr/local/bin:/usr/bin:/bin",
}

ENV = {
    **QUIET,
    "HOME": f"{STATE}/home",
    "OPENCLAW_STATE_DIR": f"{STATE}/state",
    "OPENCLAW_CONFIG_PATH": f"{PRIVATE_MOUNT}/{CONFIG_NAME}",
}


def shell_line(command: str) -> str:
    """The shell line of one OpenClaw run in the sandbox: the model relay, the state folders, the
    command, and its logs kept (OpenClaw writes them to /tmp)."""
    return (
        f"python3 {PRIVATE_MOUNT}/{FORWARDER_NAME} {PRIVATE_MOUNT}/{SOCKET_NAME} {PORT} /tmp/.proxy-ready & "
        "for i in $(seq 300); do [ -e /tmp/.proxy-ready ] && break; sleep 0.01; done; "
        f"mkdir -p {STATE}/state {STATE}/logs {STATE}/home; {command}; rc=$?; "
        f"cp /tmp/openclaw/*.log {STATE}/logs/ 2>/dev/null; exit $rc"
    )
