"""The Ray executor on a cluster of two local worker nodes started by the test: caps on live
sandboxes and model requests hold across the whole cluster (one limiter actor), and a node that
lacks the task's grading files gets them from the driver."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'clawgym[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head that runs no trials and two worker nodes with 2 CPUs each."""
    try:
        made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        nodes = [made.add_node(num_cpus=2) for _ in range(2)]
        made.wait_for_nodes()
    except Exception as exc:  # noqa: BLE001 - no Ray cluster here: say why
        pytest.skip(f"cannot start a local Ray cluster: {exc}")
    try:
        yield made, nodes
    finally:
        if ray.is_initialized():
            ray.shutdown()
        made.shutdown()


def _plan(out: Path, spec_file: Path, seeds: int, agent: dict, **caps):
    from clawgym.compile.compiler import compile_task, load_task_spec
    from clawgym.run.plan import RunPlan
    from clawgym.run.trial import Trial

    spec = load_task_spec(spec_file)
    trials = [Trial(compile_task(spec, s), agent) for s in range(seeds)]
    return RunPlan(name="cluster", trials=trials, out=out, concurrency=8, retries=0, executor={"type": "ray"}, **caps)


def _run(plan, address):
    from clawgym.run.executors.ray import RayExecutor
    from clawgym.run.runner import TRIALS

    async def go():
        executor = RayExecutor(plan, address=address, num_cpus=0.25)
        try:
            outcomes = await asyncio.gather(*(executor.run(t, 1, 120) for t in plan.trials))
            return outcomes, executor.limiter_stats()
        finally:
            await executor.aclose()

    (plan.out / TRIALS).mkdir(parents=True, exist_ok=True)
    return asyncio.run(go())


def test_caps_hold_across_the_cluster(cluster, tmp_path):
    made, _ = cluster
    turns = [
        {
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "input/receipts.csv"}'},
                }
            ]
        },
        "Done.",
    ]
    agent = {"type": "claw", "policy": {"type": "scripted", "turns": turns, "latency_s": 0.5}}
    plan = _plan(
        tmp_path / "run",
        ROOT / "benchmarks" / "fixtures" / "light" / "receipts-total.yaml",
        8,
        agent,
        max_sandboxes=3,
        max_model_requests=2,
    )
    t0 = time.monotonic()
    outcomes, stats = _run(plan, made.address)
    wall = time.monotonic() - t0
    records = [o.record for o in outcomes]
    assert all(r.status == "failed" for r in records), [r.error for r in records]  # ran, answered, graded
    assert len({r.extra["ray_node"] for r in records}) == 2, "both worker nodes ran trials"
    assert stats["most"] == {"sandboxes": 3, "model_requests": 2}
    assert stats["held"] == {"sandboxes": 0, "model_requests": 0}  # every slot came back
    assert wall >= 8 * 2 * 0.5 / 2  # 16 requests of 0.5 s, two at a time across the cluster


def test_slots_of_a_holder_that_died_come_back_and_live_holders_keep_theirs(cluster, tmp_path):
    """A holder that took the one sandbox slot and died (it never renews) loses it after the lease;
    trials that hold the slot for longer than the lease keep it (their process renews it)."""
    from clawgym.run.executors.ray import RayExecutor
    from clawgym.run.runner import TRIALS

    made, _ = cluster
    turns = [
        {
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "exec", "arguments": '{"command": "true"}'}}
            ]
        }
        for i in range(3)
    ] + ["Done."]
    agent = {"type": "claw", "policy": {"type": "scripted", "turns": turns, "latency_s": 0.6}}
    plan = _plan(
        tmp_path / "run", ROOT / "benchmarks" / "fixtures" / "light" / "receipts-total.yaml", 3, agent, max_sandboxes=1
    )
    plan.executor = {"type": "ray", "slot_lease_s": 1.5}
    (plan.out / TRIALS).mkdir(parents=True)

    async def go():
        executor = RayExecutor(plan, address=made.address, num_cpus=0.25, slot_lease_s=1.5)
        assert ray.get(executor._limiter.acquire.remote("sandboxes", "a-worker-that-died"))
        try:
            outcomes = await asyncio.gather(*(executor.run(t, 1, 120) for t in plan.trials))
            return outcomes, executor.limiter_stats()
        finally:
            await executor.aclose()

    outcomes, stats = asyncio.run(go())
    assert all(o.record.status == "failed" for o in outcomes), [o.record.error for o in outcomes]
    assert stats["reclaimed"] == {"sandboxes": 1}  # the dead holder's slot, and only that
    assert stats["most"] == {"sandboxes": 1} and stats["held"] == {"sandboxes": 0}
    held_for = [o.record.timings["agent_s"] for o in outcomes]
    assert min(held_for) > 4 * 0.6 > 1.5  # each trial held the slot past the lease


def test_a_node_without_the_task_files_gets_them_from_the_driver(cluster, tmp_path):
    made, _ = cluster
    light = tmp_path / "light"
    shutil.copytree(ROOT / "benchmarks" / "fixtures" / "light", light)
    plan = _plan(tmp_path / "run", light / "receipts-total-graded.yaml", 2, {"type": "oracle"})
    from clawgym.run.executors.ray import RayExecutor
    from clawgym.run.runner import TRIALS

    (plan.out / TRIALS).mkdir(parents=True)

    async def go():
        executor = RayExecutor(plan, address=made.address, num_cpus=0.25)  # packs the graded files
        shutil.rmtree(light)  # ... which no node has any more
        try:
            return await asyncio.gather(*(executor.run(t, 1, 120) for t in plan.trials))
        finally:
            await executor.aclose()

    outcomes = asyncio.run(go())
    for outcome in outcomes:
        rec = outcome.record
        assert rec.status == "passed", (rec.error, rec.verdict)
        checks = rec.verdict.checks
        assert all(c.score == 1.0 for c in checks) and any("check_total.py" in c.name for c in checks), checks
