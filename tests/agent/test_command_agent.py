"""A black-box agent program in the sandbox, talking to the recording proxy with the openai SDK,
yields a trajectory of the same form as the built-in claw agent's."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

from clawgym.compile.compiler import compile_task, load_task_spec
from clawgym.policy.scripted import tool_call
from clawgym.run.trial import Trial, execute_trial

LIB = Path(__file__).parent.parent / "fixtures" / "lib"

AGENT = r"""
import json, os, sys
from openai import OpenAI
client = OpenAI()
tools = [{"type": "function", "function": {"name": "write", "description": "Write a file.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                           "content": {"type": "string"}},
                         "required": ["path", "content"]}}}]
messages = [{"role": "user", "content": os.environ["CLAWGYM_INSTRUCTION"]}]
while True:
    reply = client.chat.completions.create(model=os.environ["OPENAI_MODEL"], messages=messages, tools=tools)
    msg = reply.choices[0].message
    messages.append(msg.model_dump(exclude_none=True))
    if not msg.tool_calls:
        print("final:", msg.content)
        break
    for call in msg.tool_calls:
        args = json.loads(call.function.arguments)
        os.makedirs(os.path.dirname(args["path"]) or ".", exist_ok=True)
        open(args["path"], "w").write(args["content"])
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
"""


def _dist_closure(name: str) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        try:
            dist = metadata.distribution(current)
        except metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(
                    req.split(";")[0]
                    .split("[")[0]
                    .split("<")[0]
                    .split(">")[0]
                    .split("=")[0]
                    .split("!")[0]
                    .split("~")[0]
                    .strip()
                )
    return seen


@pytest.fixture(scope="module")
def openai_lib():
    """The openai SDK and its dependencies, copied where the sandbox's uid may read them."""
    lib = Path(tempfile.mkdtemp(prefix="clawgym-agent-lib-", dir="/var/tmp"))
    try:
        for name in _dist_closure("openai"):
            dist = metadata.distribution(name)
            for f in dist.files or []:
                if ".." in f.parts or f.suffix == ".pyc":
                    continue
                src = Path(dist.locate_file(f))
                if src.is_file():
                    dest = lib / f
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dest)
        for root, dirs, files in os.walk(lib):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        yield lib
    finally:
        shutil.rmtree(lib, ignore_errors=True)


def _trial(tmp_path: Path, lib: Path, turns: list, seed: int = 4) -> tuple[dict, dict]:
    task = compile_task(load_task_spec(LIB / "specs" / "good.yaml"), seed)
    (lib / "agent.py").write_text(AGENT)
    os.chmod(lib / "agent.py", 0o644)
    agent = {
        "type": "command",
        "run": "python3 /opt/lib/agent.py",
        "version": "echo demo-agent 1.2.3",
        "install": str(lib),
        "ro_binds": [[str(lib), "/opt/lib"]],
        "env": {"PYTHONPATH": "/opt/lib"},
        "policy": {"type": "scripted", "turns": turns},
    }
    record = execute_trial(Trial(task, agent), trial_dir=tmp_path / "trial")
    traj = (
        json.loads((tmp_path / "trial" / "trajectory.json").read_text())
        if (tmp_path / "trial" / "trajectory.json").exists()
        else {}
    )
    return record, traj


def _answer(seed: int = 4) -> str:
    n = compile_task(load_task_spec(LIB / "specs" / "good.yaml"), seed).params["n"]
    return str(n * (n - 1) // 2)


def test_black_box_agent_is_recorded_like_the_builtin_agent(tmp_path, openai_lib, bwrap):
    turns = [
        {"tool_calls": [tool_call("write", path="output/total.txt", content=_answer() + "\n")]},
        "I wrote the total.",
    ]
    record, traj = _trial(tmp_path, openai_lib, turns)
    assert record["status"] == "passed", record.get("error") or record.get("verdict")
    assert record["reward"] == 1.0
    assert traj["agent"]["version"] == record["agent"]["version"] == "demo-agent 1.2.3"
    roles = [m["role"] for m in traj["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert traj["messages"][1]["tool_calls"][0]["function"]["name"] == "write"
    assert traj["tools"][0]["function"]["name"] == "write"
    assert len(traj["turns"]) == 2 and {"index", "finish_reason", "usage", "latency_s"} <= set(traj["turns"][0])
    assert traj["final_message"] == "I wrote the total."
    assert "final: I wrote the total." in traj["steps"][-1]["output"]
    from clawgym.records.trajectory import Trajectory

    assert set(Trajectory.from_dict(traj).to_dict()) == set(traj)  # the same versioned format


def test_upstream_failure_makes_an_error_trial(tmp_path, openai_lib, bwrap):
    record, _ = _trial(tmp_path, openai_lib, [{"error": "endpoint down after retries"}])
    assert record["status"] == "error" and record["reward"] is None
    assert "endpoint down" in record["error"]
