"""Grade the new CHANGELOG.md section of the changelog-from-commits task.

argv: EXPECTED_JSON NEXT_VERSION RELEASE_DATE PREVIOUS_VERSION
EXPECTED_JSON = {"Breaking changes": [short hashes], "Added": [...], "Fixed": [...],
                 "Performance": [...], "skipped": [...], "scopes": {short hash: scope or ""}}
Prints {"score", "checks": [...]} (mean of the sub-scores).
"""

import json
import os
import re
import sys

SECTIONS = ["Breaking changes", "Added", "Fixed", "Performance"]
BULLET = re.compile(r"^- (?:\*\*(?P<scope>[^*]+?):\*\* )?(?P<desc>.+?) \((?P<hash>[0-9a-f]{7})\)\s*$")


def main() -> None:
    expected = json.loads(sys.argv[1])
    nxt, date, prev = sys.argv[2], sys.argv[3], sys.argv[4]
    rel = "projects/habitlog/CHANGELOG.md"
    checks = []

    def add(name, score, reason=""):
        checks.append({"name": name, "score": round(max(0.0, min(1.0, score)), 4), "reason": reason})

    try:
        lines = open(rel, encoding="utf-8").read().replace("\r\n", "\n").split("\n")
    except OSError as exc:
        print(json.dumps({"score": 0, "reason": f"cannot read {rel}: {exc}"}))
        return
    head = f"## [{nxt}] - {date}"
    starts = [i for i, ln in enumerate(lines) if ln.strip() == head]
    if not starts:
        others = [ln for ln in lines if ln.startswith("## [")][:4]
        print(json.dumps({"score": 0, "reason": f"no heading {head!r}; level-2 headings: {others}"}))
        return
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    add("release heading", 1.0, head)

    unrel = next((i for i, ln in enumerate(lines) if ln.strip() == "## [Unreleased]"), None)
    prev_i = next((i for i, ln in enumerate(lines) if ln.startswith(f"## [{prev}]")), None)
    placed = unrel is not None and prev_i is not None and unrel < start < prev_i and not any(
        lines[i].startswith("## ") for i in range(unrel + 1, start))
    add("placed right below [Unreleased], above the previous release", 1.0 if placed else 0.0)

    # old releases untouched: compare from the previous release heading to the end with the original
    orig_path = os.path.join(os.environ.get("CLAWGYM_ORIGINAL", ""), rel)
    try:
        orig = open(orig_path, encoding="utf-8").read().replace("\r\n", "\n").split("\n")
        o_i = next(i for i, ln in enumerate(orig) if ln.startswith(f"## [{prev}]"))
        same = prev_i is not None and [x.rstrip() for x in lines[prev_i:]] == [x.rstrip() for x in orig[o_i:]]
        add("older releases untouched", 1.0 if same else 0.0)
    except (OSError, StopIteration):
        add("older releases untouched", 0.0, "original changelog unavailable")

    block = lines[start + 1:end]
    found: dict[str, list[str]] = {}
    order: list[str] = []
    current = None
    bullets = []
    for ln in block:
        m = re.match(r"^###\s+(.+?)\s*$", ln)
        if m:
            current = m.group(1)
            order.append(current)
            found.setdefault(current, [])
            continue
        b = BULLET.match(ln.strip())
        if b and current is not None:
            found[current].append(b.group("hash"))
            bullets.append(b)
    for name in SECTIONS:
        want = set(expected[name])
        got = set(found.get(name, []))
        if not want:
            add(f"{name}: absent", 1.0 if name not in found else 0.0,
                "" if name not in found else "section should not exist")
            continue
        union = want | got
        score = len(want & got) / len(union) if union else 1.0
        missing, extra = sorted(want - got), sorted(got - want)
        add(f"{name}: right commits", score,
            "" if score == 1 else f"missing {missing}, unexpected {extra}")
    unknown = [s for s in found if s not in SECTIONS]
    wanted_order = [s for s in SECTIONS if s in found]
    add("subsection names and order", 1.0 if not unknown and order == wanted_order else 0.0,
        f"subsections {order}" + (f", unknown {unknown}" if unknown else ""))
    text = "\n".join(block)
    leaked = [h for h in expected["skipped"] if h in text]
    add("skipped commits left out", 1.0 if not leaked else 0.0, f"listed: {leaked}" if leaked else "")
    scopes = expected["scopes"]
    good = sum(1 for b in bullets if (b.group("scope") or "") == scopes.get(b.group("hash"), None))
    add("bullet format and scopes", good / len(bullets) if bullets else 0.0, f"{good}/{len(bullets)} bullets")

    score = sum(c["score"] for c in checks) / len(checks)
    bad = [c["name"] for c in checks if c["score"] < 1]
    print(json.dumps({"score": round(score, 4), "checks": checks,
                      "reason": "all criteria met" if not bad else "issues: " + "; ".join(bad)}))


if __name__ == "__main__":
    main()
