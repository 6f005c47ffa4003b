#!/usr/bin/env python3
"""Ledger totals for budget work (standard library only).

  budgettool.py totals LEDGER.csv [--by COLUMN] [--amount COLUMN] [--where COL=VALUE ...]
                                  [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--date COLUMN]

Prints `group,total` lines sorted by group, then `TOTAL,<sum>` and the number of rows used.
`--where` may repeat (all must hold); `--from/--to` are inclusive and compare the date column.
"""
import argparse
import csv
import sys


def main(argv):
    ap = argparse.ArgumentParser(prog="budgettool.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("totals")
    t.add_argument("ledger")
    t.add_argument("--by", default="category")
    t.add_argument("--amount", default="amount")
    t.add_argument("--date", default="date")
    t.add_argument("--where", action="append", default=[])
    t.add_argument("--from", dest="start")
    t.add_argument("--to", dest="end")
    args = ap.parse_args(argv[1:])
    conds = [w.split("=", 1) for w in args.where]
    totals, used = {}, 0
    with open(args.ledger, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if any(row.get(k, "") != v for k, v in conds):
                continue
            day = row.get(args.date, "")
            if args.start and day < args.start or args.end and day > args.end:
                continue
            try:
                amount = float(row[args.amount])
            except (KeyError, ValueError):
                print(f"skipping row without a numeric {args.amount}: {row}", file=sys.stderr)
                continue
            key = row.get(args.by, "")
            totals[key] = totals.get(key, 0.0) + amount
            used += 1
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow([args.by, "total"])
    for key in sorted(totals):
        w.writerow([key, f"{totals[key]:.2f}"])
    w.writerow(["TOTAL", f"{sum(totals.values()):.2f}"])
    print(f"# {used} row(s) used", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
