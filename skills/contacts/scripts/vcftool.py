#!/usr/bin/env python3
"""Small vCard helper (python3 standard library only).

  vcftool.py list FILE     one line per card: name | emails | phones
  vcftool.py json FILE     all cards as a JSON list
  vcftool.py dupes FILE    groups of cards that share a name, an email or a phone
"""
import json
import re
import sys


def unfold(text):
    out = []
    for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if ln[:1] in (" ", "\t") and out:
            out[-1] += ln[1:]
        elif ln:
            out.append(ln)
    return out


def unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) in "nN" else m.group(1), v)


def split_unescaped(v, sep=";"):
    return [unescape(p) for p in re.split(r"(?<!\\)" + re.escape(sep), v)]


def parse(path):
    cards, cur = [], None
    with open(path, encoding="utf-8") as fh:
        for ln in unfold(fh.read()):
            up = ln.upper()
            if up == "BEGIN:VCARD":
                cur = {"emails": [], "phones": []}
            elif up == "END:VCARD" and cur is not None:
                cards.append(cur)
                cur = None
            elif cur is not None and ":" in ln:
                name, value = ln.split(":", 1)
                key = name.split(";")[0].split(".")[-1].upper()
                if key == "EMAIL":
                    cur["emails"].append(value.strip())
                elif key == "TEL":
                    cur["phones"].append(value.strip())
                elif key == "N":
                    parts = split_unescaped(value) + [""] * 5
                    cur["last_name"], cur["first_name"] = parts[0], parts[1]
                elif key in ("FN", "ORG", "TITLE", "BDAY", "NOTE", "UID"):
                    cur[key.lower()] = unescape(value)
                elif key == "ADR":
                    parts = split_unescaped(value) + [""] * 7
                    cur["city"] = parts[3]
    return cards


def digits(phone):
    return re.sub(r"\D", "", phone)[-10:]


def dupes(cards):
    parent = list(range(len(cards)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen = {}
    for i, c in enumerate(cards):
        keys = [("n", " ".join(c.get("fn", "").split()).casefold())]
        keys += [("e", e.casefold()) for e in c["emails"]] + [("p", digits(p)) for p in c["phones"]]
        for k in keys:
            if k[1] and k in seen:
                parent[find(i)] = find(seen[k])
            elif k[1]:
                seen[k] = i
    groups = {}
    for i in range(len(cards)):
        groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("list", "json", "dupes"):
        sys.exit(__doc__)
    cards = parse(sys.argv[2])
    if sys.argv[1] == "json":
        print(json.dumps(cards, indent=2, ensure_ascii=False))
    elif sys.argv[1] == "list":
        for c in cards:
            print(f"{c.get('fn', '?')} | {', '.join(c['emails'])} | {', '.join(c['phones'])}")
    else:
        for g in dupes(cards):
            print(" + ".join(f"#{i} {cards[i].get('fn', '?')}" for i in g))
