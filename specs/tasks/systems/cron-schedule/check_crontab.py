"""Grade cron/ops.crontab for the cron-schedule task by comparing schedules semantically.

argv[1]: JSON {"jobs": {script name: expected cron expression}, "removed": [script names],
"env": ["MAILTO=...", ...]}; argv[2]: "schedules" (one sub-score per job) or "hygiene" (removed
jobs, line format, env lines, validity). Each expected job must appear on exactly one active line whose five
fields expand to the same sets as the expected expression (so `*/15`, `0,15,30,45` and `0-59/15`
are all fine; 7 = 0 = Sunday; month/day names accepted; @daily etc. accepted). Prints
{"score", "checks"}.
"""
import json
import os
import re
import sys

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
NAMES = {3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
         4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]


def value(text, idx):
    t = text.lower()
    if idx in NAMES and t in NAMES[idx]:
        return NAMES[idx].index(t) + (1 if idx == 3 else 0)
    return int(t)


def expand(field, idx):
    lo, hi = BOUNDS[idx]
    out = set()
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
        if not (lo <= a <= b <= hi) or step < 1:
            raise ValueError(f"bad field {field!r}")
        out.update(range(a, b + 1, step))
    if idx == 4:
        out = {0 if d == 7 else d for d in out}
    return out


def schedule(fields):
    sets = [frozenset(expand(f, i)) for i, f in enumerate(fields)]
    full_dom, full_dow = sets[2] == frozenset(range(1, 32)), sets[4] == frozenset(range(0, 7))
    return tuple(sets), full_dom, full_dow


def split_line(line):
    """(five fields, command) of an active crontab line, or None for env/comment/blank lines."""
    s = line.strip()
    if not s or s.startswith("#") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", s):
        return None
    if s.startswith("@"):
        macro, _, cmd = s.partition(" ")
        if macro.lower() not in MACROS:
            return ("invalid",), s
        return MACROS[macro.lower()].split(), cmd.strip()
    parts = s.split(None, 5)
    if len(parts) < 6:
        return ("invalid",), s
    return parts[:5], parts[5]


def main():
    spec = json.loads(sys.argv[1])
    path = os.path.join(os.environ["CLAWGYM_WORKSPACE"], "cron", "ops.crontab")
    checks = []
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        print(json.dumps({"score": 0, "reason": f"cannot read cron/ops.crontab: {e}"}))
        return
    entries = []
    for line in text.splitlines():
        sp = split_line(line)
        if sp:
            entries.append((line, sp[0], sp[1]))
    mode = sys.argv[2] if len(sys.argv) > 2 else "schedules"
    for job, expr in (spec["jobs"].items() if mode == "schedules" else []):
        mine = [e for e in entries if re.search(r"(^|[/\s])" + re.escape(job) + r"(\s|$)", e[2])]
        name = f"{job} schedule"
        if len(mine) != 1:
            checks.append({"name": name, "score": 0.0, "reason": f"{len(mine)} active lines run {job}, want 1"})
            continue
        line, fields, _ = mine[0]
        try:
            got = schedule(fields)
        except (ValueError, IndexError) as e:
            checks.append({"name": name, "score": 0.0, "reason": f"invalid expression in {line!r}: {e}"})
            continue
        want = schedule(expr.split())
        ok = got == want
        checks.append({"name": name, "score": 1.0 if ok else 0.0,
                       "reason": "" if ok else f"{' '.join(fields)} does not match the request ({expr} or equivalent)"})
    if mode == "schedules":
        print(json.dumps({"score": sum(c["score"] for c in checks) / len(checks), "checks": checks}))
        return
    for job in spec["removed"]:
        present = [e for e in entries if job in e[2]]
        checks.append({"name": f"{job} not scheduled", "score": 0.0 if present else 1.0,
                       "reason": "still scheduled" if present else ""})
    conv = []
    for job in spec["jobs"]:
        stem = job[:-3] if job.endswith(".sh") else job
        pattern = (r"^/opt/ops/scripts/" + re.escape(job) + r"\s+>>\s*/var/log/ops/" + re.escape(stem)
                   + r"\.log\s+2>&1\s*$")
        if not any(re.match(pattern, e[2].strip()) for e in entries if job in e[2]):
            conv.append(job)
    checks.append({"name": "line format (full path, log redirect)", "score": 1.0 if not conv else 0.0,
                   "reason": ("not in the house format: " + ", ".join(conv)) if conv else ""})
    lines = [ln.strip() for ln in text.splitlines()]
    missing_env = [e for e in spec["env"] if e not in lines]
    checks.append({"name": "MAILTO and SHELL kept", "score": 0.0 if missing_env else 1.0,
                   "reason": ("missing " + ", ".join(missing_env)) if missing_env else ""})
    bad = [e[0] for e in entries if e[1] == ("invalid",)]
    checks.append({"name": "every active line is a valid cron entry", "score": 0.0 if bad else 1.0,
                   "reason": ("invalid: " + "; ".join(bad[:3])) if bad else ""})
    score = sum(c["score"] for c in checks) / len(checks)
    print(json.dumps({"score": score, "checks": checks}))


if __name__ == "__main__":
    main()
