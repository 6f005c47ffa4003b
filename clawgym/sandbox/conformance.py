"""Conformance suite every sandbox backend must pass.

Each ``check_*(make_sandbox)`` builds its own sandboxes over fresh temporary workspaces, where
``make_sandbox(workspace, limits, network) -> Sandbox``. A check returns normally when the backend
conforms, raises :class:`CheckFailed` when it does not and :class:`CheckSkipped` when the backend
does not offer an optional feature. Run them all with :func:`run_checks`.

The checks live by what they cover, and are all importable from here: exec behaviour in
`conformance_exec.py`, the host kept out of reach in `conformance_isolation.py`, the network in
`conformance_network.py`, limits and kills in `conformance_limits.py`; what they share (the
exceptions, `LIMITS`, a sandbox over a temporary workspace) in `conformance_support.py`.
"""

from __future__ import annotations

import traceback
from typing import Callable

from .conformance_exec import (
    check_env,
    check_exit_codes,
    check_output_interleaved,
    check_stdin,
    check_workdir,
    check_workspace_read_write,
)
from .conformance_isolation import (
    check_cannot_write_outside,
    check_host_files_hidden,
    check_pid_namespace,
    check_symlink_escape,
)
from .conformance_limits import (
    check_close_kills_everything,
    check_file_size_limit,
    check_fork_bomb,
    check_memory_limit,
    check_output_flood,
    check_process_limit,
    check_timeout_kills_tree,
)
from .conformance_network import (
    LOOPBACK_PORT,
    check_host_abstract_sockets_hidden,
    check_network_private_loopback,
    check_no_network,
)
from .conformance_support import LIMITS, CheckFailed, CheckSkipped, MakeSandbox

__all__ = [
    "ALL_CHECKS",
    "LIMITS",
    "LOOPBACK_PORT",
    "CheckFailed",
    "CheckSkipped",
    "MakeSandbox",
    "check_name",
    "run_checks",
    "check_workspace_read_write",
    "check_exit_codes",
    "check_stdin",
    "check_env",
    "check_workdir",
    "check_output_interleaved",
    "check_host_files_hidden",
    "check_cannot_write_outside",
    "check_no_network",
    "check_network_private_loopback",
    "check_host_abstract_sockets_hidden",
    "check_pid_namespace",
    "check_process_limit",
    "check_fork_bomb",
    "check_output_flood",
    "check_timeout_kills_tree",
    "check_memory_limit",
    "check_file_size_limit",
    "check_close_kills_everything",
    "check_symlink_escape",
]


ALL_CHECKS: list[Callable[[MakeSandbox], None]] = [
    check_workspace_read_write,
    check_exit_codes,
    check_stdin,
    check_env,
    check_workdir,
    check_output_interleaved,
    check_host_files_hidden,
    check_cannot_write_outside,
    check_no_network,
    check_network_private_loopback,
    check_host_abstract_sockets_hidden,
    check_pid_namespace,
    check_process_limit,
    check_fork_bomb,
    check_output_flood,
    check_timeout_kills_tree,
    check_memory_limit,
    check_file_size_limit,
    check_close_kills_everything,
    check_symlink_escape,
]


def check_name(check: Callable) -> str:
    return check.__name__.removeprefix("check_")


def run_checks(
    make: MakeSandbox, checks: list[Callable[[MakeSandbox], None]] | None = None
) -> list[tuple[str, bool, str]]:
    """Run `checks` (default: all); rows are (name, ok, detail) with detail "" or why."""
    rows = []
    for check in checks or ALL_CHECKS:
        try:
            check(make)
            rows.append((check_name(check), True, ""))
        except CheckSkipped as exc:
            rows.append((check_name(check), True, f"skipped: {exc}"))
        except CheckFailed as exc:
            rows.append((check_name(check), False, str(exc)))
        except Exception as exc:  # noqa: BLE001 - a crash is a failure of the backend
            rows.append((check_name(check), False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"))
    return rows
