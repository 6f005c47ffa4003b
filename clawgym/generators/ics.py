"""`ics_calendar`: an RFC 5545 iCalendar file with optional overlapping (conflicting) events."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import People, company_domain, email_for, iso, make_schema, p, p_count, p_date, parse_date

DURATIONS = (30, 30, 45, 60, 60, 60, 90, 120)
WORK_EVENTS = (
    "1:1 with {first}",
    "Sprint planning",
    "Design review: {project}",
    "Team standup",
    "Budget review",
    "Call with {company}",
    "Interview: {title} candidate",
    "Quarterly planning",
    "{project} demo",
    "Customer onboarding: {company}",
    "Hiring sync",
    "Roadmap review",
)
PERSONAL_EVENTS = (
    ("Lunch with {first}", "{cafe}"),
    ("Dentist appointment", "City Dental Care, 120 Main St"),
    ("Gym", "Equinox"),
    ("Haircut", "Studio 9, 48 Oak Ave"),
    ("Parent-teacher meeting", "Lincoln Elementary School"),
    ("Coffee with {first}", "{cafe}"),
    ("Car service", "Downtown Auto Care, 5 Mill Rd"),
)
ALL_DAY = (
    "Company holiday",
    "Conference: {project} Summit",
    "Out of office",
    "Team offsite in {city}",
    "{first}'s birthday",
)


def escape(text: str) -> str:
    """RFC 5545 TEXT escaping."""
    return text.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def fold(line: str) -> str:
    """Fold a content line at 75 octets (continuations start with one space)."""
    if line.isascii():
        if len(line) <= 75:
            return line
        return "\r\n ".join([line[:75]] + [line[i : i + 74] for i in range(75, len(line), 74)])
    parts, cur, size = [], "", 0
    for ch in line:
        n = len(ch.encode())
        if size + n > (75 if not parts else 74):
            parts.append(cur)
            cur, size = "", 0
        cur += ch
        size += n
    parts.append(cur)
    return "\r\n ".join(parts)


def param(value: str) -> str:
    """A property parameter value, quoted when it holds `:`, `;` or `,`."""
    value = value.replace('"', "'")
    return f'"{value}"' if any(c in value for c in ":;,") else value


def _overlaps(a: dict, b: dict) -> bool:
    return a["_s"] < b["_e"] and b["_s"] < a["_e"]


@register("generator", "ics_calendar")
class IcsCalendar:
    """iCalendar (.ics) file with timed and all-day events, CRLF line endings.

    data: {calendar, events: [{uid, summary, start, end, all_day, location, description,
    organizer, attendees: [{name, email}]}] sorted by start (timed: YYYY-MM-DDTHH:MM:SS local
    time, or ...Z with `utc`; all-day: YYYY-MM-DD with exclusive end), conflicts: [{uids,
    summaries, date}] = every pair of overlapping timed events (touching is not overlapping)}.
    """

    name = "ics_calendar"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "events": p_count("Total number of events (including all-day ones).", 8, minimum=0, maximum=500),
            "all_day": p_count("How many of the events are all-day events.", 1, maximum=100),
            "conflicts": p_count("Timed events placed to overlap exactly one other event.", 0, maximum=100),
            "start_date": p_date("First day of the calendar window (YYYY-MM-DD).", "2026-03-02"),
            "days": p_count("Length of the window in days.", 7, minimum=1, maximum=366),
            "weekends": p("boolean", "Allow timed events on Saturdays and Sundays.", False),
            "work_start": p("integer", "Earliest start hour of timed events.", 9, minimum=0, maximum=23),
            "work_end": p("integer", "Hour by which timed events end.", 18, minimum=1, maximum=24),
            "personal_ratio": p(
                "number", "Share of timed events that are personal (no attendees).", 0.25, minimum=0, maximum=1
            ),
            "calendar_name": p("string", "X-WR-CALNAME of the calendar.", "Work"),
            "owner_name": p("string", "Calendar owner (organizer of work events).", "Jordan Lee"),
            "owner_email": p("string", "Owner's email address.", "jordan.lee@example.com"),
            "utc": p("boolean", "Write times as UTC (…Z) instead of floating local time.", False),
            "busy_mornings": p(
                "boolean",
                "Open every working day with a timed event at work_start (as many days as there are timed "
                "events), so the first free slot of a day is never simply its start.",
                False,
            ),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        start = parse_date(params["start_date"], "start_date")
        total, n_all, n_conf = int(params["events"]), int(params["all_day"]), int(params["conflicts"])
        timed_n = total - n_all
        if timed_n < 0 or n_conf > timed_n // 2:
            raise ClawgymError("ics_calendar: need all_day <= events and conflicts <= (events - all_day) / 2")
        w0, w1 = int(params["work_start"]), int(params["work_end"])
        if w1 - w0 < 2:
            raise ClawgymError("ics_calendar: work_end must be at least 2 hours after work_start")
        days = [start + timedelta(days=i) for i in range(int(params["days"]))]
        open_days = [d for d in days if params["weekends"] or d.weekday() < 5] or days
        people = People(rng).many(8)
        company = rng.choice(vocab.COMPANIES)
        ctx = {
            "project": rng.choice(vocab.PROJECTS),
            "company": company,
            "cafe": rng.choice(vocab.CAFES),
            "city": rng.choice(vocab.CITIES),
            "title": rng.choice(vocab.JOB_TITLES),
        }
        events: list[dict[str, Any]] = []

        def timed(day: date, minute: int, length: int) -> dict:
            s = datetime(day.year, day.month, day.day) + timedelta(minutes=minute)
            return {"_s": s, "_e": s + timedelta(minutes=length), "all_day": False}

        placed = 0
        if params.get("busy_mornings"):
            for day in open_days[: max(0, timed_n - n_conf)]:
                events.append(timed(day, w0 * 60, rng.choice((60, 90, 120))))
                placed += 1
        for _ in range(timed_n - n_conf - placed):
            for _attempt in range(60):
                length = rng.choice(DURATIONS)
                slots = (w1 - w0) * 60 - length
                ev = timed(rng.choice(open_days), w0 * 60 + rng.randrange(0, slots + 1, 30), length)
                if not any(_overlaps(ev, e) for e in events):
                    break
            events.append(ev)
        bases = rng.sample(events, len(events))
        for _ in range(n_conf):
            for base in bases:
                if any(_overlaps(base, e) for e in events if e is not base):
                    continue
                span = int((base["_e"] - base["_s"]).total_seconds() // 60)
                ev = timed(base["_s"].date(), 0, rng.choice((30, 45, 60)))
                shift = base["_s"] + timedelta(minutes=rng.randrange(0, span, 15)) - ev["_s"]
                ev["_s"] += shift
                ev["_e"] += shift
                hits = [e for e in events if _overlaps(ev, e)]
                if hits == [base] and ev["_e"].date() == ev["_s"].date():
                    events.append(ev)
                    break
        used: set[str] = set()
        for ev in events:
            _describe_timed(rng, ev, people, company, ctx, params, used)
        for _ in range(n_all):
            d = rng.choice(days)
            length = rng.choice((1, 1, 1, 2, 3))
            first, last = rng.choice(people)
            summary = rng.choice(ALL_DAY).format(first=first, **ctx)
            events.append(
                {
                    "_s": datetime(d.year, d.month, d.day),
                    "_e": datetime(d.year, d.month, d.day) + timedelta(days=length),
                    "all_day": True,
                    "summary": summary,
                    "location": None,
                    "description": None,
                    "attendees": [],
                    "organizer": None,
                }
            )
        events.sort(key=lambda e: (e["_s"], e["_e"], e["summary"]))
        return _render(rng, events, params)


def _describe_timed(
    rng: random.Random, ev: dict, people: list, company: str, ctx: dict, prm: dict, used: set[str]
) -> None:
    """Pick a summary (distinct within the calendar where possible), location and attendees."""
    personal = rng.random() < float(prm["personal_ratio"])
    lunch_time = 11 <= ev["_s"].hour <= 13
    for _ in range(20):
        first, last = rng.choice(people)
        if personal:
            summary, location = rng.choice([x for x in PERSONAL_EVENTS if lunch_time or "Lunch" not in x[0]])
        else:
            summary, location = rng.choice(WORK_EVENTS), ""
        summary = summary.format(first=first, **ctx)
        if summary not in used:
            break
    used.add(summary)
    if personal:
        ev.update(summary=summary, location=location.format(**ctx), description=None, attendees=[], organizer=None)
        return
    guests = [(first, last)] if summary.startswith("1:1") else rng.sample(people, rng.randint(2, 4))
    domain = company_domain(company) if "{company}" in summary else prm["owner_email"].split("@")[-1]
    attendees = [{"name": f"{f} {l}", "email": email_for(rng, f, l, domain)} for f, l in guests]
    ev.update(
        summary=summary,
        location=rng.choice(vocab.MEETING_ROOMS),
        description=f"Agenda: {summary.lower()}. Please review the shared notes beforehand.",
        attendees=attendees,
        organizer={"name": prm["owner_name"], "email": prm["owner_email"]},
    )


def _stamp(dt: datetime, utc: bool) -> str:
    return iso(dt).replace("-", "").replace(":", "") + ("Z" if utc else "")


def _render(rng: random.Random, events: list[dict], prm: dict) -> Generated:
    utc = bool(prm["utc"])
    start = parse_date(prm["start_date"], "start_date")
    dtstamp = iso(start - timedelta(days=7)).replace("-", "") + "T090000Z"
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//ClawGym//Mock Calendar 1.0//EN",
        "CALSCALE:GREGORIAN",
        "METHOD:PUBLISH",
        f"X-WR-CALNAME:{escape(prm['calendar_name'])}",
    ]
    out = []
    for ev in events:
        uid = f"{rng.getrandbits(64):016x}@calendar.example.com"
        lines += ["BEGIN:VEVENT", f"UID:{uid}", f"DTSTAMP:{dtstamp}"]
        if ev["all_day"]:
            s, e = iso(ev["_s"].date()), iso(ev["_e"].date())
            lines += [f"DTSTART;VALUE=DATE:{s.replace('-', '')}", f"DTEND;VALUE=DATE:{e.replace('-', '')}"]
        else:
            s, e = iso(ev["_s"]) + ("Z" if utc else ""), iso(ev["_e"]) + ("Z" if utc else "")
            lines += [f"DTSTART:{_stamp(ev['_s'], utc)}", f"DTEND:{_stamp(ev['_e'], utc)}"]
        lines.append(f"SUMMARY:{escape(ev['summary'])}")
        if ev["location"]:
            lines.append(f"LOCATION:{escape(ev['location'])}")
        if ev["description"]:
            lines.append(f"DESCRIPTION:{escape(ev['description'])}")
        if ev["organizer"]:
            lines.append(f"ORGANIZER;CN={param(ev['organizer']['name'])}:mailto:{ev['organizer']['email']}")
        for a in ev["attendees"]:
            lines.append(
                f"ATTENDEE;CN={param(a['name'])};ROLE=REQ-PARTICIPANT;PARTSTAT="
                f"{rng.choice(('ACCEPTED', 'ACCEPTED', 'TENTATIVE', 'NEEDS-ACTION'))}:mailto:{a['email']}"
            )
        lines += ["STATUS:CONFIRMED", "TRANSP:" + ("TRANSPARENT" if ev["all_day"] else "OPAQUE"), "END:VEVENT"]
        out.append(
            {
                "uid": uid,
                "summary": ev["summary"],
                "start": s,
                "end": e,
                "all_day": ev["all_day"],
                "location": ev["location"],
                "description": ev["description"],
                "organizer": ev["organizer"],
                "attendees": ev["attendees"],
                "_ev": ev,
            }
        )
    lines.append("END:VCALENDAR")
    timed = [x for x in out if not x["all_day"]]
    conflicts = [
        {"uids": [a["uid"], b["uid"]], "summaries": [a["summary"], b["summary"]], "date": iso(a["_ev"]["_s"].date())}
        for i, a in enumerate(timed)
        for b in timed[i + 1 :]
        if _overlaps(a["_ev"], b["_ev"])
    ]
    for x in out:
        del x["_ev"]
    text = "\r\n".join(fold(line) for line in lines) + "\r\n"
    return Generated(
        content=text.encode(), data={"calendar": prm["calendar_name"], "events": out, "conflicts": conflicts}
    )
