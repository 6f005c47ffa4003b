"""Conformance suite every sandbox backend must pass.

Each ``check_*(make_sandbox)`` builds its own sandboxes over fresh temporary workspaces, where
``make_sandbox(workspace, limits, network) -> Sandbox``. A check returns normally when the backend
conforms, raises :class:`CheckFailed` when it does not and :class:`CheckSkipped` when the backend
does not offer an optional feature. Run them all with :func:`run_checks`.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import secrets
import socket
import struct
import subprocess
import tempfile
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..errors import ClawgymError
from .base import SANDBOX_PATH, Sandbox, SandboxLimits, home_for

MakeSandbox = Callable[[Path, SandboxLimits, bool], Sandbox]
LIMITS = SandboxLimits(wall_seconds=30, memory_mb=512, pids=64, output_bytes=200_000, file_size_mb=8)


class CheckFailed(AssertionError):
    """The backend does not conform."""


class CheckSkipped(Exception):
    """The backend does not offer an optional feature."""


def _expect(cond: object, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


@contextmanager
def _sandbox(make: MakeSandbox, limits: SandboxLimits = LIMITS, network: bool = False,
             files: dict[str, str] | None = None) -> Iterator[tuple[Sandbox, Path]]:
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
def _host_secret() -> Iterator[tuple[Path, str]]:
    """A world-readable file in a world-readable host folder outside any workspace."""
    token = "clawgym-secret-" + secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="clawgym-host-") as tmp:
        os.chmod(tmp, 0o755)
        path = Path(tmp, "secret.txt")
        path.write_text(token + "\n")
        path.chmod(0o644)
        yield path, token


def _marker() -> str:
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


def _expect_gone(marker: str, what: str, grace: float = 2.0) -> None:
    deadline = time.monotonic() + grace
    while (left := _host_pids_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    _expect(not left, f"{what}: processes left behind on the host: {left}")


def _host_process_count() -> int:
    return sum(1 for e in os.scandir("/proc") if e.name.isdigit())


# ----------------------------------------------------------------------------- checks
def check_workspace_read_write(make: MakeSandbox) -> None:
    with _sandbox(make, files={"in.txt": "from host\n"}) as (sb, ws):
        r = sb.exec("cat in.txt")
        _expect(r.exit_code == 0 and r.output == "from host\n", f"cannot read a workspace file: {r}")
        r = sb.exec("echo out > out.txt && mkdir -p sub/deep && echo deep > sub/deep/f.txt && echo more >> in.txt")
        _expect(r.exit_code == 0, f"cannot write the workspace: {r}")
        r = sb.exec("cat out.txt sub/deep/f.txt")
        _expect(r.output == "out\ndeep\n", f"workspace writes do not persist across execs: {r}")
        _expect((ws / "out.txt").read_text() == "out\n", "a file written inside is not in the host workspace")
        sb.close()
        for p in [ws / "out.txt", ws / "sub", ws / "sub/deep/f.txt", ws / "in.txt"]:
            _expect(p.exists(), f"{p.name} vanished after close")
            _expect(p.stat().st_uid == os.getuid(), f"{p.relative_to(ws)} is not owned by the host user after close")
        with open(ws / "sub/deep/f.txt", "a") as f:
            f.write("host can write\n")
        _expect((ws / "in.txt").read_text() == "from host\nmore\n", "in.txt was not updated")


def check_exit_codes(make: MakeSandbox) -> None:
    with _sandbox(make) as (sb, _):
        for cmd, want in [("true", 0), ("exit 7", 7), (["false"], 1), ("no-such-cmd-xyz", 127),
                          (["no-such-cmd-xyz"], 127), ("kill -TERM $$", 143)]:
            r = sb.exec(cmd)
            _expect(r.exit_code == want, f"{cmd!r}: exit code {r.exit_code}, want {want} ({r.output.strip()})")
            _expect(not r.timed_out and r.killed_reason is None, f"{cmd!r} reported as killed: {r}")


def check_stdin(make: MakeSandbox) -> None:
    with _sandbox(make) as (sb, _):
        r = sb.exec("cat", stdin="hello\nworld\n")
        _expect(r.output == "hello\nworld\n", f"str stdin not passed: {r}")
        r = sb.exec(["cat"], stdin=b"\x00bin\xff")
        _expect(r.output == "\x00bin\ufffd", f"bytes stdin not passed: {r.output!r}")
        r = sb.exec("wc -c", stdin=b"x" * (2 << 20))
        _expect(r.output.strip() == str(2 << 20), f"large stdin not passed whole: {r.output!r}")
        r = sb.exec("head -c 1", stdin=b"y" * (4 << 20), timeout=20)
        _expect(r.exit_code == 0 and not r.timed_out, f"unread stdin blocks the exec: {r}")
        r = sb.exec("cat", timeout=10)
        _expect(r.exit_code == 0 and r.output == "", f"no stdin should read as empty: {r}")


def check_env(make: MakeSandbox) -> None:
    leak = {"CLAWGYM_HOST_SECRET": "hunter2", "PYTHONPATH": "/host/lib", "VIRTUAL_ENV": "/host/venv"}
    saved = {k: os.environ.get(k) for k in leak}
    os.environ.update(leak)
    try:
        with _sandbox(make) as (sb, _):
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
        _expect(env.get(key) == value, f"{key}={env.get(key)!r} inside, want {value!r}")
    for key in leak:
        _expect(key not in env, f"host variable {key} leaked into the sandbox")
    _expect("hunter2" not in r.output, "host secret value leaked into the sandbox")


def check_workdir(make: MakeSandbox) -> None:
    with _sandbox(make) as (sb, ws):
        (ws / "sub" / "inner").mkdir(parents=True)
        r = sb.exec("pwd")
        _expect(r.output.strip() == sb.mount, f"default working folder {r.output.strip()!r}, want {sb.mount}")
        r = sb.exec(["pwd"], workdir="sub/inner")
        _expect(r.output.strip() == sb.mount + "/sub/inner", f"relative workdir gave {r.output.strip()!r}")
        r = sb.exec("pwd", workdir="/tmp")
        _expect(r.output.strip() == "/tmp", f"absolute workdir gave {r.output.strip()!r}")
        r = sb.exec("pwd", workdir="missing-folder")
        _expect(r.exit_code not in (0, None), f"a missing workdir should fail the command: {r}")


def check_output_interleaved(make: MakeSandbox) -> None:
    with _sandbox(make) as (sb, _):
        r = sb.exec("echo to-out; echo to-err >&2; printf 'caf\\303\\251 \\377\\n'")
        _expect("to-out" in r.output and "to-err" in r.output, f"stdout and stderr not both captured: {r}")
        _expect("café \ufffd" in r.output, f"output not decoded as utf-8 with replacement: {r.output!r}")
        _expect(not r.truncated and r.duration_s > 0, f"bad result fields: {r}")


def check_host_files_hidden(make: MakeSandbox) -> None:
    with _host_secret() as (secret, token), _sandbox(make) as (sb, ws):
        candidates = {str(secret), str(secret.parent), os.getcwd(), str(Path(__file__).resolve().parents[2])}
        candidates.update({str(ws), str(ws.parent)})
        for top in ("/root", "/home", "/srv", "/opt", "/mnt", "/var/lib"):
            try:
                candidates.update(str(p) for p in Path(top).iterdir() if p.name != ".openclaw")
            except OSError:
                continue
        standard = {"/", "/tmp", "/var", "/var/tmp", "/root", home_for(sb.mount)}  # exist inside by design
        skip = ("/usr", "/bin", "/sbin", "/lib", "/etc", "/proc", "/dev", sb.mount)
        paths = sorted(p for p in candidates
                       if p not in standard and not any(p == s or p.startswith(s + "/") for s in skip))
        script = 'for p in "$@"; do [ -e "$p" ] && echo "VISIBLE $p"; done; true'
        r = sb.exec(["bash", "-c", script, "sh", *paths])
        _expect("VISIBLE" not in r.output, f"host paths visible inside: {r.output.strip()}")
        r = sb.exec(f"cat {secret}; cat /etc/shadow; ls -a /root")
        _expect(token not in r.output, "a host file outside the workspace is readable")
        _expect("root:" not in r.output, "/etc/shadow is readable")


def check_cannot_write_outside(make: MakeSandbox) -> None:
    name = _marker()
    with _sandbox(make) as (sb, ws):
        sb.exec(f"touch /tmp/{name}; touch {sb.mount}/../{name}; touch /{name}")
        r = sb.exec(f"touch /usr/{name}")
        _expect(r.exit_code != 0, "/usr is writable inside")
        r = sb.exec("echo 'evil:x:0:0::/:/bin/sh' >> /etc/passwd")
        probe_host = [Path("/tmp", name), ws.parent / name, Path("/usr", name), Path("/", name)]
        escaped = [str(p) for p in probe_host if p.exists()]
        _expect(not escaped, f"a write escaped to the host: {escaped}")
        _expect("evil:" not in Path("/etc/passwd").read_text(), "host /etc/passwd was modified")


def _serve(host: str = "127.0.0.1") -> tuple[socket.socket, int, list[int]]:
    srv = socket.socket()
    srv.bind((host, 0))
    srv.listen(8)
    hits: list[int] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            hits.append(1)
            conn.close()
    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1], hits


def _host_address() -> str | None:
    """A non-loopback IPv4 address of this host (the default route's source, else any), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("198.51.100.1", 9))  # routing only: a UDP connect sends nothing
            found = [s.getsockname()[0]]
        except OSError:
            found = []
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
                found.append(socket.inet_ntoa(packed[20:24]))
            except OSError:
                continue
    return next((a for a in found if not a.startswith("127.") and a != "0.0.0.0"), None)


def _networked(make: MakeSandbox, ws: Path) -> Sandbox:
    try:
        return make(ws, LIMITS, True)
    except (ClawgymError, NotImplementedError) as exc:
        raise CheckSkipped(f"network=True is not offered: {exc}") from None


# Connects to PORT at each ADDR given and at the default gateway; prints CONNECTED ADDR on success.
_CONNECT = """
import socket, struct, sys
port, addrs = int(sys.argv[1]), sys.argv[2:]
for line in open('/proc/net/route').read().splitlines()[1:]:
    f = line.split()
    if f[1] == '00000000':
        addrs.append(socket.inet_ntoa(struct.pack('=I', int(f[2], 16))))
for addr in addrs:
    try:
        socket.create_connection((addr, port), timeout=3).close()
        print('CONNECTED', addr)
    except OSError as exc:
        print('FAILED', addr, exc)
"""


def check_no_network(make: MakeSandbox) -> None:
    """No network with network=False. With network=True: a server on the host's 127.0.0.1 stays out
    of reach (directly and through the default gateway), one on a host's non-loopback address is reached."""
    srv, port, hits = _serve()
    try:
        with _sandbox(make) as (sb, _):
            r = sb.exec(["python3", "-c", _CONNECT, str(port), "127.0.0.1"], timeout=30)
            _expect("CONNECTED" not in r.output and not hits, "reached a host TCP server with network=False")
        with tempfile.TemporaryDirectory(prefix="clawgym-conformance-") as tmp:
            try:
                sb = make(Path(tmp), LIMITS, True)
            except (ClawgymError, NotImplementedError):
                return  # network=True is optional
            try:
                r = sb.exec(["python3", "-c", _CONNECT, str(port), "127.0.0.1"], timeout=30)
                _expect("CONNECTED" not in r.output and not hits,
                        f"network=True reached a server on the host's loopback: {r.output.strip()}")
                _expect("FAILED 127.0.0.1" in r.output, f"the loopback probe did not run: {r.output.strip()}")
                addr = _host_address()
                if addr is None:
                    raise CheckSkipped("host loopback unreachable as required; outward reach not checked: "
                                       "this host has no non-loopback IPv4 address")
                out_srv, out_port, out_hits = _serve(addr)
                try:
                    r = sb.exec(["python3", "-c", _CONNECT, str(out_port), addr], timeout=30)
                finally:
                    out_srv.close()
                _expect(f"CONNECTED {addr}" in r.output and out_hits,
                        f"network=True cannot reach a server on the host's address {addr}: {r.output.strip()}")
            finally:
                sb.close()
    finally:
        srv.close()


# Binds 127.0.0.1:PORT, answers TOKEN, holds it until DEADLINE (host clock), then asks its own port.
_OWN_LOOPBACK = """
import json, socket, sys, threading, time
port, token, deadline = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
srv = socket.socket()
try:
    srv.bind(('127.0.0.1', port))
except OSError as exc:
    print(json.dumps({'error': 'bind: %s' % exc}))
    sys.exit(0)
srv.listen(8)
bound = time.time()
def serve():
    while True:
        conn, _ = srv.accept()
        conn.sendall(token.encode())
        conn.close()
threading.Thread(target=serve, daemon=True).start()
time.sleep(max(deadline - time.time(), 0))
asked = time.time()
with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:
    print(json.dumps({'bound': bound, 'asked': asked, 'got': conn.recv(100).decode()}))
"""
LOOPBACK_PORT = 18080  # the fixed port the command agent's in-sandbox forwarder uses


def check_network_private_loopback(make: MakeSandbox) -> None:
    """Two networked sandboxes bind the same loopback port at once, and each reaches its own."""
    with tempfile.TemporaryDirectory(prefix="clawgym-conformance-") as tmp:
        boxes = []
        try:
            for i in range(2):
                Path(tmp, f"ws{i}").mkdir()
                boxes.append(_networked(make, Path(tmp, f"ws{i}")))
            tokens, results = [_marker() for _ in boxes], [None] * len(boxes)
            deadline = time.time() + 6  # both must be bound by then: it proves they overlapped

            def run(i: int) -> None:
                results[i] = boxes[i].exec(["python3", "-c", _OWN_LOOPBACK, str(LOOPBACK_PORT), tokens[i],
                                            str(deadline)], timeout=40)
            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(boxes))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        finally:
            for sb in boxes:
                sb.close()
    seen = []
    for i, r in enumerate(results):
        _expect(r is not None and r.exit_code == 0, f"networked sandbox {i} failed: {r}")
        try:
            info = json.loads(r.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise CheckFailed(f"networked sandbox {i} printed no result: {r.output.strip()}") from None
        _expect("error" not in info, f"sandbox {i} could not bind 127.0.0.1:{LOOPBACK_PORT} while another "
                                     f"networked sandbox held it: {info.get('error')}")
        _expect(info["got"] == tokens[i], f"sandbox {i}'s 127.0.0.1:{LOOPBACK_PORT} answered "
                                          f"{info['got']!r}, not its own listener")
        seen.append(info)
    _expect(max(i["bound"] for i in seen) < min(i["asked"] for i in seen),
            "the two sandboxes' listeners did not overlap in time (a sandbox took over 6 s to start)")


_ABSTRACT = """
import socket, sys
name = '\\0' + sys.argv[1]
listed = [line for line in open('/proc/net/unix') if '@clawgym-' in line]
print('LISTED', len(listed))
try:
    socket.socket(socket.AF_UNIX).connect(name)
    print('CONNECTED')
except OSError as exc:
    print('CONNECT-FAILED', exc)
try:
    socket.socket(socket.AF_UNIX).bind(name)
    print('BOUND')
except OSError as exc:
    print('BIND-FAILED', exc)
"""


def check_host_abstract_sockets_hidden(make: MakeSandbox) -> None:
    """An abstract Unix socket bound on the host (like the local backend's uid locks) can be neither
    seen, connected to nor taken from a sandbox, networked or not."""
    name = "clawgym-conformance-" + secrets.token_hex(8)
    host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        host.bind("\0" + name)
        host.listen(1)
        for network in (False, True):
            with tempfile.TemporaryDirectory(prefix="clawgym-conformance-") as tmp:
                try:
                    sb = make(Path(tmp), LIMITS, network)
                except (ClawgymError, NotImplementedError):
                    if network:
                        return  # network=True is optional
                    raise
                try:
                    r = sb.exec(["python3", "-c", _ABSTRACT, name], timeout=30)
                finally:
                    sb.close()
            what = f"with network={network}"
            _expect("CONNECTED" not in r.output, f"{what} a host abstract Unix socket accepts a connection")
            _expect("LISTED 0" in r.output, f"{what} the host's abstract sockets are listed: {r.output.strip()}")
            _expect("BOUND" in r.output, f"{what} the name of a host abstract socket cannot be bound "
                                         f"(shared namespace): {r.output.strip()}")
    finally:
        host.close()


def check_pid_namespace(make: MakeSandbox) -> None:
    marker = _marker()
    host = subprocess.Popen(["bash", "-c", f"exec -a {marker} sleep 60"])
    try:
        with _sandbox(make) as (sb, _):
            r = sb.exec("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done")
            _expect(marker not in r.output, "a host process is visible inside")
            _expect(len(r.output.splitlines()) < 20, f"too many processes visible inside: {r.output!r}")
    finally:
        host.kill()
        host.wait()


def check_process_limit(make: MakeSandbox) -> None:
    code = ("import os, time\nn = 0\nfor _ in range(500):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
            "    n += 1\nprint('forked', n)")
    with _sandbox(make) as (sb, _):
        r = sb.exec(["python3", "-c", code], timeout=30)
        words = r.output.split()
        _expect("forked" in words, f"fork loop did not finish: {r}")
        n = int(words[words.index("forked") + 1])
        _expect(n <= LIMITS.pids, f"forked {n} processes with pids={LIMITS.pids}")
        _expect(n >= LIMITS.pids // 2, f"only {n} processes allowed with pids={LIMITS.pids}")


def check_fork_bomb(make: MakeSandbox) -> None:
    m, before, health = _marker(), _host_process_count(), {}

    def probe() -> None:
        time.sleep(1.0)
        health["procs"] = _host_process_count()
        t = time.monotonic()
        subprocess.run(["true"], timeout=30)
        health["spawn_s"] = time.monotonic() - t
    with _sandbox(make) as (sb, _):
        t = threading.Thread(target=probe)
        t.start()
        r = sb.exec(f": {m}; :(){{ :|:& }};:; sleep 3", timeout=4)  # every bash copy carries the marker
        t.join()
        _expect(r.duration_s < 15, f"fork bomb exec took {r.duration_s:.1f}s with timeout 4")
        _expect(health.get("spawn_s", 99) < 5, f"host could not spawn a process during the bomb: {health}")
        _expect(health["procs"] <= before + LIMITS.pids + 200, f"bomb not contained: {health['procs']} host processes")
        r = sb.exec("echo still-usable")
        _expect(r.output.strip() == "still-usable", f"sandbox unusable after a fork bomb: {r}")
    _expect_gone(m, "after a fork bomb", grace=3.0)
    with _sandbox(make) as (sb, _):
        r = sb.exec("echo next-ok")
        _expect(r.output.strip() == "next-ok", f"next sandbox unusable after a fork bomb: {r}")


def check_output_flood(make: MakeSandbox) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with _sandbox(make) as (sb, _):
        r = sb.exec("cat /dev/zero | tr '\\0' x", timeout=60)
        _expect(r.truncated, f"flood not marked truncated: {r.killed_reason}")
        _expect(len(r.output) <= LIMITS.output_bytes, f"kept {len(r.output)} chars, cap {LIMITS.output_bytes}")
        _expect(r.output.startswith("xxxx"), "flood output does not keep the head")
        _expect(r.duration_s < 10 and not r.timed_out, f"flood not cut quickly: {r.duration_s:.1f}s")
        r = sb.exec("head -c 300000 /dev/zero | tr '\\0' y; echo")
        _expect(r.truncated and len(r.output) == LIMITS.output_bytes, "output past the cap not truncated")
        r = sb.exec("echo after-flood")
        _expect(r.output.strip() == "after-flood", f"sandbox unusable after a flood: {r}")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    _expect(grown_mb < 200, f"host memory grew by {grown_mb:.0f} MB during the flood")


def check_timeout_kills_tree(make: MakeSandbox) -> None:
    m = _marker()
    cmd = (f"(exec -a {m}-bg sleep 1000) & setsid bash -c 'exec -a {m}-setsid sleep 1000' & "
           f"nohup bash -c 'exec -a {m}-nohup sleep 1000' >/dev/null 2>&1 & sleep 1000")
    with _sandbox(make) as (sb, _):
        r = sb.exec(cmd, timeout=1.0)
        _expect(r.timed_out and r.exit_code is None and r.killed_reason == "timeout", f"not reported as timeout: {r}")
        _expect(r.duration_s < 6, f"timeout of 1s took {r.duration_s:.1f}s")
        _expect_gone(m, "after a timeout")
        r = sb.exec("echo alive")
        _expect(r.output.strip() == "alive", f"sandbox unusable after a timeout: {r}")


def check_memory_limit(make: MakeSandbox) -> None:
    limits = SandboxLimits(wall_seconds=30, memory_mb=256, pids=64, output_bytes=100_000)
    with _sandbox(make, limits=limits) as (sb, _):
        r = sb.exec(["python3", "-c", "b = bytearray(32 << 20); b[-1] = 1; print('small-ok')"])
        _expect("small-ok" in r.output, f"a 32 MB allocation failed under memory_mb=256: {r.output.strip()}")
        r = sb.exec(["python3", "-c", "b = bytearray(2 << 30); print('big-ok')"])
        _expect("big-ok" not in r.output and r.exit_code != 0, "allocated 2 GB under memory_mb=256")


def check_file_size_limit(make: MakeSandbox) -> None:
    with _sandbox(make) as (sb, ws):
        r = sb.exec(f"head -c {(LIMITS.file_size_mb + 4) << 20} /dev/zero > big.bin")
        _expect(r.exit_code != 0, "writing past file_size_mb did not fail")
        size = (ws / "big.bin").stat().st_size if (ws / "big.bin").exists() else 0
        _expect(size <= LIMITS.file_size_mb << 20, f"wrote a {size}-byte file with file_size_mb={LIMITS.file_size_mb}")


def check_close_kills_everything(make: MakeSandbox) -> None:
    m = _marker()
    with _sandbox(make) as (sb, _):
        sb.exec(f"setsid nohup bash -c 'exec -a {m}-daemon sleep 1000' >/dev/null 2>&1 & echo started")
        box: dict = {}
        worker = threading.Thread(target=lambda: box.setdefault("r", sb.exec(f"exec -a {m}-busy sleep 1000")))
        worker.start()
        time.sleep(0.5)
        t = time.monotonic()
        sb.close()
        worker.join(15)
        _expect(not worker.is_alive(), "an exec running during close() did not return")
        _expect(time.monotonic() - t < 10, "close() took more than 10 s")
        _expect(box["r"].exit_code is None, f"exec interrupted by close() reported an exit code: {box['r']}")
        sb.close()  # idempotent
    _expect_gone(m, "after close()")


def check_symlink_escape(make: MakeSandbox) -> None:
    with _host_secret() as (secret, token):
        with _sandbox(make) as (sb, ws):
            (ws / "link_file").symlink_to(secret)
            (ws / "link_dir").symlink_to(secret.parent, target_is_directory=True)
            owner = secret.stat().st_uid
            r = sb.exec("cat link_file; cat link_dir/secret.txt; ls link_dir/; echo pwned > link_file; "
                        "echo pwned > link_dir/secret.txt; ln -sf / rootlink; cat rootlink/" + str(secret))
            _expect(token not in r.output, "a workspace symlink gave access to a host file")
        _expect(secret.read_text() == token + "\n", "a host file was modified through a workspace symlink")
        _expect(secret.stat().st_uid == owner, "a host file changed owner through a workspace symlink")


ALL_CHECKS: list[Callable[[MakeSandbox], None]] = [
    check_workspace_read_write, check_exit_codes, check_stdin, check_env, check_workdir,
    check_output_interleaved, check_host_files_hidden, check_cannot_write_outside, check_no_network,
    check_network_private_loopback, check_host_abstract_sockets_hidden, check_pid_namespace,
    check_process_limit, check_fork_bomb, check_output_flood, check_timeout_kills_tree,
    check_memory_limit, check_file_size_limit, check_close_kills_everything, check_symlink_escape,
]


def check_name(check: Callable) -> str:
    return check.__name__.removeprefix("check_")


def run_checks(make: MakeSandbox,
               checks: list[Callable[[MakeSandbox], None]] | None = None) -> list[tuple[str, bool, str]]:
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
