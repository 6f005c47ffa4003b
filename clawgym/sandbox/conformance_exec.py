"""Conformance checks of what an exec does: the workspace read and written (and the host's again
after close), exit codes, stdin, the environment, the working folder and the captured output.
"""

from __future__ import annotations

import os

from .base import SANDBOX_PATH, home_for
from .conformance_support import MakeSandbox, expect, temp_sandbox


def check_workspace_read_write(make: MakeSandbox) -> None:
    with temp_sandbox(make, files={"in.txt": "from host\n"}) as (sb, ws):
        r = sb.exec("cat in.txt")
        expect(r.exit_code == 0 and r.output == "from host\n", f"cannot read a workspace file: {r}")
        r = sb.exec("echo out > out.txt && mkdir -p sub/deep && echo deep > sub/deep/f.txt && echo more >> in.txt")
        expect(r.exit_code == 0, f"cannot write the workspace: {r}")
        r = sb.exec("cat out.txt sub/deep/f.txt")
        expect(r.output == "out\ndeep\n", f"workspace writes do not persist across execs: {r}")
        expect((ws / "out.txt").read_text() == "out\n", "a file written inside is not in the host workspace")
        sb.close()
        for p in [ws / "out.txt", ws / "sub", ws / "sub/deep/f.txt", ws / "in.txt"]:
            expect(p.exists(), f"{p.name} vanished after close")
            expect(p.stat().st_uid == os.getuid(), f"{p.relative_to(ws)} is not owned by the host user after close")
        with open(ws / "sub/deep/f.txt", "a") as f:
            f.write("host can write\n")
        expect((ws / "in.txt").read_text() == "from host\nmore\n", "in.txt was not updated")


def check_exit_codes(make: MakeSandbox) -> None:
    with temp_sandbox(make) as (sb, _):
        for cmd, want in [
            ("true", 0),
            ("exit 7", 7),
            (["false"], 1),
            ("no-such-cmd-xyz", 127),
            (["no-such-cmd-xyz"], 127),
            ("kill -TERM $$", 143),
        ]:
            r = sb.exec(cmd)
            expect(r.exit_code == want, f"{cmd!r}: exit code {r.exit_code}, want {want} ({r.output.strip()})")
            expect(not r.timed_out and r.killed_reason is None, f"{cmd!r} reported as killed: {r}")


def check_stdin(make: MakeSandbox) -> None:
    with temp_sandbox(make) as (sb, _):
        r = sb.exec("cat", stdin="hello\nworld\n")
        expect(r.output == "hello\nworld\n", f"str stdin not passed: {r}")
        r = sb.exec(["cat"], stdin=b"\x00bin\xff")
        expect(r.output == "\x00bin\ufffd", f"bytes stdin not passed: {r.output!r}")
        r = sb.exec("wc -c", stdin=b"x" * (2 << 20))
        expect(r.output.strip() == str(2 << 20), f"large stdin not passed whole: {r.output!r}")
        r = sb.exec("head -c 1", stdin=b"y" * (4 << 20), timeout=20)
        expect(r.exit_code == 0 and not r.timed_out, f"unread stdin blocks the exec: {r}")
        r = sb.exec("cat", timeout=10)
        expect(r.exit_code == 0 and r.output == "", f"no stdin should read as empty: {r}")


def check_env(make: MakeSandbox) -> None:
    leak = {"CLAWGYM_HOST_SECRET": "hunter2", "PYTHONPATH": "/host/lib", "VIRTUAL_ENV": "/host/venv"}
    saved = {k: os.environ.get(k) for k in leak}
    os.environ.update(leak)
    try:
        with temp_sandbox(make) as (sb, _):
            r = sb.exec("env", env={"FOO": "bar baz"})
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    env = dict(line.split("=", 1) for line in r.output.splitlines() if "=" in line)
    want = {"HOME": home_for(sb.mount), "PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "TZ": "UTC", "FOO": "bar baz"}
    for key, value in want.items():
        expect(env.get(key) == value, f"{key}={env.get(key)!r} inside, want {value!r}")
    for key in leak:
        expect(key not in env, f"host variable {key} leaked into the sandbox")
    expect("hunter2" not in r.output, "host secret value leaked into the sandbox")


def check_workdir(make: MakeSandbox) -> None:
    with temp_sandbox(make) as (sb, ws):
        (ws / "sub" / "inner").mkdir(parents=True)
        r = sb.exec("pwd")
        expect(r.output.strip() == sb.mount, f"default working folder {r.output.strip()!r}, want {sb.mount}")
        r = sb.exec(["pwd"], workdir="sub/inner")
        expect(r.output.strip() == sb.mount + "/sub/inner", f"relative workdir gave {r.output.strip()!r}")
        r = sb.exec("pwd", workdir="/tmp")
        expect(r.output.strip() == "/tmp", f"absolute workdir gave {r.output.strip()!r}")
        r = sb.exec("pwd", workdir="missing-folder")
        expect(r.exit_code not in (0, None), f"a missing workdir should fail the command: {r}")


def check_output_interleaved(make: MakeSandbox) -> None:
    with temp_sandbox(make) as (sb, _):
        r = sb.exec("echo to-out; echo to-err >&2; printf 'caf\\303\\251 \\377\\n'")
        expect("to-out" in r.output and "to-err" in r.output, f"stdout and stderr not both captured: {r}")
        expect("café \ufffd" in r.output, f"output not decoded as utf-8 with replacement: {r.output!r}")
        expect(not r.truncated and r.duration_s > 0, f"bad result fields: {r}")
