"""Grade the fixed config copies of the config-audit task.

argv[1]: JSON {"policy": {path: {"format": f, "require": {key: value}}}, "findings": {path: [keys]}}.
For every file with findings, audit/fixed/<path> must exist, define each policy key of that file
exactly once with the required value, and otherwise keep the original's lines (blank lines and
new comment lines and commented-out definitions of the fixed keys aside). Files without findings must not get a fixed copy:
each such copy halves the score (leaving them out earns nothing on its own). Prints {"score", "checks"}.
"""
import json
import os
import re
import sys

ACTIVE = {
    "sshd": lambda line: re.match(r"^\s*([A-Za-z][A-Za-z0-9]*)\s+(.*?)\s*$", line),
    "sysctl": lambda line: re.match(r"^\s*([A-Za-z0-9_.\-/]+)\s*=\s*(.*?)\s*$", line),
    "nginx": lambda line: re.match(r"^\s*([a-z_][a-z0-9_]*)\s+([^;{}]*?)\s*;\s*(?:#.*)?$", line),
    "env": lambda line: re.match(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$", line),
}


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def definition(fmt: str, line: str):
    if not line.strip() or is_comment(line):
        return None
    m = ACTIVE[fmt](line)
    if not m:
        return None
    value = m.group(2)
    if fmt == "env" and len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if fmt == "sshd":
        value = value.split("#")[0].strip()
    return m.group(1), value


def read(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return fh.read().split("\n")


def main() -> None:
    spec = json.loads(sys.argv[1])
    work, orig = os.environ["CLAWGYM_WORKSPACE"], os.environ["CLAWGYM_ORIGINAL"]
    checks = []
    for path, info in spec["policy"].items():
        fmt, require = info["format"], info["require"]
        keys = spec["findings"].get(path, [])
        fixed = os.path.join(work, "audit", "fixed", path)
        if not keys:
            ok = not os.path.exists(fixed)
            checks.append({"name": f"no fixed copy of {path} (halves the score)", "score": 1.0 if ok else 0.0,
                           "factor": 1.0 if ok else 0.5,
                           "reason": "" if ok else "file has no findings but a fixed copy was written"})
            continue
        if not os.path.isfile(fixed):
            checks.append({"name": f"{path} values", "score": 0.0, "reason": "fixed copy missing"})
            checks.append({"name": f"{path} rest unchanged", "score": 0.0, "reason": "fixed copy missing"})
            continue
        lines = read(fixed)
        defs = {}
        for line in lines:
            d = definition(fmt, line)
            if d and d[0] in require:
                defs.setdefault(d[0], []).append(d[1])
        good, problems = 0, []
        for k in keys:
            got = defs.get(k, [])
            if got == [str(require[k])]:
                good += 1
            else:
                problems.append(f"{k}: {got or 'not defined'} (want {require[k]!r} once)")
        checks.append({"name": f"{path} values", "score": good / len(keys), "reason": "; ".join(problems)})
        original = read(os.path.join(orig, path))
        orig_set = set(original)

        def rest(src: list[str], drop_new_comments: bool) -> list[str]:
            out = []
            for line in src:
                if not line.strip():
                    continue
                d = definition(fmt, line)
                if d and d[0] in keys:
                    continue
                if is_comment(line):  # a commented-out definition of a fixed key may be kept, edited or dropped
                    inner = definition(fmt, line.lstrip().lstrip("#"))
                    if inner and inner[0] in keys:
                        continue
                if drop_new_comments and is_comment(line) and line not in orig_set:
                    continue
                out.append(line.rstrip())
            return out

        a, b = rest(original, False), rest(lines, True)
        same = a == b
        reason = ""
        if not same:
            extra = [x for x in b if x not in a][:2]
            gone = [x for x in a if x not in b][:2]
            reason = f"other lines changed: added {extra}, removed {gone}"
        checks.append({"name": f"{path} rest unchanged", "score": 1.0 if same else 0.0, "reason": reason})
    graded = [c for c in checks if "factor" not in c]
    score = sum(c["score"] for c in graded) / len(graded) if graded else 0.0
    for c in checks:
        score *= c.pop("factor", 1.0)
    print(json.dumps({"score": score, "checks": checks}))


if __name__ == "__main__":
    main()
