#!/usr/bin/env python3
"""Print a CSV file (or some of its columns) as a Markdown table. Standard library only.

  mdtable.py FILE.csv [COLUMN ...]
"""
import csv
import re
import sys

NUM = re.compile(r"^-?\d[\d,]*(\.\d+)?%?$")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip())
        return 2
    with open(argv[1], newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        print("(empty file)")
        return 1
    header, body = rows[0], rows[1:]
    cols = list(range(len(header)))
    if len(argv) > 2:
        missing = [c for c in argv[2:] if c not in header]
        if missing:
            print(f"unknown column(s): {', '.join(missing)}; have: {', '.join(header)}")
            return 1
        cols = [header.index(c) for c in argv[2:]]
    cell = lambda r, i: (r[i] if i < len(r) else "").replace("|", "\\|")
    numeric = {i: bool(body) and all(NUM.match(cell(r, i)) or not cell(r, i) for r in body) for i in cols}
    print("| " + " | ".join(header[i] for i in cols) + " |")
    print("|" + "|".join("---:" if numeric[i] else "---" for i in cols) + "|")
    for r in body:
        print("| " + " | ".join(cell(r, i) for i in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
