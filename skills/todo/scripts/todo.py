#!/usr/bin/env python3
"""Read and update a markdown to-do list.

  todo.py list FILE [--open | --done] [--section NAME] [--due-by YYYY-MM-DD]
  todo.py add FILE TEXT [--section NAME]
  todo.py done FILE TEXT
"""
from __future__ import annotations

import argparse
import json
import re
import sys

ITEM = re.compile(r"^(\s*)[-*] \[( |x|X)\] (.*)$")
DUE = re.compile(r"due (\d{4}-\d{2}-\d{2})")
PRIO = re.compile(r"\b(low|high) priority\b")


def parse(lines: list[str]) -> list[dict]:
    items, section = [], None
    for i, line in enumerate(lines):
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        m = ITEM.match(line)
        if m:
            text = m[3]
            due = DUE.search(text)
            prio = PRIO.search(text)
            items.append({"line": i + 1, "section": section, "done": m[2].lower() == "x", "text": text,
                          "due": due[1] if due else None, "priority": prio[1] if prio else "normal"})
    return items


def load(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return fh.read().split("\n")


def save(path: str, lines: list[str]) -> None:
    text = "\n".join(lines)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list")
    p.add_argument("file")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--open", action="store_true")
    g.add_argument("--done", action="store_true")
    p.add_argument("--section")
    p.add_argument("--due-by")
    p = sub.add_parser("add")
    p.add_argument("file")
    p.add_argument("text")
    p.add_argument("--section")
    p = sub.add_parser("done")
    p.add_argument("file")
    p.add_argument("text")
    args = ap.parse_args(argv)
    lines = load(args.file)
    items = parse(lines)
    if args.cmd == "list":
        for it in items:
            if (args.open and it["done"]) or (args.done and not it["done"]):
                continue
            if args.section and it["section"] != args.section:
                continue
            if args.due_by and (not it["due"] or it["due"] > args.due_by):
                continue
            print(json.dumps(it))
        return 0
    if args.cmd == "done":
        hits = [it for it in items if not it["done"] and args.text in it["text"]]
        if len(hits) != 1:
            print(f"error: {len(hits)} open items contain {args.text!r}", file=sys.stderr)
            return 1
        i = hits[0]["line"] - 1
        lines[i] = re.sub(r"\[ \]", "[x]", lines[i], count=1)
        save(args.file, lines)
        print(f"done: {hits[0]['text']}")
        return 0
    # add
    if any(not it["done"] and it["text"] == args.text for it in items):
        print("already there (open): " + args.text)
        return 0
    new = f"- [ ] {args.text}"
    if args.section:
        start = next((i for i, l in enumerate(lines) if l.strip() == f"## {args.section}"), None)
        if start is None:
            while lines and not lines[-1].strip():
                lines.pop()
            lines += ["", f"## {args.section}", new, ""]
        else:
            end = start + 1
            while end < len(lines) and not lines[end].startswith("#"):
                end += 1
            last = max([j for j in range(start + 1, end) if lines[j].strip()], default=start)
            lines.insert(last + 1, new)
    else:
        last = max([i for i, l in enumerate(lines) if l.strip()], default=-1)
        lines.insert(last + 1, new)
    save(args.file, lines)
    print("added: " + args.text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
