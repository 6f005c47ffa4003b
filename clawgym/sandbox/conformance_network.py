"""Conformance checks of the network: none with network=False; with network=True outbound access
that never reaches the host's loopback services or abstract Unix sockets, and a loopback of each
sandbox's own.
"""

from __future__ import annotations

import fcntl
import json
import secrets
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

from ..errors import ClawgymError
from .base import Sandbox
from .conformance_support import LIMITS, CheckFailed, CheckSkipped, MakeSandbox, expect, new_marker, temp_sandbox


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
        with temp_sandbox(make) as (sb, _):
            r = sb.exec(["python3", "-c", _CONNECT, str(port), "127.0.0.1"], timeout=30)
            expect("CONNECTED" not in r.output and not hits, "reached a host TCP server with network=False")
        with tempfile.TemporaryDirectory(prefix="clawgym-conformance-") as tmp:
            try:
                sb = make(Path(tmp), LIMITS, True)
            except (ClawgymError, NotImplementedError):
                return  # network=True is optional
            try:
                r = sb.exec(["python3", "-c", _CONNECT, str(port), "127.0.0.1"], timeout=30)
                expect(
                    "CONNECTED" not in r.output and not hits,
                    f"network=True reached a server on the host's loopback: {r.output.strip()}",
                )
                expect("FAILED 127.0.0.1" in r.output, f"the loopback probe did not run: {r.output.strip()}")
                addr = _host_address()
                if addr is None:
                    raise CheckSkipped(
                        "host loopback unreachable as required; outward reach not checked: "
                        "this host has no non-loopback IPv4 address"
                    )
                out_srv, out_port, out_hits = _serve(addr)
                try:
                    r = sb.exec(["python3", "-c", _CONNECT, str(out_port), addr], timeout=30)
                finally:
                    out_srv.close()
                expect(
                    f"CONNECTED {addr}" in r.output and out_hits,
                    f"network=True cannot reach a server on the host's address {addr}: {r.output.strip()}",
                )
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
            tokens, results = [new_marker() for _ in boxes], [None] * len(boxes)
            deadline = time.time() + 6  # both must be bound by then: it proves they overlapped

            def run(i: int) -> None:
                results[i] = boxes[i].exec(
                    ["python3", "-c", _OWN_LOOPBACK, str(LOOPBACK_PORT), tokens[i], str(deadline)], timeout=40
                )

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
        expect(r is not None and r.exit_code == 0, f"networked sandbox {i} failed: {r}")
        try:
            info = json.loads(r.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise CheckFailed(f"networked sandbox {i} printed no result: {r.output.strip()}") from None
        expect(
            "error" not in info,
            f"sandbox {i} could not bind 127.0.0.1:{LOOPBACK_PORT} while another "
            f"networked sandbox held it: {info.get('error')}",
        )
        expect(
            info["got"] == tokens[i],
            f"sandbox {i}'s 127.0.0.1:{LOOPBACK_PORT} answered {info['got']!r}, not its own listener",
        )
        seen.append(info)
    expect(
        max(i["bound"] for i in seen) < min(i["asked"] for i in seen),
        "the two sandboxes' listeners did not overlap in time (a sandbox took over 6 s to start)",
    )


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
            expect("CONNECTED" not in r.output, f"{what} a host abstract Unix socket accepts a connection")
            expect("LISTED 0" in r.output, f"{what} the host's abstract sockets are listed: {r.output.strip()}")
            expect(
                "BOUND" in r.output,
                f"{what} the name of a host abstract socket cannot be bound (shared namespace): {r.output.strip()}",
            )
    finally:
        host.close()
