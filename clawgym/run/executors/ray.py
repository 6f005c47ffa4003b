"""The Ray executor: each trial is a Ray task on an existing cluster; this process writes results.

Every node runs its trials in its own local sandboxes (bubblewrap, or Docker if the run asks
for it), so each node needs clawgym installed, the same version. The caps on live sandboxes and
model requests hold across the whole cluster (a limiter actor, `ray_support.py`), and the files
checks grade with (scripts next to the spec) are shipped by the driver to nodes that lack them. The outcome (record,
trajectory, diff) comes back to the driver, which writes it into the results folder like the local
executor does, so resume and reports are the same. A trial past its timeout is cancelled on its
node (sandbox closed, verifier killed); the driver force-cancels it if the node does not answer.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from typing import TYPE_CHECKING, Any, Callable

from ... import trial_controls as control
from ...trial_controls import Controls, Slots
from ...engines.shared import URLS_VAR
from ...errors import ClawgymError, PrerequisiteError
from ..trial import Trial, TrialOutcome, error_record, run_trial
from ..writer import WRITER
from .ray_support import LEASE_S, ClusterSlot, local_task, make_limiter, pack_task_files

if TYPE_CHECKING:
    from ..plan import RunPlan

START_HINT = (
    "start one with 'ray start --head' (and 'ray start --address HEAD:6379' on the other machines), "
    "or set executor.address / --ray-address"
)
GRACE_S = 60.0  # the driver waits this long past the timeout for the node's own cancellation

_bundles_lock = threading.Lock()
_bundles: dict[str, dict] = {}


def _task_files(ref: Any) -> dict:
    """The driver's packed task files (fetched once per worker process)."""
    import ray

    with _bundles_lock:
        key = ref.hex()
        if key not in _bundles:
            _bundles[key] = ray.get(ref)
        return _bundles[key]


def ray_trial(trial: Trial, tries: int, timeout: float, settings: dict[str, Any]) -> TrialOutcome:
    """Body of the Ray task: run one trial on this node, cancelling it at `timeout`. The caps are the
    run's limiter actor, so they hold across every node; task files missing here come from the driver."""
    limiter = settings["limiter"]
    controls = Controls(
        control.CancelToken(),
        Slots(settings["max_sandboxes"], ClusterSlot(limiter, "sandboxes", settings["lease_s"])),
        Slots(settings["max_model_requests"], ClusterSlot(limiter, "model_requests", settings["lease_s"])),
    )
    task = local_task(trial.task, _task_files(settings["task_files"]).get(trial.task.task_dir))
    if task is not trial.task:
        trial = Trial(task, trial.agent, trial.attempt)
    reason = f"the trial timed out after {timeout:g}s"
    timer = threading.Timer(timeout, controls.token.cancel, args=(reason,))
    timer.daemon = True
    timer.start()
    try:
        with control.use(controls):
            outcome = run_trial(
                trial,
                sandbox_spec=settings["sandbox"],
                judge=settings["judge"],
                pass_threshold=settings["pass_threshold"],
                tries=tries,
                judge_cache=settings["judge_cache"],
            )
    finally:
        timer.cancel()
    if not controls.token.finish():
        outcome = TrialOutcome(error_record(trial, reason, tries=tries, timed_out=True))
    outcome.record.extra["node"] = os.uname().nodename
    try:
        import ray

        outcome.record.extra["ray_node"] = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside a Ray worker (tests call this directly)
        pass
    return outcome


def _probe(address: str) -> None:
    """Fail fast (Ray itself retries for minutes) when a HOST:PORT address has nothing listening."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise ClawgymError(
            f"cannot connect to a Ray cluster at {address!r}: {e}", key="executor.address", hint=START_HINT
        ) from None


class RayExecutor:
    """Submits trials to a Ray cluster (`address`: `auto`, $RAY_ADDRESS, or `ray://host:port`)."""

    def __init__(
        self, plan: "RunPlan", address: str | None = None, num_cpus: float = 0.25, slot_lease_s: float = LEASE_S
    ):
        try:
            import ray
        except ImportError:
            raise PrerequisiteError(
                "the ray executor needs Ray", hint="pip install 'clawgym[ray]' on this machine and on every node"
            ) from None
        self.ray, self.plan = ray, plan
        address = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            _probe(address)
            try:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ClawgymError(
                    f"cannot connect to a Ray cluster at {address!r}: {e}", key="executor.address", hint=START_HINT
                ) from None
        options: dict = {"num_cpus": float(num_cpus), "max_retries": 0}
        if os.environ.get(URLS_VAR):  # the run's engines: trials use them, never start their own
            options["runtime_env"] = {"env_vars": {URLS_VAR: os.environ[URLS_VAR]}}
        self._remote = ray.remote(ray_trial).options(**options)
        self._limiter = make_limiter(
            ray, {"sandboxes": plan.max_sandboxes, "model_requests": plan.max_model_requests}, slot_lease_s
        )
        self._settings = {
            "sandbox": plan.sandbox,
            "judge": plan.judge,
            "pass_threshold": plan.pass_threshold,
            "judge_cache": (plan.out / "judge_cache").resolve(),
            "max_sandboxes": plan.max_sandboxes,
            "max_model_requests": plan.max_model_requests,
            "limiter": self._limiter,
            "lease_s": float(slot_lease_s),
            "task_files": ray.put(pack_task_files(plan.tasks)),
        }
        self._live: set[Any] = set()

    async def run(
        self, trial: Trial, tries: int, timeout: float, ended: Callable[[], None] | None = None
    ) -> TrialOutcome:
        """Run on the cluster; the files are written here, behind (`clawgym.run.writer`)."""
        ray = self.ray
        ref = self._remote.remote(trial, tries, timeout, self._settings)
        self._live.add(ref)
        try:
            outcome = await asyncio.wait_for(ref, timeout + GRACE_S)
        except asyncio.TimeoutError:
            ray.cancel(ref, force=True)
            outcome = TrialOutcome(
                error_record(
                    trial,
                    f"the trial timed out after {timeout:g}s and its Ray node did not answer",
                    tries=tries,
                    timed_out=True,
                )
            )
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        except ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, PrerequisiteError):
                raise e.cause from None
            outcome = TrialOutcome(error_record(trial, f"the Ray task failed: {e.cause!r}", tries=tries))
        except ray.exceptions.RayError as e:  # a node or worker died, the task was cancelled...
            outcome = TrialOutcome(
                error_record(
                    trial,
                    f"Ray lost the trial: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                    tries=tries,
                )
            )
        finally:
            self._live.discard(ref)
        if ended is not None:
            ended()
        return await asyncio.wrap_future(WRITER.submit(self.plan.out / "trials" / trial.id, outcome))

    def limiter_stats(self) -> dict[str, Any]:
        """What the cluster-wide limiter counted: limits, slots held now, most held at once."""
        return self.ray.get(self._limiter.stats.remote())

    async def aclose(self, interrupted: bool = False) -> None:
        for ref in list(self._live):
            self.ray.cancel(ref, force=True)
        self.ray.kill(self._limiter)
        await asyncio.to_thread(WRITER.close)
        if self._owns_connection:
            self.ray.shutdown()
