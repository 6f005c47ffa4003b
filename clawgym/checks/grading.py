"""A fresh sandbox per grader that executes code: the `python`, `command` and `harbor_tests` checks.

Graders run programs and import modules that sit in the workspace, so a grader runs whatever
the agent left there. Each one therefore runs in its own sandbox on the trial's backend, never
on the host: no network; a copy of the final workspace (bounded by `safefs.GRADING_LIMITS`,
holes kept) at the task's mount; the grader's own files, the pristine inputs and any payload in
a host-owned folder shown read-only at PRIVATE_MOUNT; CPU time, memory, processes, output and
wall time capped; an environment that names no host path. Nothing it does reaches the host or a
later trial, and the copy is deleted afterwards.

Only a failure of our own machinery (the sandbox cannot start) is an InfraError; a grader that
exits non-zero, is killed or runs out of time is a failed grade (the caller scores it 0).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..files import safefs
from ..errors import ClawgymError, InfraError, PrerequisiteError
from ..files.tempdirs import make_temp
from .base import CheckContext, CheckFailure

LAUNCHER = "grader_launch.py"  # beside this module (read as package data: the exported grader runs from a zip)
# the same values as clawgym.sandbox.base (not imported here: the verifier loads sandboxes only to use one)
DEFAULT_MOUNT = "/root/.openclaw/workspace"
PRIVATE_MOUNT = "/run/clawgym"
GRADER_MEMORY_MB = 2048
GRADER_PIDS = 256
GRADER_OUTPUT_BYTES = 8 << 20


@dataclass
class Grading:
    """The host folders of one grading sandbox: `workspace` (the copy) and `private` (read-only inside).

    `in_place` is for a backend that runs commands where it is (the `inline` sandbox of an exported
    grader, already inside the task's container): paths inside are then the host paths.
    """

    root: Path
    workspace: Path
    private: Path
    mount: str = DEFAULT_MOUNT
    in_place: bool = False
    skipped: list[str] = field(default_factory=list)

    def inside(self, *parts: str) -> str:
        """The path inside the sandbox of `private/parts...`."""
        return "/".join([str(self.private) if self.in_place else PRIVATE_MOUNT, *parts])

    @property
    def workspace_inside(self) -> str:
        return str(self.workspace) if self.in_place else self.mount


@dataclass
class GraderRun:
    """What one grader did. `failure` says why it counts as failed (None: it exited 0)."""

    exit_code: int | None
    stdout: str
    stderr: str
    failure: str | None
    timed_out: bool = False
    workspace_code: list[str] = field(default_factory=list)  # workspace files it executed in its own process


@contextmanager
def grading_folder(
    ctx: CheckContext, what: str = "grade", files: tuple[Mapping[str, bytes], set[str]] | None = None
) -> Iterator[Grading]:
    """Scratch folders for one grader: a bounded copy of the final workspace (or, with `files`, a
    workspace written from {path: bytes} and its executables: files we made) and a private folder.

    Raises CheckFailure (a failed grade) when the workspace passes the grading limits.
    """
    root = make_temp(what)
    try:
        os.chmod(root, 0o711)  # a root-run sandbox resolves its binds as its own uid
        in_place = str((ctx.sandbox or {}).get("type")) == "inline"
        grading = Grading(root, root / "workspace", root / "private", ctx.mount or DEFAULT_MOUNT, in_place)
        try:
            if files is not None:
                from ..compile.workspace import write_files

                write_files(files[0], files[1], grading.workspace)
            else:
                grading.skipped = safefs.copy_tree(ctx.workspace, grading.workspace)
        except safefs.TreeTooLarge as e:
            raise CheckFailure(f"workspace too large to grade: {e}") from None
        grading.private.mkdir(mode=0o755)
        yield grading
    finally:
        safefs.remove_tree(root)


def share_read_only(folder: Path) -> None:
    """Let any uid read `folder` (the sandbox's uid reads the private folder)."""
    os.chmod(folder, 0o755)
    for entry in safefs.walk(folder, limits=None):
        if entry.kind == "dir":
            os.chmod(entry.name, 0o755, dir_fd=entry.dir_fd)
        elif entry.kind == "file":
            os.chmod(entry.name, (entry.st.st_mode & 0o755) | 0o644, dir_fd=entry.dir_fd)


def put_private(grading: Grading, rel: str, data: bytes | str) -> str:
    """Write a file into the private folder; its path inside the sandbox."""
    path = grading.private / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return grading.inside(rel)


def run_in_sandbox(
    ctx: CheckContext,
    grading: Grading,
    command: str | Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    memory_mb: int = GRADER_MEMORY_MB,
    ro_binds: Sequence[Sequence[str]] = (),
    rw_binds: Sequence[Sequence[str]] = (),
    mount: str | None = None,
    output_bytes: int = GRADER_OUTPUT_BYTES,
) -> Any:
    """Run `command` in a fresh sandbox over `grading.workspace` (no network); its ExecResult.
    Infrastructure problems raise InfraError."""
    try:
        from ..sandbox import SandboxLimits, create_sandbox
    except ImportError as e:
        raise InfraError(f"grading needs clawgym.sandbox: {e}") from None

    share_read_only(grading.private)
    spec = dict(ctx.sandbox or {"type": "local"})
    if ro_binds:
        spec["ro_binds"] = [*(spec.get("ro_binds") or []), *[list(b) for b in ro_binds]]
    if rw_binds:
        spec["rw_binds"] = [*(spec.get("rw_binds") or []), *[list(b) for b in rw_binds]]
    limits = SandboxLimits(
        wall_seconds=timeout + 30,
        memory_mb=memory_mb,
        pids=GRADER_PIDS,
        output_bytes=output_bytes,
        cpu_seconds=max(1.0, timeout + 5),
    )
    try:
        sandbox = create_sandbox(
            spec,
            grading.workspace,
            limits=limits,
            network=False,
            mount=mount or grading.mount,
            private_dir=None if grading.in_place else grading.private,
        )
    except (PrerequisiteError, InfraError):
        raise
    except ClawgymError as e:
        if "unknown option" in str(e):
            raise PrerequisiteError(f"grading needs a sandbox backend with ro_binds (local or docker): {e}") from None
        raise InfraError(f"could not start a grading sandbox: {e}") from None
    except Exception as e:  # noqa: BLE001 - any failure to start is infrastructure, not the agent's fault
        raise InfraError(f"could not start a grading sandbox: {type(e).__name__}: {e}") from None
    _LIVE.add(sandbox)
    try:
        with sandbox:
            try:
                return sandbox.exec(command, timeout=timeout, env=dict(env or {}), stdin=stdin)
            except (PrerequisiteError, InfraError):
                raise
            except Exception as e:  # noqa: BLE001
                raise InfraError(f"the grading sandbox failed: {type(e).__name__}: {e}") from None
    finally:
        _LIVE.discard(sandbox)


_LIVE: set[Any] = set()  # grading sandboxes open in this process


def close_live_sandboxes() -> None:
    """Close every grading sandbox still open (the verifier is being stopped)."""
    for sandbox in list(_LIVE):
        try:
            sandbox.close()
        except Exception:  # noqa: BLE001 - best effort while stopping
            pass


def run_python_grader(
    ctx: CheckContext,
    grading: Grading,
    script_inside: str,
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str],
) -> GraderRun:
    """Run a Python grading script through the launcher (see grader_launch.py) and read its frame."""
    from importlib.resources import files

    launcher = put_private(grading, "launch.py", files(__package__).joinpath(LAUNCHER).read_bytes())
    nonce = "clawgym-frame-" + secrets.token_hex(16)
    if grading.in_place:  # no boundary to keep the nonce behind: the container is the isolation
        env, stdin = {**env, "CLAWGYM_GRADER_NONCE": nonce}, None
    else:  # on stdin: the environment of the sandbox's pid 1 is readable inside, its consumed stdin is not
        stdin = nonce + "\n"
    res = run_in_sandbox(
        ctx, grading, ["python3", "-I", launcher, script_inside, *args], timeout=timeout, env=env, stdin=stdin
    )
    if res.timed_out:
        return GraderRun(None, "", "", f"timed out after {timeout:g}s", timed_out=True)
    frame = _frame(res.output, nonce)
    if frame is None:
        why = res.killed_reason or (f"exit status {res.exit_code}" if res.exit_code else "no report")
        tail = res.output.strip().splitlines()[-1:] if res.output.strip() else []
        return GraderRun(
            res.exit_code,
            "",
            res.output[-2000:],
            f"the grader's launcher was stopped ({why})" + (f": {tail[0][:200]}" if tail else ""),
        )
    return grader_run(frame)


def grader_run(frame: dict[str, Any]) -> GraderRun:
    """What a launcher's frame says of one grader."""
    stdout = base64.b64decode(frame.get("stdout") or "").decode("utf-8", "replace")
    stderr = base64.b64decode(frame.get("stderr") or "").decode("utf-8", "replace")
    code, sig = frame.get("exit"), frame.get("signal")
    if frame.get("timed_out"):
        return GraderRun(None, stdout, stderr, "timed out", timed_out=True)
    failure = None
    if sig is not None:
        failure = f"killed by signal {sig}"
    elif code != 0:
        failure = f"exit status {code}"
    elif frame.get("stdout_truncated"):
        failure = "printed more than 4 MiB"
    taint = [str(x) for x in frame.get("workspace_code") or []][:10]
    return GraderRun(code if sig is None else None, stdout, stderr, failure, workspace_code=taint)


def frames(output: str, nonce: str) -> list[dict[str, Any]]:
    """Every frame of the launcher in `output` (the lines that start with our nonce)."""
    out = []
    for line in output.splitlines():
        if line.startswith(nonce):
            try:
                frame = json.loads(line[len(nonce) :])
            except ValueError:
                continue
            if isinstance(frame, dict):
                out.append(frame)
    return out


def _frame(output: str, nonce: str) -> dict[str, Any] | None:
    """The launcher's report: the line that starts with our nonce (nothing else in the sandbox knows it)."""
    for line in output.splitlines():
        if line.startswith(nonce):
            try:
                frame = json.loads(line[len(nonce) :])
            except ValueError:
                return None
            return frame if isinstance(frame, dict) else None
    return None
