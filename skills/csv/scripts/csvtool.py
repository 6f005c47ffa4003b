"""Tiny CSV helper: `csvtool.py summary FILE` prints the header and row count."""
import csv
import sys

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "summary":
        sys.exit("usage: csvtool.py summary FILE")
    with open(sys.argv[2], newline="") as fh:
        rows = list(csv.reader(fh))
    print("columns:", ", ".join(rows[0]) if rows else "(none)")
    print("rows:", max(0, len(rows) - 1))
