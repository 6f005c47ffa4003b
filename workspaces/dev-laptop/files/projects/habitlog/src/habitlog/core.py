"""Parsing and statistics for habit logs.

A log is a CSV file with the header ``date,habit,minutes`` and an optional ``note`` column.
Blank lines and lines starting with ``#`` are ignored. Habit names are case-insensitive:
they are stripped, inner whitespace collapsed and lower-cased when the log is parsed, so
"Reading", "reading " and "READING" are the same habit.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass

REQUIRED = ("date", "habit", "minutes")


class LogError(ValueError):
    """The log file is malformed."""


@dataclass(frozen=True)
class Entry:
    day: dt.date
    habit: str
    minutes: int
    note: str = ""


def normalise_habit(name: str) -> str:
    """Canonical habit name: trimmed, single spaces, lower case."""
    return " ".join(name.split()).lower()


def parse_log(text: str) -> list[Entry]:
    """Parse log text into entries sorted by (day, habit)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise LogError(f"missing column(s): {', '.join(missing)}")
    entries = []
    for n, row in enumerate(reader, start=1):
        try:
            day = dt.date.fromisoformat((row["date"] or "").strip())
            minutes = int((row["minutes"] or "").strip())
        except ValueError as exc:
            raise LogError(f"entry {n}: {exc}") from None
        if minutes < 0:
            raise LogError(f"entry {n}: minutes must not be negative")
        habit = normalise_habit(row["habit"] or "")
        if not habit:
            raise LogError(f"entry {n}: empty habit name")
        entries.append(Entry(day, habit, minutes, (row.get("note") or "").strip()))
    entries.sort(key=lambda e: (e.day, e.habit))
    return entries


def load_log(path: str) -> list[Entry]:
    """Read and parse a log file."""
    with open(path, encoding="utf-8") as fh:
        return parse_log(fh.read())


def habits(entries: list[Entry]) -> list[str]:
    """Distinct habit names, sorted."""
    return sorted({e.habit for e in entries})


def select(entries: list[Entry], habit: str | None = None) -> list[Entry]:
    """Entries of one habit (all entries when `habit` is None)."""
    if habit is None:
        return list(entries)
    wanted = normalise_habit(habit)
    return [e for e in entries if e.habit == wanted]


def totals(entries: list[Entry]) -> dict[str, dict[str, int]]:
    """{habit: {"sessions": n, "minutes": total}} ordered by habit name."""
    out: dict[str, dict[str, int]] = {}
    for e in sorted(entries, key=lambda e: e.habit):
        t = out.setdefault(e.habit, {"sessions": 0, "minutes": 0})
        t["sessions"] += 1
        t["minutes"] += e.minutes
    return out


def average_session(entries: list[Entry], habit: str) -> float:
    """Mean minutes per session of `habit`, rounded to 1 decimal (0.0 if never logged)."""
    mine = select(entries, habit)
    if not mine:
        return 0.0
    return round(sum(e.minutes for e in mine) / len(mine), 1)


def days_logged(entries: list[Entry], habit: str) -> list[dt.date]:
    """Sorted distinct days on which `habit` was logged."""
    return sorted({e.day for e in select(entries, habit)})


def longest_streak(entries: list[Entry], habit: str) -> int:
    """Longest run of consecutive calendar days with at least one entry for `habit`.

    Several entries on the same day count as one day.
    """
    best = run = 0
    prev: dt.date | None = None
    for day in days_logged(entries, habit):
        run = run + 1 if prev is not None and (day - prev).days == 1 else 1
        best = max(best, run)
        prev = day
    return best


def current_streak(entries: list[Entry], habit: str, today: dt.date) -> int:
    """Consecutive days with an entry for `habit`, counting back from `today`.

    A streak is still alive if the habit has not been logged *yet* today: in that case the count
    starts from yesterday. Entries after `today` are ignored.
    """
    days = set(d for d in days_logged(entries, habit) if d <= today)
    cursor = today if today in days else today - dt.timedelta(days=1)
    count = 0
    while cursor in days:
        count += 1
        cursor -= dt.timedelta(days=1)
    return count


def week_label(day: dt.date) -> str:
    """ISO 8601 week of `day`, e.g. ``2026-W10`` (weeks start on Monday; the ISO year is used)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def weekly_minutes(entries: list[Entry], habit: str | None = None) -> dict[str, int]:
    """{ISO week label: minutes} for one habit (or all), in chronological order."""
    out: dict[str, int] = {}
    for e in sorted(select(entries, habit), key=lambda e: e.day):
        label = week_label(e.day)
        out[label] = out.get(label, 0) + e.minutes
    return out
