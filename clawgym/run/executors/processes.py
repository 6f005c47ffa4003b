"""The local executor with worker processes: trials spread over a few processes of this machine.

With hundreds of trials in flight, one process's share of the work (agent turns, sandbox set-up
and tear-down, records) is bound by its one core and its interpreter lock. Here the runner's
process only schedules: it sends each trial to the least busy worker process
(`process_worker.py`), which runs it in a thread, writes its files into the same results folder and
answers with the record. Resume, progress, retries and timeouts work as with threads; the caps on
live sandboxes and model requests are semaphores every worker shares, so they hold across them, and
each worker keeps count of the slots it holds where the runner can read it, so that the slots of a
worker that dies are given back.

A worker that dies (killed, out of memory) takes only its unfinished trials with it: they are
recorded as `error` (retried like any infrastructure error) and a new worker takes its place.
Workers are forked when the executor starts, before any trial runs (so they share this process's
imports, registered plugins and compiled tasks, start in milliseconds and need no `__main__`
guard), and never run anything this process left half-done.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ...errors import ClawgymError, PrerequisiteError
from ...records.trial_record import TrialRecord
from ...trial_controls import Ledger, SharedCounts, shared_semaphore
from ..trial import Trial, TrialOutcome, error_record, write_outcome
from . import process_worker

if TYPE_CHECKING:
    from ..plan import RunPlan

GRACE_S = 60.0  # the runner waits this long past a trial's timeout for its worker's own answer
STOP_WAIT_S = process_worker.LINGER_S + 10.0


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class _Handle:
    """The runner's end of one worker process."""

    process: Any
    conn: Any
    pending: dict[int, tuple[asyncio.Future, Trial, int]] = field(default_factory=dict)
    ended: dict[int, Callable[[], None]] = field(default_factory=dict)  # told when a trial ended
    running: set[int] = field(default_factory=set)  # sent and not yet ended (its files may come later)
    alive: bool = True
    reader: threading.Thread | None = None
    slot: int = 0  # its cells in the executor's ledger of held slots


class ProcessExecutor:
    """Runs trials in `processes` worker processes; caps live sandboxes and model requests across them."""

    def __init__(self, plan: "RunPlan", processes: int):
        self.plan = plan
        self.processes = max(1, int(processes))
        self._loop = asyncio.get_running_loop()
        self._ctx = multiprocessing.get_context("fork")
        sandboxes = plan.max_sandboxes or plan.concurrency
        self._sems = (shared_semaphore(sandboxes, self._ctx), shared_semaphore(plan.max_model_requests, self._ctx))
        self._held = SharedCounts(2 * self.processes, self._ctx)  # slots each worker holds (trial_controls.Ledger)
        self._settings = {
            "sandbox": plan.sandbox,
            "judge": plan.judge,
            "pass_threshold": plan.pass_threshold,
            "out": str(plan.out.resolve()),
            "max_sandboxes": sandboxes,
            "max_model_requests": plan.max_model_requests,
            "shared_inputs": plan.shares_inputs(),
            "threads": max(1, plan.concurrency),  # made as needed: any share of the trials may land on one
        }
        self._keys = itertools.count(1)
        self._workers: list[_Handle] = []
        for handle in [self._fork(slot) for slot in range(self.processes)]:
            self._workers.append(handle)
            self._listen(handle)

    def _fork(self, slot: int) -> _Handle:
        ours, theirs = self._ctx.Pipe(duplex=True)
        others = [h.conn.fileno() for h in self._workers if h.alive] + [ours.fileno()]
        ledgers = [self._ledger(slot, kind) for kind in (0, 1)]
        process = self._ctx.Process(
            target=process_worker.serve,
            name="clawgym-worker",
            args=(theirs, self._settings, *self._sems, others, ledgers),
        )
        process.start()
        theirs.close()
        return _Handle(process, ours, slot=slot)

    def _ledger(self, slot: int, kind: int) -> Ledger:
        """The count of sandbox (kind 0) or model-request (kind 1) slots held by worker `slot`."""
        return Ledger(self._held, 2 * slot + kind)

    def _listen(self, handle: _Handle) -> None:
        handle.reader = threading.Thread(target=self._read, args=(handle,), name="clawgym-worker-reader", daemon=True)
        handle.reader.start()

    def _read(self, handle: _Handle) -> None:
        """Forward a worker's answers to the event loop; tell it when the worker is gone."""
        while True:
            try:
                message = handle.conn.recv()
            except (EOFError, OSError):
                break
            self._loop.call_soon_threadsafe(self._answer, handle, message)
        try:
            self._loop.call_soon_threadsafe(self._lost, handle)
        except RuntimeError:
            pass  # the loop is closed: the run is over

    def _answer(self, handle: _Handle, message: tuple) -> None:
        kind, key = message[0], message[1]
        handle.running.discard(key)
        ended = handle.ended.pop(key, None)
        if ended is not None:
            ended()  # the trial is over (its files may still be being written): its slot is free
        if kind == "ended":
            return
        entry = handle.pending.pop(key, None)
        if entry is None or entry[0].done():
            return
        future, trial, tries = entry
        if kind == "done":  # the worker wrote the trial's files
            future.set_result((TrialOutcome(TrialRecord.from_dict(message[2])), False))
        elif kind == "prerequisite":
            future.set_exception(PrerequisiteError(message[2], hint=message[3]))
        else:
            future.set_exception(ClawgymError(f"trial {trial.id} failed in its worker process:\n{message[2]}"))

    def _lost(self, handle: _Handle) -> None:
        """A worker ended: its unfinished trials are `error` (retried); a new worker takes its place."""
        if not handle.alive:
            return
        handle.alive = False
        handle.process.join(1)
        code = handle.process.exitcode
        for future, trial, tries in handle.pending.values():
            if not future.done():
                reason = f"the worker process running the trial died (exit code {code})"
                future.set_result((TrialOutcome(error_record(trial, reason, tries=tries)), True))
        handle.pending.clear()
        handle.ended.clear()
        handle.running.clear()
        for kind, semaphore in enumerate(self._sems):  # what it held is free again, not lost to the run
            if semaphore is not None and not self._closing:
                self._ledger(handle.slot, kind).reclaim(semaphore)
        if handle in self._workers and not self._closing:
            self._workers.remove(handle)
            replacement = self._fork(handle.slot)
            self._workers.append(replacement)
            self._listen(replacement)

    _closing = False

    async def run(
        self, trial: Trial, tries: int, timeout: float, ended: Callable[[], None] | None = None
    ) -> TrialOutcome:
        # the worker with the fewest trials running (not counting those whose files are being written)
        handle = min((w for w in self._workers if w.alive), key=lambda w: len(w.running), default=None)
        if handle is None:
            raise ClawgymError("no worker process is left to run trials")
        key = next(self._keys)
        future: asyncio.Future = self._loop.create_future()
        handle.pending[key] = (future, trial, tries)
        handle.running.add(key)
        if ended is not None:
            handle.ended[key] = ended
        try:
            handle.conn.send(("run", key, trial, tries, timeout))
        except (OSError, ValueError):
            pass  # the worker just died: its reader reports it and the trial becomes `error`
        try:
            outcome, unwritten = await asyncio.wait_for(asyncio.shield(future), timeout + GRACE_S)
        except asyncio.TimeoutError:
            handle.pending.pop(key, None)
            handle.ended.pop(key, None)
            handle.running.discard(key)
            self._send(handle, ("cancel", key, "the worker did not answer"))
            outcome = TrialOutcome(
                error_record(
                    trial,
                    f"the trial timed out after {timeout:g}s and its worker process did not answer",
                    tries=tries,
                    timed_out=True,
                )
            )
            await asyncio.to_thread(write_outcome, self.plan.out / "trials" / trial.id, outcome)
            return outcome
        except asyncio.CancelledError:
            handle.pending.pop(key, None)
            handle.ended.pop(key, None)
            handle.running.discard(key)
            self._send(handle, ("cancel", key, "the run was interrupted"))
            raise
        if unwritten:  # its worker died before writing anything
            await asyncio.to_thread(write_outcome, self.plan.out / "trials" / trial.id, outcome)
        return outcome

    @staticmethod
    def _send(handle: _Handle, message: tuple) -> None:
        try:
            handle.conn.send(message)
        except (OSError, ValueError):
            pass

    async def aclose(self, interrupted: bool = False) -> None:
        """Stop every worker (cancelling what still runs) and wait, bounded, for them to exit."""
        self._closing = True
        reason = "the run was interrupted" if interrupted else "the run ended"
        for handle in self._workers:
            self._send(handle, ("stop", reason))
        await asyncio.gather(*(asyncio.to_thread(self._join, h) for h in self._workers))
        self._held.close()

    @staticmethod
    def _join(handle: _Handle) -> None:
        handle.process.join(STOP_WAIT_S)
        if handle.process.is_alive():
            handle.process.kill()
            handle.process.join(5)
        handle.alive = False
        try:
            handle.conn.close()
        except OSError:
            pass
