"""The local executor: each trial runs in a worker thread of this process, with local sandboxes;
its files are written behind (`clawgym.run.writer`) once it ended.

Agents, sandboxes and model clients are blocking code, so a trial's work happens in a thread;
what the asyncio runner adds is scheduling. A trial that passes its timeout is cancelled
(its sandbox closed, its model calls and verifier stopped) and recorded at once as `error`; the
thread finishes its clean-up in the background and its late result is discarded.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from ... import trial_controls as control
from ...trial_controls import Controls, Slots
from ..trial import Trial, TrialOutcome, error_record, run_trial
from ..writer import WRITER
from ...compile.prepared import PREPARED
from ...sandbox.host import drain_later
from ...verify import connection as verifier_connection

if TYPE_CHECKING:
    from ..plan import RunPlan

SPARE_THREADS = 16  # room for timed-out trials that are still cleaning up
LINGER_S = 30.0  # how long closing waits for cancelled trials to clean up


class ThreadExecutor:
    """Runs trials in a thread pool; caps live sandboxes and model requests across them."""

    def __init__(self, plan: "RunPlan"):
        self.plan = plan
        self.sandboxes = Slots(plan.max_sandboxes or plan.concurrency)
        self.model_requests = Slots(plan.max_model_requests)
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, plan.concurrency) + SPARE_THREADS, thread_name_prefix="clawgym-trial"
        )
        self._live: dict[Future, Controls] = {}
        self._shared = plan.shares_inputs()
        verifier_connection.start()

    async def run(
        self, trial: Trial, tries: int, timeout: float, ended: Callable[[], None] | None = None
    ) -> TrialOutcome:
        controls = Controls(control.CancelToken(), self.sandboxes, self.model_requests)
        future = self._pool.submit(self._call, trial, tries, controls)
        self._live[future] = controls
        future.add_done_callback(lambda f: self._live.pop(f, None))
        waiter = asyncio.wrap_future(future)
        try:
            outcome = await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except asyncio.TimeoutError:
            reason = f"the trial timed out after {timeout:g}s"
            if await asyncio.to_thread(controls.token.cancel, reason):  # closing a sandbox blocks
                outcome = TrialOutcome(error_record(trial, reason, tries=tries, timed_out=True))
            else:
                outcome = await waiter  # it finished just as time ran out: its own outcome stands
        except asyncio.CancelledError:
            threading.Thread(target=controls.token.cancel, args=("the run was interrupted",), daemon=True).start()
            raise
        if ended is not None:
            ended()
        return await asyncio.wrap_future(WRITER.submit(self.plan.out / "trials" / trial.id, outcome))

    def _call(self, trial: Trial, tries: int, controls: Controls) -> TrialOutcome | None:
        plan = self.plan
        with control.use(controls):
            outcome = run_trial(
                trial,
                sandbox_spec=plan.sandbox,
                judge=plan.judge,
                pass_threshold=plan.pass_threshold,
                tries=tries,
                judge_cache=plan.out / "judge_cache",
                shared_inputs=self._shared,
            )
        if not controls.token.finish():
            return None  # timed out or interrupted meanwhile: the runner has recorded it
        return outcome

    async def aclose(self, interrupted: bool = False) -> None:
        """Cancel what still runs (if interrupted) and wait, bounded, for threads to clean up."""
        live = list(self._live.items())
        reason = "the run was interrupted" if interrupted else "the run ended"
        await asyncio.gather(*(asyncio.to_thread(c.token.cancel, reason) for _, c in live))
        if live:
            await asyncio.wait([asyncio.wrap_future(f) for f, _ in live], timeout=LINGER_S)
        self._pool.shutdown(wait=False, cancel_futures=True)
        await asyncio.to_thread(WRITER.close)
        if not [f for f, _ in live if not f.done()]:
            PREPARED.clear()  # no trial still copies from them
        drain_later()
