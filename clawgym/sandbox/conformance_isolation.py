"""Conformance checks that the host stays out of reach: its files and folders hidden (also through
workspace symlinks), nothing written outside the workspace, its processes invisible.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .base import home_for
from .conformance_support import MakeSandbox, expect, host_secret, new_marker, temp_sandbox


def check_host_files_hidden(make: MakeSandbox) -> None:
    with host_secret() as (secret, token), temp_sandbox(make) as (sb, ws):
        candidates = {str(secret), str(secret.parent), os.getcwd(), str(Path(__file__).resolve().parents[2])}
        candidates.update({str(ws), str(ws.parent)})
        for top in ("/root", "/home", "/srv", "/opt", "/mnt", "/var/lib"):
            try:
                candidates.update(str(p) for p in Path(top).iterdir() if p.name != ".openclaw")
            except OSError:
                continue
        standard = {"/", "/tmp", "/var", "/var/tmp", "/root", home_for(sb.mount)}  # exist inside by design
        skip = ("/usr", "/bin", "/sbin", "/lib", "/etc", "/proc", "/dev", sb.mount)
        paths = sorted(
            p for p in candidates if p not in standard and not any(p == s or p.startswith(s + "/") for s in skip)
        )
        script = 'for p in "$@"; do [ -e "$p" ] && echo "VISIBLE $p"; done; true'
        r = sb.exec(["bash", "-c", script, "sh", *paths])
        expect("VISIBLE" not in r.output, f"host paths visible inside: {r.output.strip()}")
        r = sb.exec(f"cat {secret}; cat /etc/shadow; ls -a /root")
        expect(token not in r.output, "a host file outside the workspace is readable")
        expect("root:" not in r.output, "/etc/shadow is readable")


def check_cannot_write_outside(make: MakeSandbox) -> None:
    name = new_marker()
    with temp_sandbox(make) as (sb, ws):
        sb.exec(f"touch /tmp/{name}; touch {sb.mount}/../{name}; touch /{name}")
        r = sb.exec(f"touch /usr/{name}")
        expect(r.exit_code != 0, "/usr is writable inside")
        r = sb.exec("echo 'evil:x:0:0::/:/bin/sh' >> /etc/passwd")
        probe_host = [Path("/tmp", name), ws.parent / name, Path("/usr", name), Path("/", name)]
        escaped = [str(p) for p in probe_host if p.exists()]
        expect(not escaped, f"a write escaped to the host: {escaped}")
        expect("evil:" not in Path("/etc/passwd").read_text(), "host /etc/passwd was modified")


def check_pid_namespace(make: MakeSandbox) -> None:
    marker = new_marker()
    host = subprocess.Popen(["bash", "-c", f"exec -a {marker} sleep 60"])
    try:
        with temp_sandbox(make) as (sb, _):
            r = sb.exec("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done")
            expect(marker not in r.output, "a host process is visible inside")
            expect(len(r.output.splitlines()) < 20, f"too many processes visible inside: {r.output!r}")
    finally:
        host.kill()
        host.wait()


def check_symlink_escape(make: MakeSandbox) -> None:
    with host_secret() as (secret, token):
        with temp_sandbox(make) as (sb, ws):
            (ws / "link_file").symlink_to(secret)
            (ws / "link_dir").symlink_to(secret.parent, target_is_directory=True)
            owner = secret.stat().st_uid
            r = sb.exec(
                "cat link_file; cat link_dir/secret.txt; ls link_dir/; echo pwned > link_file; "
                "echo pwned > link_dir/secret.txt; ln -sf / rootlink; cat rootlink/" + str(secret)
            )
            expect(token not in r.output, "a workspace symlink gave access to a host file")
        expect(secret.read_text() == token + "\n", "a host file was modified through a workspace symlink")
        expect(secret.stat().st_uid == owner, "a host file changed owner through a workspace symlink")
