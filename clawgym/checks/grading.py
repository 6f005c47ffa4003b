"""A fresh sandbox per grader that executes code: the `python`, `command` and `harbor_tests` checks.

Graders run programs and import modules that sit in the workspace, so a grader runs whatever
the agent left there. Each one therefore runs in its own sandbox on the trial's backend, never
on the host: no network; a copy of the final workspace (bounded by `safefs.GRADING_LIMITS`,
holes kept) at the task's mount; the grader's own files, the pristine inputs and any payload in
a host-owned folder shown read-only at PRIVATE_MOUNT; CPU time, memory, processes, output and
wall time capped; an environment that names no host path. Nothing it does reaches the host or a
later trial, and the copy is deleted afterwards.

Inside, the world is the one published ClawGym graders were written for (docs/interop.md, "What a
grader sees"): uid 0 owning the workspace, HOME=/root, a writable /tmp, cwd = the workspace, the
sandbox's python3 with pytest importable (scripts/setup.sh installs it), bytecode caches written as
Python writes them, and every entry of the copy with the times and file modes the agent left it
with (`keep_as_left`), so a grader that asks whether anything was written outside output/ sees
no write where the agent made none.

Only a failure of our own machinery (the sandbox cannot start) is an InfraError. A grader that
does not exit cleanly within its limits (exits non-zero, is killed, times out, passes its output
cap) is a failed grade: `failed_grade` scores it 0 whatever it printed, says why with the tail of
its output, and marks the details with FAILED (the verdict notes it; its sub-scores weigh 0).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..files import safefs
from ..errors import ClawgymError, InfraError, PrerequisiteError
from ..files.tempdirs import make_temp
from .base import FAILED, CheckContext, CheckFailure

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
    source: Path | None = None  # the final workspace `workspace` was copied from (None: files we wrote)

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
                grading.source = Path(ctx.workspace)
        except safefs.TreeTooLarge as e:
            raise CheckFailure(f"workspace too large to grade: {e}") from None
        os.chmod(grading.workspace, 0o755)  # as OpenClaw creates the workspace folder (umask 022)
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


def keep_as_left(grading: Grading) -> None:
    """Give every entry of the copy that grading left as the agent left it the agent's access and
    modification times back, and a file its exact permission bits.

    The copy is made at grading time, and restoring inputs and placing the grader rewrite files and
    folders; a grader that asks whether anything outside output/ was written since the run began
    compares times, and one that checks `chmod 444` compares modes. A file with the same bytes, a
    folder with the same names and a link to the same target count as left alone; what grading
    changed keeps its new time, as a write after the agent would. A file its owner cannot read
    keeps the owner's read and write bits (the grader runs as the sandbox's root, without the
    capability to override them). Change times cannot be set: they are the copy's.
    """
    if grading.source is None:
        return
    try:
        stats, their_names, targets = _listing(grading.source, safefs.GRADING_LIMITS)
    except (safefs.TreeTooLarge, OSError):
        return
    names: dict[str, set[str]] = {"": set()}
    for e in safefs.walk(grading.workspace, limits=None):
        names.setdefault(e.rel.rpartition("/")[0], set()).add(e.name)
        if e.kind == "dir":
            names.setdefault(e.rel, set())
        theirs = stats.get(e.rel)
        if theirs is None or safefs.kind_of(theirs.st_mode) != e.kind or e.kind == "dir":
            continue
        times = (theirs.st_atime_ns, theirs.st_mtime_ns)
        try:
            if e.kind == "file" and _same_file(e, theirs, grading.source):
                if theirs.st_mode & 0o400:
                    os.chmod(e.name, theirs.st_mode & 0o777, dir_fd=e.dir_fd)
                os.utime(e.name, ns=times, dir_fd=e.dir_fd)
            elif e.kind == "link" and os.readlink(e.name, dir_fd=e.dir_fd) == targets.get(e.rel):
                os.utime(e.name, ns=times, dir_fd=e.dir_fd, follow_symlinks=False)
        except OSError:
            continue
    for rel, kept in names.items():  # folders last: nothing is created or removed after this
        theirs = stats.get(rel)
        if theirs is not None and kept != their_names.get(rel, set()):
            continue
        try:
            fd = safefs.open_under(grading.workspace, rel) if rel else os.open(grading.workspace, os.O_RDONLY)
        except OSError:
            continue
        try:
            if theirs is None:  # made by grading (the grader's folder): as `cp -r` makes it
                os.fchmod(fd, 0o755)
            else:
                os.utime(fd, ns=(theirs.st_atime_ns, theirs.st_mtime_ns))
        except OSError:
            pass
        finally:
            os.close(fd)


def _listing(root: Path, limits: safefs.TreeLimits) -> tuple[dict, dict[str, set[str]], dict[str, str]]:
    """{relative path: lstat} of every entry of `root` (itself as ""), each folder's names, and
    each link's target."""
    stats = {"": os.stat(root, follow_symlinks=False)}
    names: dict[str, set[str]] = {"": set()}
    targets = {}
    for e in safefs.walk(root, limits):
        stats[e.rel] = e.st
        names.setdefault(e.rel.rpartition("/")[0], set()).add(e.name)
        if e.kind == "dir":
            names.setdefault(e.rel, set())
        elif e.kind == "link":
            targets[e.rel] = os.readlink(e.name, dir_fd=e.dir_fd)
    return stats, names, targets


def _same_file(entry: safefs.Entry, st: os.stat_result, source: Path) -> bool:
    """Whether the copy's file `entry` holds the bytes of `source/entry.rel` (lstat `st`)."""
    if entry.st.st_size != st.st_size:
        return False
    if entry.st.st_mtime_ns == st.st_mtime_ns:  # copied, not rewritten since
        return True
    try:
        mine, other = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=entry.dir_fd), -1
        try:
            other = safefs.open_under(source, entry.rel)
            while True:
                a, b = os.read(mine, 1 << 20), os.read(other, 1 << 20)
                if a != b:
                    return False
                if not a:
                    return True
        finally:
            os.close(mine)
            if other >= 0:
                os.close(other)
    except OSError:
        return False


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
    keep_as_left(grading)
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
    """Run a Python grading script through the launcher (see grader_launch.py) and read its frame.

    The launcher stops the grader a little before the sandbox's own timeout, so a grader that hangs
    still reports what it printed."""
    from importlib.resources import files

    launcher = put_private(grading, "launch.py", files(__package__).joinpath(LAUNCHER).read_bytes())
    nonce = "clawgym-frame-" + secrets.token_hex(16)
    margin = min(1.0, 0.2 * timeout)  # for stopping the grader and writing the frame
    env = {**env, "CLAWGYM_GRADER_DEADLINE": f"{time.time() + timeout - margin:.3f}"}
    if grading.in_place:  # no boundary to keep the nonce behind: the container is the isolation
        env, stdin = {**env, "CLAWGYM_GRADER_NONCE": nonce}, None
    else:  # on stdin: the environment of the sandbox's pid 1 is readable inside, its consumed stdin is not
        stdin = nonce + "\n"
    res = run_in_sandbox(
        ctx, grading, ["python3", "-I", launcher, script_inside, *args], timeout=timeout, env=env, stdin=stdin
    )
    frame = _frame(res.output, nonce)
    if frame is None and res.timed_out:
        return GraderRun(None, "", res.output[-2000:], f"timed out after {timeout:g}s", timed_out=True)
    if frame is None:
        why = res.killed_reason or (f"exit status {res.exit_code}" if res.exit_code else "no report")
        why = f"the grader's launcher was stopped ({why}){signal_hint(res.exit_code)}"
        return GraderRun(res.exit_code, "", res.output[-2000:], why)
    run = grader_run(frame)
    if run.timed_out:
        run.failure = f"timed out after {timeout:g}s"
    return run


def grader_run(frame: dict[str, Any]) -> GraderRun:
    """What a launcher's frame says of one grader."""
    stdout = base64.b64decode(frame.get("stdout") or "").decode("utf-8", "replace")
    stderr = base64.b64decode(frame.get("stderr") or "").decode("utf-8", "replace")
    code, sig = frame.get("exit"), frame.get("signal")
    if frame.get("timed_out"):
        return GraderRun(None, stdout, stderr, "timed out", timed_out=True)
    failure = None
    if sig is not None:
        failure = f"killed by signal {sig}{signal_name(sig)}"
    elif code != 0:
        failure = f"exit status {code}{signal_hint(code)}"
    elif frame.get("stdout_truncated"):
        failure = "printed more than 4 MiB"
    taint = [str(x) for x in frame.get("workspace_code") or []][:10]
    return GraderRun(code if sig is None else None, stdout, stderr, failure, workspace_code=taint)


def signal_name(number: Any) -> str:
    """' (SIGKILL)' for 9; '' for a number that names no signal."""
    try:
        return f" ({signal.Signals(int(number)).name})"
    except (TypeError, ValueError):
        return ""


def signal_hint(code: Any) -> str:
    """' (128+9: killed by SIGKILL)' for an exit status a shell gives a command killed by a signal
    (a negative status is how Python reports one); '' otherwise."""
    if not isinstance(code, int) or isinstance(code, bool):
        return ""
    if code < 0 and signal_name(-code):
        return f" (killed by {signal_name(-code)[2:-1]})"
    if 128 < code < 160 and signal_name(code - 128):
        return f" (128+{code - 128}: killed by {signal_name(code - 128)[2:-1]})"
    return ""


def process_failure(res: Any, timeout: float, accepted: Sequence[int] | None = None) -> str | None:
    """Why a command run in a grading sandbox did not exit cleanly within its limits (None if it did):
    a timeout, a kill, output past its cap, or an exit status other than 0 (or, named, `accepted`;
    `signal_hint` tells whether that status is a shell's report of a kill)."""
    if res.timed_out:
        return f"timed out after {timeout:g}s"
    if res.exit_code is None or getattr(res, "killed_reason", None):
        return f"killed ({getattr(res, 'killed_reason', None) or 'no exit status'})"
    if getattr(res, "truncated", False):
        return "printed past its output limit"
    if res.exit_code not in (accepted or [0]):
        expected = f", expected {' or '.join(map(str, accepted))}" if accepted else ""
        return f"exit status {res.exit_code}{expected}"
    return None


def tail_text(text: str, lines: int = 3, limit: int = 300) -> str:
    """The last `lines` non-empty lines of `text` on one line (' | ' between them), at most `limit` characters."""
    last = [ln.strip() for ln in text.splitlines() if ln.strip(" \t^~")][-lines:]  # not a traceback's carets
    out = " | ".join(last)
    return out if len(out) <= limit else "…" + out[-(limit - 1) :]


def failed_grade(head: str, why: str, details: dict, **outputs: str) -> tuple[float, str, dict]:
    """The result of a grading process that did not exit cleanly within its limits: 0, whatever it printed.

    The reason is `head` (what failed, and why) followed by the end of each of `outputs` (`output=`
    for stdout and stderr together, or `stderr=` and `stdout=`); the details keep those tails and
    FAILED = `why`, which makes the verdict note the failure and give the check's sub-scores weight 0.
    """
    details[FAILED] = why
    parts = [head]
    for label, text in outputs.items():
        if text and text.strip():
            details[f"{label}_tail"] = text[-2000:]
            parts.append(f"{'last output' if label == 'output' else label + ' ends'}: {tail_text(text)}")
    return 0.0, "; ".join(parts), details


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
