#!/usr/bin/env python3
"""Small iCalendar helper (python3 standard library only).

  icstool.py events FILE [--json]          list events sorted by start
  icstool.py overlaps FILE [FILE ...] [--across]
                                           timed events overlapping within each file
                                           (--across: also between different files)
"""
import datetime as dt
import json
import sys


def unfold(text):
    lines = []
    for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if ln[:1] in (" ", "\t") and lines:
            lines[-1] += ln[1:]
        elif ln:
            lines.append(ln)
    return lines


def unescape(value):
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append("\n" if nxt in "nN" else nxt)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_when(value, params):
    if "VALUE=DATE" in params or (len(value) == 8 and value.isdigit()):
        return dt.date(int(value[:4]), int(value[4:6]), int(value[6:8]))
    return dt.datetime.strptime(value.rstrip("Z"), "%Y%m%dT%H%M%S")


def parse(path):
    events, cur = [], None
    with open(path, encoding="utf-8") as fh:
        lines = unfold(fh.read())
    for ln in lines:
        if ln == "BEGIN:VEVENT":
            cur = {"file": path, "attendees": []}
        elif ln == "END:VEVENT" and cur is not None:
            events.append(cur)
            cur = None
        elif cur is not None and ":" in ln:
            name, value = ln.split(":", 1)
            key, *params = name.split(";")
            key = key.upper()
            if key in ("DTSTART", "DTEND"):
                cur[key.lower()] = parse_when(value, params)
            elif key in ("SUMMARY", "LOCATION", "DESCRIPTION", "UID", "STATUS"):
                cur[key.lower()] = unescape(value)
            elif key == "ATTENDEE":
                cur["attendees"].append(value.split(":", 1)[-1] if value.lower().startswith("mailto:") else value)
    for ev in events:
        ev["all_day"] = not isinstance(ev.get("dtstart"), dt.datetime)
        if "dtend" not in ev and "dtstart" in ev:
            ev["dtend"] = ev["dtstart"] + (dt.timedelta(days=1) if ev["all_day"] else dt.timedelta(0))
    events.sort(key=lambda e: (str(e.get("dtstart")), e.get("summary", "")))
    return events


def show(ev):
    return {"file": ev["file"], "uid": ev.get("uid"), "summary": ev.get("summary", ""),
            "start": ev["dtstart"].isoformat(), "end": ev["dtend"].isoformat(), "all_day": ev["all_day"],
            "location": ev.get("location")}


def overlaps(files, across):
    per_file = {f: [e for e in parse(f) if not e["all_day"]] for f in files}
    pool = [e for evs in per_file.values() for e in evs]
    out = []
    for i, a in enumerate(pool):
        for b in pool[i + 1:]:
            if a["file"] != b["file"] and not across:
                continue
            if a.get("uid") and a.get("uid") == b.get("uid"):
                continue
            if a["dtstart"] < b["dtend"] and b["dtstart"] < a["dtend"]:
                out.append((a, b))
    return out


def main(argv):
    if len(argv) < 3 or argv[1] not in ("events", "overlaps"):
        sys.exit(__doc__)
    if argv[1] == "events":
        evs = [show(e) for e in parse(argv[2])]
        if "--json" in argv:
            print(json.dumps(evs, indent=2))
        else:
            for e in evs:
                print(f"{e['start']}  {e['end']}  {'(all day) ' if e['all_day'] else ''}{e['summary']}")
        return
    files = [a for a in argv[2:] if not a.startswith("--")]
    for a, b in overlaps(files, "--across" in argv):
        print(f"{a['dtstart']:%Y-%m-%d %H:%M}-{a['dtend']:%H:%M} {a.get('summary')} [{a['file']}]"
              f"  <->  {b['dtstart']:%H:%M}-{b['dtend']:%H:%M} {b.get('summary')} [{b['file']}]")


if __name__ == "__main__":
    main(sys.argv)
