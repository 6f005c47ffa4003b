#!/usr/bin/env python3
"""Explain a five-field cron expression: expanded fields and the next N run times.

usage: cron_explain.py "EXPR" [--from YYYY-MM-DDTHH:MM] [-n N]
Supports *, lists, ranges, steps (*/5, 1-10/2), month and weekday names, 7 = Sunday and the
@hourly @daily @midnight @weekly @monthly @yearly @annually macros.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
NAMES = {3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
         4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
FIELD_NAMES = ["minute", "hour", "day of month", "month", "day of week"]


def value(text: str, idx: int) -> int:
    t = text.lower()
    if idx in NAMES and t in NAMES[idx]:
        return NAMES[idx].index(t) + (1 if idx == 3 else 0)
    return int(t)


def expand(field: str, idx: int) -> set[int]:
    lo, hi = BOUNDS[idx]
    out: set[int] = set()
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/", 1)
            step = int(s)
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            x, y = part.split("-", 1)
            a, b = value(x, idx), value(y, idx)
        else:
            a = value(part, idx)
            b = hi if step > 1 else a
        if not (lo <= a <= hi and lo <= b <= hi) or a > b or step < 1:
            raise ValueError(f"bad {FIELD_NAMES[idx]} field: {field!r}")
        out.update(range(a, b + 1, step))
    if idx == 4 and 7 in out:
        out.discard(7)
        out.add(0)
    return out


def parse(expr: str) -> tuple[list[set[int]], list[str]]:
    expr = MACROS.get(expr.strip().lower(), expr)
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(f"need 5 fields, got {len(fields)}: {expr!r}")
    return [expand(f, i) for i, f in enumerate(fields)], fields


def matches(t: datetime, sets: list[set[int]], fields: list[str]) -> bool:
    minute, hour, dom, month, dow = sets
    if t.minute not in minute or t.hour not in hour or t.month not in month:
        return False
    dom_hit, dow_hit = t.day in dom, (t.isoweekday() % 7) in dow
    if fields[2] != "*" and fields[4] != "*":
        return dom_hit or dow_hit
    return dom_hit and dow_hit


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("expr")
    ap.add_argument("--from", dest="start", default=None, help="start time (default: now, UTC)")
    ap.add_argument("-n", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        sets, fields = parse(args.expr)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for name, s in zip(FIELD_NAMES, sets):
        print(f"{name:>13}: {','.join(map(str, sorted(s)))}")
    t = datetime.fromisoformat(args.start) if args.start else datetime.utcnow()
    t = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
    found, limit = 0, 60 * 24 * 366 * 5
    for _ in range(limit):
        if matches(t, sets, fields):
            print("next:", t.strftime("%Y-%m-%d %H:%M %a"))
            found += 1
            if found >= args.n:
                break
        t += timedelta(minutes=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
