"""Gateway mode: OpenClaw driven the published way, through its gateway's chat endpoint.

Inside the trial's sandbox a small driver (standard-library Python, `DRIVER`, placed read-only in
the private folder) starts `openclaw gateway --bind loopback` on the sandbox's own loopback, waits
until it listens, then sends each user message as `POST /v1/chat/completions` with the trial's
bearer token and a `user` id (the same id continues a session; a new one starts a fresh session).
The gateway runs its whole tool loop and answers with the final assistant text; the model calls it
makes go through the recording proxy like every other mode. The driver prints one framed JSON line
per message, then stops the gateway.
"""

from __future__ import annotations

import json
from typing import Any

DRIVER_NAME = "gateway_driver.py"
FRAME = "CLAWGYM-GATEWAY "

DRIVER = (
    r'''
import json, os, signal, socket, subprocess, sys, time, urllib.request
plan = json.load(open(sys.argv[1]))
port, token = plan["port"], plan["token"]
gateway = subprocess.Popen(plan["command"], start_new_session=True)
def say(obj):
    sys.stdout.write("'''
    + FRAME
    + r"""" + json.dumps(obj) + "\n"); sys.stdout.flush()
ready, started = False, time.monotonic()
while time.monotonic() - started < plan["ready_s"] and gateway.poll() is None:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close(); ready = True; break
    except OSError:
        time.sleep(0.1)
say({"ready": ready, "ready_s": round(time.monotonic() - started, 3), "exit": gateway.poll()})
try:
    for i, turn in enumerate(plan["turns"] if ready else []):
        body = json.dumps({"model": "openclaw", "stream": False, "user": turn["user"],
                           "messages": [{"role": "user", "content": turn["message"]}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=max(1.0, plan["deadline"] - time.time())) as resp:
                out = {"index": i, "status": resp.status, "body": resp.read(1 << 22).decode("utf-8", "replace")}
        except urllib.error.HTTPError as e:
            out = {"index": i, "status": e.code, "body": e.read(1 << 16).decode("utf-8", "replace")}
        except Exception as e:
            out = {"index": i, "status": None, "error": f"{type(e).__name__}: {e}"}
        out["seconds"] = round(time.monotonic() - t0, 3)
        say(out)
        if out.get("status") != 200:
            break
finally:
    try:
        os.killpg(gateway.pid, signal.SIGTERM); gateway.wait(timeout=5)
    except Exception:
        try:
            os.killpg(gateway.pid, signal.SIGKILL)
        except Exception:
            pass
"""
)


def frames(output: str) -> list[dict[str, Any]]:
    """The driver's framed JSON lines in `output` (anything else OpenClaw printed is ignored)."""
    out = []
    for line in output.splitlines():
        if line.startswith(FRAME):
            try:
                value = json.loads(line[len(FRAME) :])
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def answer_text(frame: dict[str, Any]) -> str | None:
    """The final assistant text of a 200 answer (None when the body is not a chat completion)."""
    try:
        body = json.loads(frame.get("body") or "")
        return str(body["choices"][0]["message"]["content"] or "")
    except (ValueError, KeyError, IndexError, TypeError):
        return None
