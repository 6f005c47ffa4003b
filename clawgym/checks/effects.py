"""Side-effect checks: grade the simulated actions an agent recorded (sent messages, cron jobs).

Model-driven agents record what their simulated tools did in the trajectory under
`side_effects`: {"outbox": [{channel, target, message, turn}], "cron": [job, ...], "web": [...]}.
These checks read `ctx.trajectory` only, never the workspace.

Both checks score the same way: every recorded item that passes the filters gets the fraction
of its criteria met; the check scores the mean of the best `count` items (missing ones count 0),
and 0 if more than `max_count` items meet every criterion.
"""

from __future__ import annotations

from typing import Any

from ..registry import register
from .base import Check, CheckContext, CheckFailure, as_list, clip, short, strings
from .text import NUMBERS_DOC, fraction_found

_COUNT = {
    "type": "integer",
    "minimum": 1,
    "default": 1,
    "description": "Minimum number of items that must meet every criterion.",
}
_MAX_COUNT = {
    "type": "integer",
    "minimum": 0,
    "description": "Maximum number of items meeting every criterion (0 = must not happen).",
}
_CASE = {"type": "boolean", "default": False, "description": "Compare `contains` strings case-sensitively."}


def side_effects(ctx: CheckContext, kind: str) -> list[dict[str, Any]]:
    """The recorded side effects of one kind (`outbox`, `cron`, `web`); CheckFailure without a trajectory."""
    traj = ctx.trajectory
    if not isinstance(traj, dict):
        raise CheckFailure("no trajectory was recorded: side-effect checks need an agent run")
    effects = traj.get("side_effects") or {}
    items = effects.get(kind) if isinstance(effects, dict) else None
    return [i for i in (items or []) if isinstance(i, dict)]


def _fold(text: Any, case_sensitive: bool) -> str:
    text = " ".join(str(text).split())
    return text if case_sensitive else text.casefold()


def _text_problems(text: str, contains: list, case_sensitive: bool) -> tuple[int, list[str]]:
    """(number of criteria, problems) for required substrings in a cron job's text."""
    hay = _fold(text, case_sensitive)
    return len(contains), [f"missing {short(s, 50)}" for s in contains if _fold(s, case_sensitive) not in hay]


def _score_items(scored: list[tuple[float, list[str], str]], lo: int, hi: int | None, what: str, filters: str) -> tuple:
    """Combine per-item (score, problems, label) into the check's (score, reason, details)."""
    full = [s for s in scored if s[0] >= 1 - 1e-9]
    lo = lo if hi is None else min(lo, hi)
    details = {"candidates": len(scored), "matching": len(full)}
    if hi is not None and len(full) > hi:
        return 0.0, f"{len(full)} {what}{filters} meet every criterion, at most {hi} allowed", details
    if not scored:
        if lo == 0:
            return 1.0, f"no {what}{filters}, as required", details
        return 0.0, f"no {what}{filters}", details
    best = sorted(scored, key=lambda s: -s[0])
    top = [s[0] for s in best[:lo]] + [0.0] * max(0, lo - len(best))
    score = sum(top) / len(top) if top else 1.0
    if len(full) >= lo:
        return (
            score,
            f"{len(full)} {what}{filters} meet every criterion"
            + (f" (at most {hi} allowed)" if hi is not None else ""),
            details,
        )
    near = best[0]
    why = "; ".join(near[1][:3]) or "ok"
    return score, (f"{len(full)}/{lo} {what}{filters} meet every criterion; closest ({near[2]}): {why}"), details


@register("check", "message_sent")
class MessageSent(Check):
    """The agent sent a message (through the simulated `message` tool) matching the criteria.

    `channel` and `target` filter the outbox; each remaining message scores the fraction of
    `contains`/`not_contains` strings it satisfies, matched as in `text_contains` (whitespace
    collapsed): an item that is only a number is a whole number of that value, in digits or in
    words ("6" is found in "There are six blocked items", not in "16" or "2026-06-01").
    """

    type = "message_sent"
    reads_only = True
    schema = {
        "type": "object",
        "properties": {
            "channel": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "Only messages on this channel (case-insensitive), e.g. `email`.",
            },
            "target": strings(
                "Recipient, or list of accepted recipients (case-insensitive exact match; "
                "with `target_match: contains`, a substring of the recipient)."
            ),
            "target_match": {
                "enum": ["exact", "contains"],
                "default": "exact",
                "description": "How `target` is compared with the recorded recipient.",
            },
            "contains": strings("String or list of strings the message text must all include." + NUMBERS_DOC),
            "not_contains": strings(
                "String or list of strings the message text must not include (numbers as in `contains`)."
            ),
            "case_sensitive": _CASE,
            "count": _COUNT,
            "max_count": _MAX_COUNT,
        },
    }

    def default_name(self) -> str:
        bits = [
            str(self.config[k]) if not isinstance(self.config[k], list) else ", ".join(map(str, self.config[k]))
            for k in ("channel", "target")
            if self.config.get(k)
        ]
        return clip(f"message_sent {' '.join(bits)}".strip(), 100)

    def _target_ok(self, target: Any) -> bool:
        wanted = [_fold(t, False) for t in as_list(self.get("target"))]
        if not wanted:
            return True
        got = _fold(target or "", False)
        if self.get("target_match") == "contains":
            return any(w in got for w in wanted)
        return got in wanted

    def run(self, ctx: CheckContext) -> tuple:
        channel = self.get("channel")
        outbox = side_effects(ctx, "outbox")
        kept = [
            m
            for m in outbox
            if (channel is None or _fold(m.get("channel") or "", False) == _fold(channel, False))
            and self._target_ok(m.get("target"))
        ]
        contains, not_contains = as_list(self.get("contains")), as_list(self.get("not_contains"))
        scored = []
        for m in kept:
            score, problems, _ = fraction_found(
                str(m.get("message") or ""),
                [str(s) for s in contains],
                [str(s) for s in not_contains],
                case_sensitive=bool(self.get("case_sensitive")),
                squash=True,
            )
            label = f"to {short(m.get('target'), 40)} on turn {m.get('turn', '?')}"
            scored.append((score, problems, label))
        filters = "".join(
            [f" on {channel}" if channel else "", f" to {short(self.get('target'), 60)}" if self.get("target") else ""]
        )
        score, reason, details = _score_items(
            scored, int(self.get("count")), self.get("max_count"), "message(s)", filters
        )
        details["sent"] = len(outbox)
        if not kept and outbox and not self.get("max_count") == 0:
            seen = ", ".join(sorted({f"{m.get('channel')}:{m.get('target')}" for m in outbox}))[:200]
            reason += f" (outbox has {len(outbox)}: {seen})"
        return score, reason, details


def _leaves(value: Any, depth: int = 0) -> list[str]:
    """Every scalar inside a (nested) job record, as text."""
    if depth > 6:
        return []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _leaves(v, depth + 1)]
    return [] if value is None else [str(value)]


def _schedule_strings(schedule: Any) -> list[str]:
    """A job schedule as comparable strings: the string itself, or every string value of a mapping."""
    if isinstance(schedule, dict):
        return [" ".join(str(v).split()) for v in schedule.values() if isinstance(v, (str, int, float))]
    return [" ".join(str(schedule).split())] if schedule is not None else []


@register("check", "cron_job")
class CronJob(Check):
    """The agent scheduled a job (through the simulated `cron` tool) matching the criteria.

    `schedule` must equal the job's schedule (whitespace-normalised; for a structured schedule,
    any of its values, e.g. the cron expression or the time of a one-shot job); `name` must
    appear in the job's name; `contains` strings must appear anywhere in the job's text.
    """

    type = "cron_job"
    reads_only = True
    schema = {
        "type": "object",
        "anyOf": [{"required": ["schedule"]}, {"required": ["name_contains"]}, {"required": ["contains"]}],
        "properties": {
            "schedule": strings("Accepted schedule(s), e.g. `0 9 * * 1` or `2026-03-03T09:00:00Z`."),
            "name_contains": {
                "type": "string",
                "minLength": 1,
                "x-template": "text",
                "description": "Text the job's name must include (case-insensitive).",
            },
            "contains": strings("String or list of strings that must appear in the job (its text, payload or name)."),
            "case_sensitive": _CASE,
            "count": _COUNT,
            "max_count": _MAX_COUNT,
        },
    }

    def default_name(self) -> str:
        what = self.config.get("name_contains") or self.config.get("schedule") or "job"
        return clip(f"cron_job {', '.join(map(str, as_list(what)))}", 100)

    def run(self, ctx: CheckContext) -> tuple:
        jobs = side_effects(ctx, "cron")
        schedules = [" ".join(str(s).split()) for s in as_list(self.get("schedule"))]
        name_part, contains = self.get("name_contains"), as_list(self.get("contains"))
        case = bool(self.get("case_sensitive"))
        scored = []
        for job in jobs:
            total, problems = 0, []
            if schedules:
                total += 1
                got = _schedule_strings(job.get("schedule"))
                if not set(got) & set(schedules):
                    problems.append(f"schedule {short(job.get('schedule'), 50)} is not {' or '.join(schedules)}")
            if name_part:
                total += 1
                if _fold(name_part, False) not in _fold(job.get("name") or "", False):
                    problems.append(f"name {short(job.get('name'), 40)} lacks {name_part!r}")
            body = " | ".join(_leaves({k: v for k, v in job.items() if k != "schedule"}))
            n, probs = _text_problems(body, contains, case)
            total, problems = total + n, problems + probs
            scored.append(
                (
                    (total - len(problems)) / total if total else 1.0,
                    problems,
                    f"job {short(job.get('name') or job.get('id') or '?', 40)}",
                )
            )
        return _score_items(scored, int(self.get("count")), self.get("max_count"), "cron job(s)", "")
