"""Grading script for the study-plan task.

Usage: grade_plan.py plan|capacity|summary|todo
Inputs are read from the ORIGINAL workspace (CLAWGYM_ORIGINAL), outputs from the final one (cwd),
so editing the inputs cannot make a bad plan pass. Prints {"score", "reason", "checks"}.
The summary and the to-dos are graded against the agent's own plan, so an empty plan earns
nothing there; the leave-alone criteria of the to-dos only scale what the listed items earn.
"""

import csv
import io
import json
import os
import re
import sys

ORIG = os.environ.get("CLAWGYM_ORIGINAL", ".")


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def load_inputs():
    items = {}
    for r in read_csv(os.path.join(ORIG, "input/work-items.csv")):
        items[r["id"]] = {"title": r["title"], "hours": int(r["hours"]), "due": r["due_week"],
                          "deps": [d for d in r["depends_on"].split(";") if d],
                          "nb": r["not_before"] or None}
    weeks = [(r["week_start"], int(r["hours_available"]))
             for r in read_csv(os.path.join(ORIG, "input/availability.csv"))]
    return items, weeks


def whole_number(text):
    """A whole number however it is written ("6", "6.0"), or None."""
    if not re.fullmatch(r"\d+(?:\.0*)?", text):
        return None
    return int(float(text))


def load_plan(weeks):
    """{(week, item): hours} plus a list of format problems."""
    problems, plan = [], {}
    try:
        text = open("output/plan.csv", encoding="utf-8-sig").read()
    except OSError as exc:
        return None, [f"cannot read output/plan.csv: {exc}"]
    rows = list(csv.DictReader(io.StringIO(text)))
    header = [h.strip() for h in (csv.reader(io.StringIO(text)).__next__() if text.strip() else [])]
    if sorted(header) != ["hours", "item_id", "week_start"]:
        problems.append(f"header is {header}, expected the columns week_start,item_id,hours")
    valid_weeks = {w for w, _ in weeks}
    for n, r in enumerate(rows, start=2):
        w, i, h = (r.get("week_start") or "").strip(), (r.get("item_id") or "").strip(), (r.get("hours") or "").strip()
        if not (w or i or h):
            continue
        if w not in valid_weeks:
            problems.append(f"line {n}: week {w!r} is not in availability.csv")
            continue
        hours = whole_number(h)
        if hours is None or hours <= 0:
            problems.append(f"line {n}: hours {h!r} is not a positive whole number")
            continue
        plan[(w, i)] = plan.get((w, i), 0) + hours
    return plan, problems


def out(checks):
    weighted = [c for c in checks if c.get("w", 1) > 0]
    score = sum(c["score"] * c.get("w", 1) for c in weighted) / sum(c.get("w", 1) for c in weighted)
    for c in checks:
        if "factor" in c:
            score *= c["factor"]
    bad = [f"{c['name']}: {c['reason']}" for c in checks if c["score"] < 1]
    print(json.dumps({"score": round(score, 4),
                      "reason": "all criteria met" if not bad else "; ".join(bad)[:900],
                      "checks": [{k: v for k, v in c.items() if k not in ("w", "factor")} for c in checks]}))


def grade_plan(items, weeks, plan, problems):
    order = [w for w, _ in weeks]
    pos = {w: k for k, w in enumerate(order)}
    cap = dict(weeks)
    checks = []
    unknown = sorted({i for _, i in plan if i not in items})
    checks.append({"name": "rows well-formed", "w": 1,
                   "score": 1.0 if not problems and not unknown else 0.0,
                   "reason": "; ".join(problems[:3] + ([f"unknown items {unknown}"] if unknown else []))})
    per_item = {}
    for i, it in items.items():
        got = {w: h for (w, j), h in plan.items() if j == i}
        reasons = []
        if sum(got.values()) != it["hours"]:
            reasons.append(f"{sum(got.values())} h planned, needs {it['hours']}")
        last = max((pos[w] for w in got), default=None)
        first = min((pos[w] for w in got), default=None)
        if last is not None and last > pos[it["due"]]:
            reasons.append(f"hours after its due week {it['due']}")
        if first is not None and it["nb"] and first < pos[it["nb"]]:
            reasons.append(f"hours before not_before {it['nb']}")
        for d in it["deps"]:
            dweeks = [pos[w] for (w, j) in plan if j == d]
            if first is not None and (not dweeks or sum(plan[(order[k], d)] for k in dweeks) != items[d]["hours"]
                                      or max(dweeks) > first):
                reasons.append(f"starts before {d} is finished")
        per_item[i] = reasons
    ok = [i for i, r in per_item.items() if not r]
    checks.append({"name": "items fully planned within their constraints", "w": 4,
                   "score": len(ok) / len(items),
                   "reason": "; ".join(f"{i}: {', '.join(r)}" for i, r in sorted(per_item.items()) if r)[:600]})
    planned = sum(plan.values())
    needed = sum(it["hours"] for it in items.values())
    load = {w: sum(h for (x, _), h in plan.items() if x == w) for w in order}
    over = {w: load[w] - cap[w] for w in order if load[w] > cap[w]}
    coverage = min(1.0, planned / needed) if needed else 1.0
    factor = coverage * (1 - sum(over.values()) / planned) if planned else 0.0
    checks.append({"name": "weekly capacity respected (scales the whole score)", "w": 0, "factor": factor,
                   "score": factor,
                   "reason": (f"hours over capacity: {over}" if over else "") +
                             (f" only {planned}/{needed} h planned" if coverage < 1 else "")})
    return checks


def grade_capacity(items, weeks, plan):
    """All or nothing: every item gets exactly its hours and no week holds more than its hours_available."""
    cap = dict(weeks)
    load = {w: sum(h for (x, _), h in plan.items() if x == w) for w in cap}
    over = {w: load[w] - cap[w] for w in cap if load[w] > cap[w]}
    wrong = {i: sum(h for (_, j), h in plan.items() if j == i) for i in items}
    wrong = {i: got for i, got in wrong.items() if got != items[i]["hours"]}
    unknown = sorted({i for _, i in plan if i not in items})
    reasons = ([f"hours over capacity: {over}"] if over else []) + [
        f"{i}: {got} h planned, needs {items[i]['hours']}" for i, got in sorted(wrong.items())
    ] + ([f"unknown items {unknown}"] if unknown else [])
    return [{"name": "hours per item and per week", "score": 0.0 if reasons else 1.0, "reason": "; ".join(reasons)[:600]}]


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plan"
    items, weeks = load_inputs()
    plan, problems = load_plan(weeks)
    if plan is None:
        print(json.dumps({"score": 0, "reason": problems[0]}))
        return
    if mode == "plan":
        out(grade_plan(items, weeks, plan, problems))
        return
    if mode == "capacity":
        out(grade_capacity(items, weeks, plan))
        return
    if not plan:
        print(json.dumps({"score": 0, "reason": "output/plan.csv plans no hours: nothing to summarise or list"}))
        return
    order = [w for w, _ in weeks]
    pos = {w: k for k, w in enumerate(order)}
    if mode == "summary":
        try:
            s = json.load(open("output/plan-summary.json", encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(json.dumps({"score": 0, "reason": f"output/plan-summary.json unreadable: {exc}"}))
            return
        checks = []
        total = sum(plan.values())
        checks.append({"name": "total_hours", "score": 1.0 if s.get("total_hours") == total else 0.0,
                       "reason": f"got {s.get('total_hours')!r}, plan has {total}"})
        finish = {i: order[max(pos[w] for (w, j) in plan if j == i)] for i in {j for _, j in plan}}
        got = s.get("finish") if isinstance(s.get("finish"), dict) else {}
        good = sum(1 for i in items if got.get(i) == finish.get(i) and i in finish)
        checks.append({"name": "finish weeks", "score": good / len(items),
                       "reason": f"{good}/{len(items)} items match the plan"})
        spare = s.get("spare_hours") if isinstance(s.get("spare_hours"), dict) else {}
        good = sum(1 for w, c in weeks if spare.get(w) == c - sum(h for (x, _), h in plan.items() if x == w))
        checks.append({"name": "spare hours", "score": good / len(weeks),
                       "reason": f"{good}/{len(weeks)} weeks match the plan"})
        out(checks)
        return
    # todo
    try:
        text = open("todo.md", encoding="utf-8").read()
    except OSError as exc:
        print(json.dumps({"score": 0, "reason": f"todo.md unreadable: {exc}"}))
        return
    orig = open(os.path.join(ORIG, "todo.md"), encoding="utf-8").read()
    lines = text.split("\n")
    try:
        start = lines.index("## This week")
    except ValueError:
        print(json.dumps({"score": 0, "reason": "no '## This week' section in todo.md"}))
        return
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("#")), len(lines))
    section = [ln.strip() for ln in lines[start + 1:end]]
    first = order[0]
    want = [f"- [ ] {i} {items[i]['title']} ({h} h)" for (w, i), h in sorted(plan.items()) if w == first]
    if not want:
        print(json.dumps({"score": 0, "reason": f"the plan has no hours in the first week ({first}): nothing to list"}))
        return
    checks = []
    found = sum(1 for x in want if x in section)
    checks.append({"name": "first-week items listed", "score": found / len(want),
                   "reason": f"{found}/{len(want)} expected lines in 'This week'"})
    stray = [ln for ln in section if re.match(r"- \[ \] T\d+ ", ln) and ln not in want]
    checks.append({"name": "no other plan items (halves the score)", "w": 0, "factor": 0.5 if stray else 1.0,
                   "score": 0.0 if stray else 1.0, "reason": f"unexpected: {stray[:3]}" if stray else ""})
    kept = all(ln in text for ln in orig.split("\n") if ln.startswith("- ["))
    checks.append({"name": "existing to-dos kept (halves the score)", "w": 0, "factor": 1.0 if kept else 0.5,
                   "score": 1.0 if kept else 0.0, "reason": "" if kept else "an existing to-do was changed or removed"})
    out(checks)


if __name__ == "__main__":
    main()
