"""The Ray executor: each trial is a Ray task on an existing cluster; this process writes results.

Every node runs its trials in its own local sandboxes (bubblewrap, or Docker if the run asks
for it), so each node needs clawgym installed, the same version, and the task files at the same
paths (a shared checkout) when checks call scripts next to their spec. The outcome (record,
trajectory, diff) comes back to the driver, which writes it into the results folder like the local
executor does, so resume and reports are the same. A trial past its timeout is cancelled on its
node (sandbox closed, verifier killed); the driver force-cancels it if the node does not answer.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from ... import trial_controls as control
from ...trial_controls import Controls, Slots
from ...errors import ClawgymError, PrerequisiteError
from ..trial import Trial, TrialOutcome, error_record, run_trial, write_outcome

if TYPE_CHECKING:
    from ..plan import RunPlan

START_HINT = ("start one with 'ray start --head' (and 'ray start --address HEAD:6379' on the other machines), "
              "or set executor.address / --ray-address")
GRACE_S = 60.0  # the driver waits this long past the timeout for the node's own cancellation

_slots_lock = threading.Lock()
_worker_slots: dict[tuple[str, int | None], Slots] = {}


def _process_slots(kind: str, limit: int | None) -> Slots:
    """Caps shared by every trial of one Ray worker process."""
    with _slots_lock:
        return _worker_slots.setdefault((kind, limit), Slots(limit))


def ray_trial(trial: Trial, tries: int, timeout: float, settings: dict[str, Any]) -> TrialOutcome:
    """Body of the Ray task: run one trial on this node, cancelling it at `timeout`."""
    controls = Controls(control.CancelToken(), _process_slots("sandboxes", settings["max_sandboxes"]),
                        _process_slots("model_requests", settings["max_model_requests"]))
    reason = f"the trial timed out after {timeout:g}s"
    timer = threading.Timer(timeout, controls.token.cancel, args=(reason,))
    timer.daemon = True
    timer.start()
    try:
        with control.use(controls):
            outcome = run_trial(trial, sandbox_spec=settings["sandbox"], judge=settings["judge"],
                                pass_threshold=settings["pass_threshold"], tries=tries,
                                judge_cache=settings["judge_cache"])
    finally:
        timer.cancel()
    if not controls.token.finish():
        outcome = TrialOutcome(error_record(trial, reason, tries=tries, timed_out=True))
    outcome.record.extra["node"] = os.uname().nodename
    return outcome


def _probe(address: str) -> None:
    """Fail fast (Ray itself retries for minutes) when a HOST:PORT address has nothing listening."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise ClawgymError(f"cannot connect to a Ray cluster at {address!r}: {e}", key="executor.address",
                           hint=START_HINT) from None


class RayExecutor:
    """Submits trials to a Ray cluster (`address`: `auto`, $RAY_ADDRESS, or `ray://host:port`)."""

    def __init__(self, plan: "RunPlan", address: str | None = None, num_cpus: float = 0.25):
        try:
            import ray
        except ImportError:
            raise PrerequisiteError("the ray executor needs Ray",
                                    hint="pip install 'clawgym[ray]' on this machine and on every node") from None
        self.ray, self.plan = ray, plan
        address = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            _probe(address)
            try:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ClawgymError(f"cannot connect to a Ray cluster at {address!r}: {e}", key="executor.address",
                                   hint=START_HINT) from None
        self._remote = ray.remote(ray_trial).options(num_cpus=float(num_cpus), max_retries=0)
        self._settings = {"sandbox": plan.sandbox, "judge": plan.judge, "pass_threshold": plan.pass_threshold,
                          "judge_cache": (plan.out / "judge_cache").resolve(),
                          "max_sandboxes": plan.max_sandboxes, "max_model_requests": plan.max_model_requests}
        self._live: set[Any] = set()

    async def run(self, trial: Trial, tries: int, timeout: float) -> TrialOutcome:
        ray = self.ray
        ref = self._remote.remote(trial, tries, timeout, self._settings)
        self._live.add(ref)
        try:
            outcome = await asyncio.wait_for(ref, timeout + GRACE_S)
        except asyncio.TimeoutError:
            ray.cancel(ref, force=True)
            outcome = TrialOutcome(error_record(trial, f"the trial timed out after {timeout:g}s and its Ray "
                                                       "node did not answer", tries=tries, timed_out=True))
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        except ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, PrerequisiteError):
                raise e.cause from None
            outcome = TrialOutcome(error_record(trial, f"the Ray task failed: {e.cause!r}", tries=tries))
        except ray.exceptions.RayError as e:  # a node or worker died, the task was cancelled...
            outcome = TrialOutcome(error_record(trial, f"Ray lost the trial: {type(e).__name__}: "
                                                       f"{str(e).splitlines()[0] if str(e) else ''}", tries=tries))
        finally:
            self._live.discard(ref)
        await asyncio.to_thread(write_outcome, self.plan.out / "trials" / trial.id, outcome)
        return outcome

    async def aclose(self, interrupted: bool = False) -> None:
        for ref in list(self._live):
            self.ray.cancel(ref, force=True)
        if self._owns_connection:
            self.ray.shutdown()
