#!/usr/bin/env python3
"""Count log entries by level / service / status / minute (app, syslog, nginx, jsonl formats).

usage: logstats.py FILE [--level LEVEL] [--service NAME] [--by level|service|status|minute]
                   [--lines]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter

APP = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?) +(\w+) +\[([^\]]+)\] ?(.*)$")
SYSLOG = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d) (\S+) ([\w.-]+)\[(\d+)\]: (\w+) (.*)$")
NGINX = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+)[^"]*" (\d{3}) (\d+|-)')


def parse(line: str) -> dict | None:
    line = line.rstrip("\n")
    if not line.strip():
        return None
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        return {"format": "jsonl", "timestamp": str(obj.get("timestamp", "")), "level": str(obj.get("level", "")),
                "service": str(obj.get("service", "")), "message": str(obj.get("message", "")), "line": line}
    m = APP.match(line)
    if m:
        return {"format": "app", "timestamp": m[1], "level": m[2], "service": m[3], "message": m[4], "line": line}
    m = SYSLOG.match(line)
    if m:
        return {"format": "syslog", "timestamp": m[1], "level": m[5], "service": m[3], "message": m[6],
                "line": line}
    m = NGINX.match(line)
    if m:
        status = int(m[5])
        level = "ERROR" if status >= 500 else "WARN" if status >= 400 else "INFO"
        return {"format": "nginx", "timestamp": m[2], "level": level, "service": m[4].split("?")[0],
                "status": str(status), "message": f"{m[3]} {m[4]}", "line": line}
    return None


def minute(ts: str, fmt: str) -> str:
    if fmt == "nginx":  # 02/Mar/2026:09:00:01 +0000
        return ts[:17]
    if fmt == "syslog":  # Mar  2 09:00:01
        return ts[:12]
    return ts[:16].replace("T", " ")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--level", help="keep only this level (ERROR, WARN, INFO, DEBUG)")
    ap.add_argument("--service", help="keep only this service")
    ap.add_argument("--by", default="service", choices=["level", "service", "status", "minute"])
    ap.add_argument("--lines", action="store_true", help="print the matching lines instead of counts")
    args = ap.parse_args(argv)
    entries, skipped = [], 0
    with open(args.file, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            e = parse(raw)
            if e is None:
                skipped += 1 if raw.strip() else 0
                continue
            if args.level and e["level"].upper() != args.level.upper():
                continue
            if args.service and e["service"] != args.service:
                continue
            entries.append(e)
    if args.lines:
        for e in entries:
            print(e["line"])
        return 0
    fmt = entries[0]["format"] if entries else None
    key = args.by
    counts = Counter(minute(e["timestamp"], e["format"]) if key == "minute" else e.get(key, "") for e in entries)
    out = {"format": fmt, "total": len(entries), "unparsed_lines": skipped,
           "by_level": dict(sorted(Counter(e["level"] for e in entries).items())),
           f"by_{key}": dict(sorted(counts.items())),
           "first": entries[0]["timestamp"] if entries else None,
           "last": entries[-1]["timestamp"] if entries else None}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
