"""Runs inside a grading sandbox (standard library only): start a Python grader and report on it.

`python3 grader_launch.py SCRIPT [ARGS...]`, with a one-line nonce on stdin (or, where the grader
runs in place with no sandbox boundary to hide it behind, in CLAWGYM_GRADER_NONCE). Without
arguments, the second stdin line is a JSON plan of several graders run one after the other (the
importer's one-off runs of a dataset's graders: one sandbox for a batch of graders from one source). The launcher makes
itself non-dumpable (no other process in the sandbox may read its memory or open its file
descriptors, ptrace included), forks, and runs SCRIPT as `__main__` in the child, which inherits
that protection, with its own stdout and stderr pipes. Whatever the grader or the programs it
starts do, the launcher then writes one frame on its own stdout: a newline, the nonce, and a JSON
object with the exit status, the signal that killed the grader (if any), its stdout (base64) and
the tail of its stderr. The host trusts only a frame that carries its nonce, which nothing else
in the sandbox ever saw, so a program that prints a forged score or kills the grader gains nothing.
Otherwise the grader runs as `python3 SCRIPT ARGS` would run it: the same argv and sys.path, and
bytecode caches written as usual (a grader that runs the task's tests and then lists a folder sees
their __pycache__, as it did where it was written).
With CLAWGYM_GRADER_DEADLINE (a time.time() value) the launcher kills the grader's process group
then and reports it as timed out, with what it had printed so far.
An audit hook also reports, before it runs, any code from the workspace the grader executes in its
own process (a module the agent wrote that the grader imports): that code can steer the grader's
output, and the frame says so.
"""

import base64
import json
import os
import select
import signal
import sys
import time

MAX_STDOUT = 4 << 20
MAX_STDERR = 64 << 10
DRAIN_S = 0.5  # after the grader exits, how long output still held open by its children is read


def _non_dumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001 - best effort: the sandbox still contains the grader
        pass


def _watch_workspace_code(workspace: str, own: str, taint_w: int) -> None:
    """Tell the launcher (before it runs) when the grader executes code from the workspace in its
    own process (it imported a module the agent wrote): such a grader can be steered from inside."""
    prefix, own_prefix = workspace.rstrip("/") + "/", own.rstrip("/") + "/"

    def hook(event: str, args: tuple) -> None:
        if event != "exec" or taint_w < 0:
            return
        name = getattr(args[0], "co_filename", "") if args else ""
        if isinstance(name, str) and name.startswith(prefix) and not name.startswith(own_prefix):
            try:
                os.write(taint_w, (name[:300] + "\n").encode("utf-8", "replace"))
            except OSError:
                pass

    sys.addaudithook(hook)


def _grader(script: str, args: list, out_w: int, err_w: int, taint_w: int) -> None:
    code = 1
    try:
        import runpy
        import traceback

        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (devnull, out_w, err_w):
            os.close(fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        workspace = os.environ.get("CLAWGYM_WORKSPACE")
        if workspace:
            _watch_workspace_code(workspace, os.path.dirname(os.path.abspath(script)), taint_w)
        sys.argv = [script, *args]  # and sys.path as `python3 SCRIPT` has it (-I left the folder out)
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the programs it starts write caches too
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - report like the interpreter would
            traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF if isinstance(code, int) else 1)


def run_one(
    script: str, args: list, env: dict | None = None, timeout: float | None = None, kill_all: bool = True
) -> dict:
    """Fork the grader, collect its output, wait for it (at most `timeout` seconds); its frame.

    On a timeout, `kill_all` kills every other process of the sandbox, else the grader's process group."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    taint_r, taint_w = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        for fd in (out_r, err_r, taint_r):
            os.close(fd)
        os.setpgid(0, 0)  # a program that kills the grader's process group leaves the launcher to report it
        if env:
            os.environ.update(env)
        _grader(script, args, out_w, err_w, taint_w)
    for fd in (out_w, err_w, taint_w):
        os.close(fd)
    out, err, taint, status = bytearray(), bytearray(), bytearray(), None
    out_over, timed_out = False, False
    deadline = time.monotonic() + timeout if timeout else None
    reads, drain_until = [out_r, err_r, taint_r], None
    while reads:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, drain_until = st, time.monotonic() + DRAIN_S
            elif deadline is not None and time.monotonic() > deadline:
                timed_out = True
                _kill_others() if kill_all else _kill_group(pid)
                _, status = os.waitpid(pid, 0)
                drain_until = time.monotonic() + 0.1  # what it wrote before it was killed
        if drain_until is not None and time.monotonic() > drain_until:
            break
        ready, _, _ = select.select(reads, [], [], 0.05)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                reads.remove(fd)
            elif fd == out_r:
                room = MAX_STDOUT - len(out)
                out += chunk[: max(room, 0)]
                out_over = out_over or len(chunk) > room
            elif fd == taint_r:
                taint += chunk[: max(4096 - len(taint), 0)]
            else:
                err += chunk
                del err[:-MAX_STDERR]
    if status is None:
        _, status = os.waitpid(pid, 0)
    for fd in (out_r, err_r, taint_r):
        os.close(fd)
    return {
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) and not timed_out else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) and not timed_out else None,
        "timed_out": timed_out,
        "stdout": base64.b64encode(bytes(out)).decode("ascii"),
        "stdout_truncated": out_over,
        "stderr": base64.b64encode(bytes(err)).decode("ascii"),
        "workspace_code": sorted(set(bytes(taint).decode("utf-8", "replace").splitlines()))[:10],
    }


def _kill_others() -> None:
    """Kill every process of the sandbox but the launcher and pid 1 (a grader and what it left running)."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def _kill_group(pid: int) -> None:
    """Kill the grader and its process group (what it started and left there)."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except OSError:
            pass


def _batch(plan: list, nonce: str) -> None:
    """Several graders one after the other, each with the workspace folder renamed into place, and
    nothing of the one before left running; one frame each (`index` says which)."""
    for i, item in enumerate(plan):
        place, folder = item["mount"], item["folder"]
        os.rename(folder, place)
        here = os.getcwd()
        try:
            os.chdir(place)
            frame = run_one(item["script"], item.get("args") or [], item.get("env"), item.get("timeout"))
        finally:
            os.chdir(here)
            _kill_others()
            os.rename(place, folder)
        frame["index"] = i
        os.write(1, ("\n" + nonce + json.dumps(frame) + "\n").encode("ascii"))


def main() -> None:
    nonce = os.environ.pop("CLAWGYM_GRADER_NONCE", None) or sys.stdin.readline().strip()
    deadline = os.environ.pop("CLAWGYM_GRADER_DEADLINE", None)
    plan_line = sys.stdin.readline() if not sys.argv[1:] else ""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    _non_dumpable()
    if plan_line.strip():
        _batch(json.loads(plan_line), nonce)
    else:
        timeout = max(0.1, float(deadline) - time.time()) if deadline else None
        frame = run_one(sys.argv[1], sys.argv[2:], timeout=timeout, kill_all=False)
        os.write(1, ("\n" + nonce + json.dumps(frame) + "\n").encode("ascii"))
    os._exit(0)


if __name__ == "__main__":
    main()
