"""Command-line interface: ``python3 -m habitlog COMMAND LOG [options]``."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from . import __version__
from .core import (LogError, average_session, current_streak, habits, load_log, longest_streak,
                   select, totals, weekly_minutes)


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="habitlog", description="Track habits from a CSV log.")
    parser.add_argument("--version", action="version", version=f"habitlog {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("summary", help="sessions, minutes and average per habit")
    p.add_argument("log", help="path to the CSV log")
    p.add_argument("--habit", help="only this habit")

    p = sub.add_parser("streaks", help="current and longest streak per habit")
    p.add_argument("log", help="path to the CSV log")
    p.add_argument("--today", type=_date, default=None, help="reference day (default: today)")

    p = sub.add_parser("weekly", help="minutes per ISO week")
    p.add_argument("log", help="path to the CSV log")
    p.add_argument("--habit", help="only this habit")
    return parser


def cmd_summary(args: argparse.Namespace) -> int:
    entries = select(load_log(args.log), args.habit)
    table = totals(entries)
    print(f"{'habit':<16}{'sessions':>9}{'minutes':>9}{'avg':>7}")
    for habit, t in table.items():
        print(f"{habit:<16}{t['sessions']:>9}{t['minutes']:>9}{average_session(entries, habit):>7.1f}")
    print(f"{'total':<16}{sum(t['sessions'] for t in table.values()):>9}"
          f"{sum(t['minutes'] for t in table.values()):>9}")
    return 0


def cmd_streaks(args: argparse.Namespace) -> int:
    entries = load_log(args.log)
    today = args.today or dt.date.today()
    print(f"{'habit':<16}{'current':>8}{'longest':>8}")
    for habit in habits(entries):
        print(f"{habit:<16}{current_streak(entries, habit, today):>8}{longest_streak(entries, habit):>8}")
    return 0


def cmd_weekly(args: argparse.Namespace) -> int:
    for week, minutes in weekly_minutes(load_log(args.log), args.habit).items():
        print(f"{week}  {minutes:>5}")
    return 0


COMMANDS = {"summary": cmd_summary, "streaks": cmd_streaks, "weekly": cmd_weekly}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (OSError, LogError) as exc:
        print(f"habitlog: error: {exc}", file=sys.stderr)
        return 1
