"""ClawGym tasks as TRL environments (clawgym.integrations.trl): the same trial machinery as
`clawgym run`, driven one tool call at a time by TRL's GRPOTrainer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from clawgym.api import run_task
from clawgym.integrations.taskset import load_taskset, prompt_messages
from clawgym.integrations.trl import ClawGymEnv, ClawGymEnvironments
from clawgym.train.expert import expert_agent, expert_turns

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import leak_check  # noqa: E402

INSTANCES = ["budget-variance.s0", "config-audit.s0", "invoice-followup.s0"]


def ours() -> dict[str, set]:
    """What this test process has alive or on disk: its work folders (named with its pid), its
    child processes and, where the run names its work folder, its sandboxes (other jobs on the
    machine are not counted)."""
    from clawgym.files.tempdirs import work_root

    return {
        "work folders": {p.name for p in work_root().glob(f"clawgym-*-{os.getpid()}-*")},
        "child processes": {pid for pid in leak_check.child_processes() if not _verifier_server(pid)},
        "sandbox processes": set(leak_check.sandbox_processes()) if os.environ.get("CLAWGYM_WORKDIR") else set(),
    }


def _verifier_server(pid: int) -> bool:
    """The grading fork server, started once and kept for the process's life (not a leftover)."""
    try:
        return b"clawgym.verify.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def assert_nothing_new(before: dict[str, set]) -> None:
    after = ours()
    for key, value in before.items():
        assert sorted(after[key] - value) == [], f"{key} left behind"


@pytest.fixture(scope="module")
def taskset():
    return load_taskset([str(ROOT / "specs" / "tasks")], seeds=[0])


def expert_calls(task):
    """The reference solution as the claw tool calls a good agent makes (`clawgym.train.expert`)."""
    for turn in expert_turns(task):
        for call in (turn.get("tool_calls") or []) if isinstance(turn, dict) else []:
            yield call["function"]["name"], json.loads(call["function"]["arguments"])


def drive(env: ClawGymEnv, instance: str, calls) -> float | None:
    env.reset(instance=instance, prompt=[])
    for name, args in calls:
        if name == "memory_get" and "from" in args:
            args["from_line"] = args.pop("from")
        getattr(env, name)(**args)
    return env.get_reward()


def test_scores_equal_clawgym_run_on_the_same_calls(taskset, tmp_path, bwrap):
    before = ours()
    envs = ClawGymEnvironments(taskset, out=tmp_path)
    env = envs()
    for instance in INSTANCES:
        task = taskset[instance]
        through_env = drive(env, instance, expert_calls(task))
        record = env.last_record
        through_run = run_task(task, expert_agent(task))
        assert through_env == through_run.reward == 1.0, (instance, record.verdict)
        assert record.verdict == through_run.verdict  # check by check, the same verdict
        assert drive(env, instance, []) == run_task(task, {"type": "nop"}).reward == 0.0
    assert envs.counts == {"rollouts": 6, "errors": 0}
    written = sorted(p.name for p in (tmp_path / "trials").iterdir())
    assert written == sorted(f"{i}.trl.a{n}" for i in INSTANCES for n in (0, 1))  # every rollout its own trial
    assert_nothing_new(before)


def test_dataset_prompt_is_the_claw_agents_first_prompt(taskset, tmp_path, bwrap):
    pytest.importorskip("datasets", reason="the export extra is not installed (scripts/setup.sh installs it)")
    envs = ClawGymEnvironments(taskset, out=tmp_path)
    rows = {row["instance"]: row for row in envs.dataset()}
    assert set(rows) == set(taskset.tasks) and len(rows) == 24
    env = envs()
    env.reset(**rows["budget-variance.s0"])
    env.read(path="AGENTS.md")
    assert env.get_reward() == 0.0 and env.last_record.outcome == "completed"
    trajectory = json.loads((tmp_path / "trials" / "budget-variance.s0.trl.a0" / "trajectory.json").read_text())
    # what the trial's claw agent opened with is what the dataset row gives the model
    assert (
        rows["budget-variance.s0"]["prompt"]
        == trajectory["messages"][:2]
        == prompt_messages(taskset["budget-variance.s0"])
    )
    assert [s["name"] for s in trajectory["steps"] if s.get("kind") == "tool"] == ["read"]


def test_tool_methods_are_the_claw_tools(taskset):
    """TRL builds tool schemas from the methods; they carry the claw tools' names, arguments and words."""
    pytest.importorskip("transformers", reason="the model stack is not installed (scripts/setup.sh installs it)")
    from transformers.utils import get_json_schema

    from clawgym.agent.claw.schemas import SCHEMAS
    from clawgym.integrations.trl import ClawGymEnvWithAllTools

    renamed = {"from_line": "from"}  # a Python keyword cannot be an argument name
    for name, schema in SCHEMAS.items():
        method = getattr(ClawGymEnvWithAllTools, name)
        got = get_json_schema(method)["function"]
        want = schema["function"]
        assert got["name"] == name
        params = {renamed.get(k, k): v for k, v in got["parameters"]["properties"].items()}
        expected = {k: v for k, v in want["parameters"]["properties"].items() if k != "pty"}  # no terminal anyway
        assert set(params) == set(expected), name
        for key, prop in expected.items():
            assert params[key]["description"].rstrip(".") == prop["description"].rstrip("."), (name, key)
        assert set(got["parameters"].get("required", [])) == set(want["parameters"]["required"]), name
    assert ClawGymEnvironments(taskset).env_class is ClawGymEnv  # no task here enables an optional tool
    assert ClawGymEnvironments(taskset, tools="all").env_class is ClawGymEnvWithAllTools


def test_an_infrastructure_failure_is_no_reward(taskset, monkeypatch, bwrap):
    import clawgym.run.trial as trial_mod

    def broken(*args, **kwargs):
        raise RuntimeError("the grader's machine is gone")

    monkeypatch.setattr(trial_mod, "verify_task", broken)
    envs = ClawGymEnvironments(taskset)
    env = envs()
    assert drive(env, "budget-variance.s0", expert_calls(taskset["budget-variance.s0"])) is None
    assert env.last_record.outcome == "grader_error" and envs.counts["errors"] == 1


def test_calls_after_the_turn_budget_are_refused(taskset, bwrap):
    envs = ClawGymEnvironments(taskset, agent={"max_turns": 2})
    env = envs()
    env.reset(instance="budget-variance.s0")
    env.read(path="AGENTS.md")
    second = env.exec(command="echo hi")
    assert "hi" in second  # the second turn's call runs; the budget ends the trial after it
    third = json.loads(env.exec(command="echo again"))
    assert third["status"] == "error" and "budget" in third["error"]
    assert env.get_reward() == 0.0 and env.last_record.outcome == "budget_exhausted"


def test_abandoned_and_interrupted_rollouts_leave_nothing(taskset, bwrap):
    before = ours()
    envs = ClawGymEnvironments(taskset)
    first, second = envs(), envs()
    first.reset(instance="budget-variance.s0")
    first.exec(command="sleep 300", background=True)
    first.reset(instance="config-audit.s0")  # the trainer moved on without asking for the reward
    second.reset(instance="budget-variance.s0")
    second.exec(command="sleep 300 & sleep 300", background=True)
    assert envs.close() == 2  # what an interrupted trainer's callback or exit handler does
    assert first.get_reward() is None  # its trial is gone: no reward, and asking is harmless
    assert_nothing_new(before)


@pytest.mark.parametrize(
    "attack", ["planted_program", "grader_dies", "link_inputs", "lingering_writer", "bad_names", "env_and_secrets"]
)
def test_hostile_tool_calls_score_no_better_than_nothing(attack, tmp_path, bwrap):
    """The red team's attacks (tests/hostile.py), sent as exec calls through the environment."""
    from hostile import ATTACKS, Arena

    os.chmod(tmp_path, 0o755)
    arena = Arena(tmp_path, ROOT / "tests" / "fixtures" / "lib")
    chosen = {a.name: a for a in ATTACKS}[attack]
    spec = arena.task(attack.replace("_", "-"), chosen.network, chosen.judge)
    if chosen.grader:
        (arena.task_dir / "reward" / "check.py").write_text(chosen.grader)
    taskset = load_taskset([str(spec)], base=arena.lib)
    judge = {"type": "gullible_judge"} if chosen.judge else None
    if judge:
        import hostile_grading  # noqa: F401  (registers the gullible judge)
    before_files, before = arena.fingerprint(), ours()
    envs = ClawGymEnvironments(taskset, judge=judge)
    env = envs()
    [instance] = list(taskset.tasks)
    nothing = drive(env, instance, [])
    attacked = drive(env, instance, [("exec", {"command": arena.render(chosen.script), "timeout": 60})])
    honest = drive(env, instance, expert_calls(taskset[instance]))
    assert attacked is not None, env.last_record.error  # graded, never an escape into "no reward"
    assert attacked <= nothing, env.last_record.verdict
    assert honest == 1.0
    assert arena.fingerprint() == before_files and [p.name for p in arena.canary.iterdir()] == ["keep.txt"]
    assert_nothing_new(before)


def _hermes(turn: dict) -> str:
    """An assistant turn as the Qwen2.5/Hermes template writes tool calls."""
    calls = [
        '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>'
        % (c["function"]["name"], c["function"]["arguments"])
        for c in turn.get("tool_calls") or []
    ]
    return "\n".join(calls) if calls else str(turn.get("content") or "done")


def scripted_trainer(trainer_cls, task, tokenizer):
    """GRPOTrainer whose generation writes the reference solution's tool calls for every even
    rollout of a group and answers at once for every odd one: the tool loop, the parsing, the
    environments and the rewards are TRL's and ours, only the sampling is scripted."""
    turns = [t for t in expert_turns(task) if isinstance(t, dict)]

    class Scripted(trainer_cls):
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            out = []
            for i, ids in enumerate(prompt_ids):
                step = tokenizer.decode(ids).count("<|im_start|>assistant") - 1  # assistant turns so far
                if step == 0 and i % 2 == 1:
                    reply = "I will not do this."
                else:
                    reply = _hermes(turns[step]) if step < len(turns) else "done"
                out.append(tokenizer(reply + "<|im_end|>", add_special_tokens=False)["input_ids"])
            return out, None

    return Scripted


@pytest.mark.heavy  # 80 s on two cores
def test_grpo_trainer_rewards_come_from_our_verifier(taskset, tmp_path, bwrap):
    """One real GRPOTrainer step with a tiny model on our environments: a rollout doing the
    reference solution's tool calls scores 1.0, one that answers at once 0.0."""
    pytest.importorskip("trl")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from clawgym.integrations.trl import tool_tokenizer
    from tiny_models import tiny_with_tokenizer

    folder = tiny_with_tokenizer(tmp_path / "tiny")
    tokenizer = tool_tokenizer(AutoTokenizer.from_pretrained(folder))
    one = load_taskset([str(ROOT / "specs" / "tasks" / "analysis" / "budget-variance.yaml")])
    envs = ClawGymEnvironments(one, out=tmp_path / "run")
    before = ours()
    trainer = scripted_trainer(GRPOTrainer, one["budget-variance.s0"], tokenizer)(
        model=AutoModelForCausalLM.from_pretrained(folder),
        processing_class=tokenizer,
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=4096,
            max_tool_calling_iterations=8,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
        ),
        train_dataset=envs.dataset(),
        environment_factory=envs,
        callbacks=[envs.callback()],
    )
    trainer.train()
    logs = trainer.state.log_history[0]
    assert logs["rewards/ClawGymEnv/mean"] == 0.5 and logs["reward_std"] > 0
    assert logs["tools/call_frequency"] > 0 and logs["tools/failure_frequency"] == 0
    rewards = sorted(json.loads(p.read_text())["reward"] for p in (tmp_path / "run" / "trials").glob("*/record.json"))
    assert rewards == [0.0, 1.0]
    assert_nothing_new(before)


@pytest.mark.heavy  # 80 s on two cores
def test_the_example_runs_two_grpo_steps(tmp_path, bwrap):
    """examples/trl_grpo.py in its CPU mode (a tiny model here; the embedded one by default)."""
    pytest.importorskip("trl")
    sys.path.insert(0, str(ROOT / "examples"))
    import trl_grpo

    before = ours()
    summary = trl_grpo.main(["--out", str(tmp_path / "run"), "--model", "tiny", "--limit", "2"])
    assert summary["steps"] == 2 and summary["rollouts"] == 4 and summary["infrastructure_errors"] == 0
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines if "reward" in x] == [1, 2]
    assert all("rewards/ClawGymEnv/mean" in x for x in lines if "reward" in x)
    assert_nothing_new(before)
