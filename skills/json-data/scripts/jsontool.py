#!/usr/bin/env python3
"""Small JSON helper (standard library only).

  jsontool.py shape FILE            top-level type, keys and record counts
  jsontool.py get FILE PATH         value at a dotted path, e.g. totals.by_month[0] or items[2].id
  jsontool.py check FILE KEY...     fail (exit 1) if a top-level key is missing; every record of a
                                    list is checked when the top level is a list
  jsontool.py pretty FILE           re-indent to stdout (2 spaces, UTF-8)
"""
import json
import re
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def get(data, path):
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            data = data[int(part[1:-1])]
        else:
            data = data[part]
    return data


def shape(data, indent=""):
    if isinstance(data, dict):
        print(f"{indent}object with {len(data)} key(s): {', '.join(list(map(str, data))[:15])}")
        for k, v in list(data.items())[:15]:
            if isinstance(v, (dict, list)):
                print(f"{indent}  {k}:")
                shape(v, indent + "    ")
    elif isinstance(data, list):
        kinds = sorted({type(x).__name__ for x in data})
        print(f"{indent}list of {len(data)} ({', '.join(kinds) or 'empty'})")
        if data and isinstance(data[0], dict):
            keys = sorted({k for r in data if isinstance(r, dict) for k in r})
            print(f"{indent}  record keys: {', '.join(keys)}")
    else:
        print(f"{indent}{type(data).__name__}: {data!r}")


def main(argv):
    if len(argv) < 3 or argv[1] not in ("shape", "get", "check", "pretty"):
        print(__doc__.strip())
        return 2
    cmd, path = argv[1], argv[2]
    data = load(path)
    if cmd == "shape":
        shape(data)
    elif cmd == "pretty":
        print(json.dumps(data, indent=2, ensure_ascii=False))
    elif cmd == "get":
        try:
            value = get(data, argv[3])
        except (KeyError, IndexError, ValueError, TypeError) as e:
            print(f"not found: {argv[3]} ({e})")
            return 1
        print(json.dumps(value, indent=2, ensure_ascii=False))
    else:
        records = data if isinstance(data, list) else [data]
        missing = [f"record {i}: {k}" for i, r in enumerate(records) for k in argv[3:]
                   if not isinstance(r, dict) or k not in r]
        if missing:
            print("missing: " + "; ".join(missing[:20]))
            return 1
        print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
