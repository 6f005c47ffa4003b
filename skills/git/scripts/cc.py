#!/usr/bin/env python3
"""Parse an exported `git log` (default or --date=short format) into JSON lines.

usage: cc.py LOGFILE      one JSON object per commit, in file order:
       {hash, date, author, subject, body, type, scope, breaking, description, conventional}
"""
import json
import re
import sys

CC = re.compile(r"^(?P<type>[a-z]+)(?:\((?P<scope>[^)]+)\))?(?P<bang>!)?: (?P<desc>.+)$")


def commits(text):
    blocks = re.split(r"(?m)^commit (?=[0-9a-f]{7,40}\b)", text)
    for block in blocks:
        if not block.strip():
            continue
        head, _, rest = block.partition("\n")
        sha = head.split()[0]
        meta, msg = {}, []
        for line in rest.split("\n"):
            if line.startswith("    ") or (not line.strip() and meta):
                msg.append(line[4:] if line.startswith("    ") else "")
            elif ":" in line and not msg:
                key, value = line.split(":", 1)
                meta[key.strip().lower()] = value.strip()
        while msg and not msg[0].strip():
            msg.pop(0)
        subject = msg[0].strip() if msg else ""
        body = "\n".join(msg[1:]).strip()
        m = CC.match(subject)
        breaking = bool(m and m.group("bang")) or bool(
            re.search(r"(?m)^BREAKING[ -]CHANGE:", body))
        yield {"hash": sha, "date": meta.get("date", ""), "author": meta.get("author", ""),
               "subject": subject, "body": body, "type": m.group("type") if m else None,
               "scope": m.group("scope") if m else None, "breaking": breaking,
               "description": m.group("desc") if m else subject, "conventional": bool(m)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as fh:
        for c in commits(fh.read()):
            print(json.dumps(c))
