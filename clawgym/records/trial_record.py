"""The trial record: what one trial produced, as the run stage writes it to `record.json` and as the
report, the exporters, the trainer and the benchmark read it.

`TrialRecord` is typed and versioned (`format`). It reads every record this package ever wrote
(`clawgym.trial/v1`, whose fields are the same minus `usage`) and writes `clawgym.trial/v2`. Keys
it does not know (a newer writer's, or a plugin's) are kept in `extra` and written back unchanged.
For readers not yet moved to attributes a record also reads like the dict it was
(`record["reward"]`, `record.get("status")`), read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterator, Mapping

from .outcomes import evaluation_rules, normalize

RECORD_FORMAT = "clawgym.trial/v2"
READS = ("clawgym.trial/v1", "clawgym.trial/v2")
STATUSES = ("passed", "failed", "error")


@dataclass(frozen=True)
class Usage:
    """Model use of the agent in one trial: calls and tokens (None where the backend reported none)."""

    model_calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    @classmethod
    def from_trajectory(cls, usage: Mapping[str, Any] | None, turns: list[Mapping[str, Any]]) -> "Usage":
        """A trajectory's usage: its own totals where it has them, else the sum over its turns
        (a turn that reports only `total_tokens` counts as completion tokens)."""
        usage = usage if isinstance(usage, Mapping) else {}
        summed = cls.from_turns(turns)
        prompt = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else summed.prompt_tokens
        completion = (
            usage.get("completion_tokens")
            if isinstance(usage.get("completion_tokens"), int)
            else summed.completion_tokens
        )
        return cls(len(turns), prompt, completion)

    @classmethod
    def from_turns(cls, turns: list[Mapping[str, Any]]) -> "Usage":
        """Sum the `usage` of a trajectory's turns."""
        prompt = completion = 0
        seen_prompt = seen_completion = False
        for turn in turns:
            usage = turn.get("usage") or {}
            if isinstance(usage.get("prompt_tokens"), int):
                prompt, seen_prompt = prompt + usage["prompt_tokens"], True
            if isinstance(usage.get("completion_tokens"), int):
                completion, seen_completion = completion + usage["completion_tokens"], True
            elif isinstance(usage.get("total_tokens"), int):
                completion, seen_completion = completion + usage["total_tokens"] - usage.get("prompt_tokens", 0), True
        return cls(len(turns), prompt if seen_prompt else None, completion if seen_completion else None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_calls": self.model_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Usage | None":
        if not d:
            return None
        return cls(int(d.get("model_calls") or 0), d.get("prompt_tokens"), d.get("completion_tokens"))


@dataclass(frozen=True)
class CheckOutcome:
    """One check's result inside a recorded verdict."""

    name: str
    score: float
    passed: bool
    reason: str = ""
    gate: bool = False
    weight: float = 1.0
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CheckOutcome":
        return cls(
            str(d.get("name") or d.get("type") or "?"),
            float(d.get("score") or 0.0),
            bool(d.get("passed")),
            str(d.get("reason") or ""),
            bool(d.get("gate")),
            float(d.get("weight", 1.0) or 0.0),
            dict(d),
        )


@dataclass(frozen=True)
class RecordedVerdict:
    """The verifier's verdict as recorded: reward, pass, the gate that failed, each check."""

    reward: float
    passed: bool
    gate_failed: str | None = None
    error: str | None = None
    checks: tuple[CheckOutcome, ...] = ()
    code_reward: float | None = None
    rubric_score: float | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "RecordedVerdict | None":
        if not d:
            return None
        return cls(
            float(d.get("reward") or 0.0),
            bool(d.get("passed")),
            d.get("gate_failed"),
            d.get("error"),
            tuple(CheckOutcome.from_dict(r) for r in d.get("results") or []),
            d.get("code_reward"),
            d.get("rubric_score"),
            dict(d),
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass
class TrialRecord:
    """One trial's record. `status` is `passed`, `failed` or `error`; `reward` is None for `error`."""

    trial_id: str
    task: dict[str, Any]
    agent: dict[str, Any]
    status: str = "error"
    reward: float | None = None
    verdict: RecordedVerdict | None = None
    error: str | None = None
    attempt: int = 0
    tries: int = 1
    outcome: str | None = None  # how the trial ended: one word of clawgym.records.outcomes (set on read)
    note: str | None = None  # the agent's own error text on a non-error trial
    usage: Usage | None = None
    timings: dict[str, float] = field(default_factory=dict)
    finished_at: float | None = None
    format: str = RECORD_FORMAT
    extra: dict[str, Any] = field(default_factory=dict)  # judge, proxy_refused, traceback, ... and unknown keys

    # -- the typed view ---------------------------------------------------------------------
    @property
    def task_name(self) -> str:
        return str(self.task.get("name", ""))

    @property
    def task_hash(self) -> str:
        return str(self.task.get("hash", ""))

    @property
    def seed(self) -> int | None:
        return self.task.get("seed")

    @property
    def category(self) -> str:
        return str(self.task.get("category") or "")

    @property
    def agent_name(self) -> str:
        return str(self.agent.get("name") or self.agent.get("type") or "?")

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def is_error(self) -> bool:
        return self.status == "error"

    @property
    def ended(self) -> str:
        """The trial's outcome in the contract's vocabulary (records of older versions mapped)."""
        return normalize(self.outcome, status=self.status, error=self.error)

    def counted(self, rules: Mapping[str, str] | None = None) -> tuple[float, bool] | None:
        """(reward, passed) as evaluation counts this trial under `rules` (outcome -> score |
        exclude | retry; the defaults when None), or None when its outcome is excluded. An
        ungraded trial whose outcome is scored counts as reward 0, not passed."""
        rule = (rules or evaluation_rules()).get(self.ended, "score")
        if rule != "score":
            return None
        if self.is_error or self.reward is None:
            return 0.0, False
        return float(self.reward), self.passed

    # -- files ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of record.json (keys in a stable order; `extra` after the known ones)."""
        out: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "trial_id": self.trial_id,
            "task": self.task,
            "agent": self.agent,
            "attempt": self.attempt,
            "tries": self.tries,
            "status": self.status,
            "reward": self.reward,
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
            "error": self.error,
        }
        out["outcome"] = self.ended
        if self.note is not None or self.status != "error":
            out["note"] = self.note
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        for key, value in self.extra.items():
            out.setdefault(key, value)
        if self.timings:
            out["timings"] = self.timings
        if self.finished_at is not None:
            out["finished_at"] = self.finished_at
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "record") -> "TrialRecord":
        """Read a record (v1 or v2). Raises ValueError naming `where` for what is not a trial record."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
        fmt = d.get("format", "clawgym.trial/v1")
        if fmt not in READS:
            raise ValueError(f"{where}: format {fmt!r} is not a trial record this version reads ({', '.join(READS)})")
        missing = [k for k in ("trial_id", "task", "status") if k not in d]
        if missing:
            raise ValueError(f"{where}: not a trial record (no {', '.join(missing)})")
        if d["status"] not in STATUSES:
            raise ValueError(f"{where}: status {d['status']!r} is not one of {', '.join(STATUSES)}")
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(
            trial_id=str(d["trial_id"]),
            task=dict(d["task"] or {}),
            agent=dict(d.get("agent") or {}),
            status=d["status"],
            reward=None if d.get("reward") is None else float(d["reward"]),
            verdict=RecordedVerdict.from_dict(d.get("verdict")),
            error=d.get("error"),
            attempt=int(d.get("attempt") or 0),
            tries=int(d.get("tries") or 1),
            outcome=normalize(d.get("outcome"), status=d["status"], error=d.get("error")),
            note=d.get("note"),
            usage=Usage.from_dict(d.get("usage")),
            timings=dict(d.get("timings") or {}),
            finished_at=d.get("finished_at"),
            format=fmt,
            extra={k: v for k, v in d.items() if k not in known},
        )

    # -- read-only mapping view, for readers that still index records by key ----------------
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_dict().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.to_dict()

    def keys(self) -> Any:
        return self.to_dict().keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())


def as_record(rec: "TrialRecord | Mapping[str, Any]") -> TrialRecord:
    """A TrialRecord from a record or its dict (what callbacks and older callers hand over)."""
    return rec if isinstance(rec, TrialRecord) else TrialRecord.from_dict(rec)
