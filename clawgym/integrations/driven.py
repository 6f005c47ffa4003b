"""A trial driven from outside, one tool call at a time: the bridge other trainers' environments use.

`DrivenTrial(task)` runs the trial exactly as `clawgym run` does (`clawgym.run.trial.run_trial`:
the task's files in a fresh sandbox, the `claw` agent's tools with their limits and output
truncation, the budgets, the verifier, the rubric judge and the typed outcomes). Only its model is
different: a channel, so each `call(name, arguments)` from the trainer becomes one model turn with
one tool call, and `finish()` the model's final answer. The trial runs on its own thread, so
everything that touches the sandbox happens there, as in a run; the caller only passes messages.

Every live trial is tracked, and `abandon_all()` (also run at interpreter exit) ends them without
grading, so an interrupted trainer leaves no sandbox or work folder behind.
"""

from __future__ import annotations

import atexit
import json
import queue
import threading
import weakref
from pathlib import Path
from typing import Any

from ..agent.claw.loop import tool_error
from ..policy.base import Completion, Policy, PolicyError
from ..records.trial_record import TrialRecord
from ..spec.task import Task

ABANDONED = "the rollout was abandoned before it finished (the trainer moved on or stopped)"
_LIVE: weakref.WeakSet[DrivenTrial] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class _Channel(Policy):
    """The model of a driven trial: each turn is the next action the driver sends."""

    type = "driven"

    def __init__(self, wait_s: float) -> None:
        super().__init__({"type": self.type})
        self.actions: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.results: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.wait_s = wait_s
        self.awaiting_result = False
        self.calls = 0

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        if self.awaiting_result:  # the loop ran the last call: its result is the newest tool message
            self.awaiting_result = False
            self.results.put(("result", last_tool_result(messages)))
        try:
            kind, payload = self.actions.get(timeout=self.wait_s)
        except queue.Empty:
            raise PolicyError(f"the trainer sent no tool call or final answer for {self.wait_s:.0f} s") from None
        if kind == "abandon":
            raise PolicyError(ABANDONED)
        if kind == "final":
            return Completion(message={"role": "assistant", "content": payload}, finish_reason="stop")
        name, arguments = payload
        self.calls += 1
        self.awaiting_result = True
        call = {
            "id": f"call_{self.calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        return Completion(
            message={"role": "assistant", "content": None, "tool_calls": [call]}, finish_reason="tool_calls"
        )


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The content of the newest tool message ('' when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "tool":
            return str(message.get("content") or "")
    return ""


class DrivenTrial:
    """One trial of `task` whose tool calls come from the caller (see the module docstring).

    `agent` holds claw agent options (`max_turns`, `tool_output_chars`, `tools`, ...); `sandbox`
    and `judge` are what a Run spec's `sandbox:` and `judge:` say. `out`, when given, is a folder
    where the trial's files are written as `clawgym run` writes them (record.json, trajectory.json,
    workspace.diff), so rollouts can be read with `clawgym report`; `attempt` numbers the rollouts
    of one instance (trial ids stay unique)."""

    def __init__(
        self,
        task: Task,
        *,
        agent: dict[str, Any] | None = None,
        sandbox: dict[str, Any] | None = None,
        judge: dict[str, Any] | None = None,
        out: Path | None = None,
        label: str = "driven",
        attempt: int = 0,
    ) -> None:
        from ..agent import make_agent
        from ..run.trial import Trial

        self.task = task
        self.record: TrialRecord | None = None
        self.ended = threading.Event()
        seconds = float((task.limits or {}).get("seconds", 600))
        self._channel = _Channel(wait_s=2 * seconds + 60)  # a driver silent this long has gone away
        config = {"type": "claw", "name": label, **(agent or {}), "policy": {"type": self._channel.type}}
        self._agent = make_agent(config)
        self._agent.use_policy(self._channel)
        self._trial = Trial(task, config, attempt)
        self._sandbox, self._judge, self._out = sandbox, judge, out
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"driven-{task.name}", daemon=True)
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._thread.start()

    @property
    def trial_id(self) -> str:
        return self._trial.id

    def _run(self) -> None:
        from ..run.trial import run_trial, write_outcome

        try:
            outcome = run_trial(self._trial, sandbox_spec=self._sandbox, judge=self._judge, agent=self._agent)
            if self._channel.awaiting_result:  # a budget ended the trial right after the last call
                self._channel.results.put(
                    ("result", last_tool_result((outcome.trajectory or {}).get("messages") or []))
                )
            self.record = outcome.record
            if self._out is not None:
                write_outcome(Path(self._out) / "trials" / self.trial_id, outcome)
        except BaseException as exc:  # noqa: BLE001 - reported to the driver as an infrastructure error
            from ..run.trial import error_record

            self.record = error_record(self._trial, f"{type(exc).__name__}: {exc}")
        finally:
            self.ended.set()
            self._channel.results.put(("ended", None))

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call in the trial and return what the model would see (a JSON error text
        when the tool fails, or when the trial has already ended, e.g. its turn budget is spent)."""
        with self._lock:
            if not self.ended.is_set():
                self._channel.actions.put(("call", (name, {k: v for k, v in arguments.items() if v is not None})))
                kind, payload = self._channel.results.get()
                if kind == "result":
                    return str(payload)
            record = self.record
        why = (record.note or record.error or record.outcome) if record else "ended"
        return tool_error(name, f"the task has ended ({why}); no more tool calls run")

    def finish(self, final_message: str = "") -> TrialRecord:
        """End the agent's turn with `final_message`, wait for the verdict and return the record."""
        with self._lock:
            self._end(("final", final_message))
        assert self.record is not None
        return self.record

    def abandon(self) -> None:
        """End the trial without grading it (its sandbox and work folder are removed)."""
        self._end(("abandon", None))

    def _end(self, action: tuple[str, Any]) -> None:
        """Send the trial its last action (unless it already ended) and wait for its thread."""
        if not self.ended.is_set():
            self._channel.actions.put(action)
        self.ended.wait()
        self._thread.join()
        with _LIVE_LOCK:
            _LIVE.discard(self)


def abandon_all() -> int:
    """Abandon every driven trial still running in this process; returns how many there were."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for trial in live:
        trial.abandon()
    return len(live)


atexit.register(abandon_all)
