"""A worker process of the local process executor (`clawgym.run.executors.processes`).

The runner's process sends trials over a pipe; this process runs each in a thread of its own pool
(agents, sandboxes and model clients are blocking code), writes the trial's files into the results
folder itself and answers with the record only. The run's caps are semaphores shared by every
worker, so they hold across processes. A trial that passes its timeout is cancelled here (sandbox
closed, model wait and verifier stopped) and its `error` record written at once; the thread finishes
its clean-up in the background. When the pipe closes (the runner ended, even by kill -9) every live
trial is cancelled and the process exits.

Messages in: ("run", key, trial, tries, timeout), ("cancel", key, reason), ("stop", reason).
Messages out: ("ended", key) when a trial is over (its files are then written behind, see
`clawgym.run.writer`), ("done", key, record dict) once they are written, ("prerequisite", key,
message, hint), ("failed", key, text).
"""

from __future__ import annotations

import heapq
import os
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

from ... import trial_controls as control
from ...errors import PrerequisiteError
from ...trial_controls import Controls, Ledger, Slots
from ..trial import Trial, TrialOutcome, error_record, run_trial
from ..writer import WRITER
from ...compile.prepared import PREPARED
from ...sandbox.host import drain_later
from ...verify import connection as verifier_connection

SPARE_THREADS = 16  # room for timed-out trials that are still cleaning up
LINGER_S = 30.0  # how long stopping waits for cancelled trials to clean up


class Deadlines:
    """One thread that fires callbacks at their deadlines (instead of a timer thread per trial)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._cond = threading.Condition()
        self._count = 0
        self._dropped: set[int] = set()
        threading.Thread(target=self._loop, name="clawgym-deadlines", daemon=True).start()

    def add(self, seconds: float, callback: Callable[[], None]) -> int:
        with self._cond:
            self._count += 1
            heapq.heappush(self._heap, (time.monotonic() + seconds, self._count, callback))
            self._cond.notify()
            return self._count

    def drop(self, handle: int) -> None:
        with self._cond:
            self._dropped.add(handle)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, handle, callback = heapq.heappop(self._heap)
                if handle in self._dropped:
                    self._dropped.discard(handle)
                    continue
            threading.Thread(target=callback, daemon=True).start()  # closing a sandbox blocks


class Worker:
    """The state of one worker process: its thread pool, live trials and the pipe back."""

    def __init__(self, conn: Any, settings: dict[str, Any], sandboxes: Slots, model_requests: Slots):
        self.conn, self.settings = conn, settings
        self.sandboxes, self.model_requests = sandboxes, model_requests
        self.out = Path(settings["out"])
        self.pool = ThreadPoolExecutor(
            max_workers=int(settings["threads"]) + SPARE_THREADS, thread_name_prefix="clawgym-trial"
        )
        self.deadlines = Deadlines()
        self.live: dict[int, Controls] = {}
        self.futures: set[Any] = set()
        self._send_lock = threading.Lock()

    def send(self, message: tuple) -> None:
        try:
            with self._send_lock:
                self.conn.send(message)
        except (OSError, ValueError):
            pass  # the runner is gone: nothing to tell

    def start(self, key: int, trial: Trial, tries: int, timeout: float) -> None:
        controls = Controls(control.CancelToken(), self.sandboxes, self.model_requests)
        self.live[key] = controls
        reason = f"the trial timed out after {timeout:g}s"
        handle = self.deadlines.add(timeout, lambda: self._timed_out(key, trial, tries, controls, reason))
        future = self.pool.submit(self._run, key, trial, tries, controls, handle)
        self.futures.add(future)
        future.add_done_callback(self.futures.discard)

    def _timed_out(self, key: int, trial: Trial, tries: int, controls: Controls, reason: str) -> None:
        if not controls.token.cancel(reason):
            return  # it finished just as time ran out: its own record stands
        outcome = TrialOutcome(error_record(trial, reason, tries=tries, timed_out=True))
        self._write_and_answer(key, trial, outcome)

    def _run(self, key: int, trial: Trial, tries: int, controls: Controls, handle: int) -> None:
        settings = self.settings
        try:
            with control.use(controls):
                outcome = run_trial(
                    trial,
                    sandbox_spec=settings["sandbox"],
                    judge=settings["judge"],
                    pass_threshold=settings["pass_threshold"],
                    tries=tries,
                    judge_cache=self.out / "judge_cache",
                    shared_inputs=settings["shared_inputs"],
                )
        except PrerequisiteError as exc:
            controls.token.finish()
            problem = exc.problems[0]
            self.send(("prerequisite", key, problem.what, problem.hint))
            return
        except BaseException:  # noqa: BLE001 - reported to the runner, which stops the run
            controls.token.finish()
            self.send(("failed", key, traceback.format_exc(limit=8)))
            return
        finally:
            self.deadlines.drop(handle)
            self.live.pop(key, None)
        if controls.token.finish():
            self._write_and_answer(key, trial, outcome)

    def _write_and_answer(self, key: int, trial: Trial, outcome: TrialOutcome) -> None:
        """Tell the runner the trial ended (its slot is free), write its files behind, then answer."""
        self.send(("ended", key))
        WRITER.submit(self.out / "trials" / trial.id, outcome).add_done_callback(
            lambda written: self._written(key, written)
        )

    def _written(self, key: int, written: Any) -> None:
        error = written.exception()
        if error is not None:
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__, limit=8))
            self.send(("failed", key, text))
            return
        self.send(("done", key, written.result().record.to_dict()))

    def cancel(self, key: int, reason: str) -> None:
        controls = self.live.pop(key, None)
        if controls is not None:
            threading.Thread(target=controls.token.cancel, args=(reason,), daemon=True).start()

    def stop(self, reason: str) -> None:
        """Cancel what still runs and wait, bounded, for its clean-up; then release per-process helpers."""
        from ...sandbox.docker import release_client

        for controls in list(self.live.values()):
            threading.Thread(target=controls.token.cancel, args=(reason,), daemon=True).start()
        _, running = wait(list(self.futures), timeout=LINGER_S)
        self.pool.shutdown(wait=False, cancel_futures=True)
        WRITER.close()  # every ended trial's files, written and answered
        verifier_connection.shutdown()
        release_client()
        if not running:
            PREPARED.clear()
        drain_later()


def serve(
    conn: Any, settings: dict[str, Any], sandbox_sem: Any, model_sem: Any, inherited: list[int], ledgers: list[Ledger]
) -> None:
    """Entry point of a worker process (forked by the runner's process): answer the runner's messages
    until it says stop or goes away. `inherited` are the runner's ends of the workers' pipes, closed
    here so that each worker sees its own pipe close when the runner ends; `ledgers` count the
    sandbox and model-request slots it holds (given back by the runner if this process dies)."""
    for fd in inherited:
        try:
            os.close(fd)
        except OSError:
            pass
    PREPARED.forget()
    verifier_connection.start()  # this worker's own verifier server, warming up while trials begin
    worker = Worker(
        conn,
        settings,
        Slots(settings["max_sandboxes"], sandbox_sem, ledgers[0]),
        Slots(settings["max_model_requests"], model_sem, ledgers[1]),
    )
    reason = "the run was interrupted"
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break  # the runner is gone
        if message[0] == "run":
            worker.start(*message[1:])
        elif message[0] == "cancel":
            worker.cancel(*message[1:])
        elif message[0] == "stop":
            reason = message[1]
            break
    worker.stop(reason)
    try:
        conn.close()
    except OSError:
        pass
