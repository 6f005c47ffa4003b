"""Rubrics for the benchmark's hybrid instances, generated from each instance's own content.

Hybrid instances are those whose request includes writing for people (reminders, follow-ups,
replies, updates, notes, a blog post): the code checks grade the facts and the structure, and a
judge grades what only reading can tell (tone, completeness of each draft, facts stated in prose).
One reviewed template per task family fills in the instance's names, paths and expected items
from its concrete spec (the checks carry the expected values), so the same instance always gets
the same rubric. Families without a template stay code-only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import yaml

from ..errors import ClawgymError

RUBRIC_WEIGHT = 0.3
_ALT = re.compile(r"\(\?m\)\^##\\s\+\((.*)\)\\s\*\$")
_NOT_HEADED = re.compile(r"\(\?!\.\*\^##\\s\+\(\?:(.*?)\)\\s\*\$\)")  # (?!.*^##\s+(?:a|b)\s*$)


class Content:
    """What a template reads: the concrete spec's checks (found by their names, which a family
    keeps across instances while paths vary) and the persona."""

    def __init__(self, spec: dict[str, Any], persona: dict[str, Any]):
        self.spec, self.persona = spec, persona
        self.checks = [c for c in spec.get("checks", []) if isinstance(c, dict)]
        self.name = str(persona.get("full_name", "the user"))
        self.first = self.name.split()[0]

    def check(self, name: str) -> dict[str, Any]:
        """The first check whose name contains `name`."""
        for c in self.checks:
            if name in str(c.get("name", "")):
                return c
        raise LookupError(f"no check named like {name!r}")

    def path(self, name: str) -> str:
        return str(self.check(name)["path"])

    def excluded(self, name: str) -> list[str]:
        """Names a check forbids as `## <name>` headings (a `max_count: 0` alternation, or a negative
        lookahead `(?!.*^##\\s+(?:a|b)\\s*$)` in an all-or-nothing pattern)."""
        pattern = str(self.check(name).get("pattern", ""))
        m = _ALT.match(pattern) or _NOT_HEADED.search(pattern)
        return [re.sub(r"\\(.)", r"\1", n) for n in m.group(1).split("|")] if m else []


_ITEM = re.compile(r"\(\?<!\[\\w-\]\)(.+?)\(\?!\[\\w-\]\)|\\b([^\\]+?)\\b\Z")


def _listed(check: dict[str, Any]) -> list[str]:
    """What a section check requires to be listed: its `contains`, or the item each of its patterns
    ends on (`...^[-*+]...(?<![\\w-])NAME(?![\\w-])` or `...\\bID\\b`)."""
    if check.get("contains"):
        return [str(c) for c in check["contains"]]
    patterns = check.get("pattern") or []
    out = []
    for p in patterns if isinstance(patterns, list) else [patterns]:
        m = _ITEM.search(str(p))
        if m and "#" in str(p):
            out.append(re.sub(r"\\(.)", r"\1", m.group(1) or m.group(2)))
    return out


def _list(items: list[str], limit: int = 8) -> str:
    items = [str(i) for i in items]
    if not items:
        return "none"
    text = ", ".join(items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _invoice_reminders(i: Content) -> list[str]:
    sections = i.check("one reminder per late client")
    current = i.excluded("none for clients who are only current")
    return [
        f"Each reminder in {sections['path']} is polite and professional: it addresses the client, states what is "
        f"owed without blame or threats, and is signed off by {i.first}.",
        f"The reminder to each late client ({_list(sections['headings'])}) gives, for every overdue invoice it names, "
        f"the amount and any late fee, and these agree with {i.path('unpaid invoices aged')}.",
        "Every reminder ends with a clear request: pay by a stated or prompt date, or get in touch if the "
        "payment has already been made.",
        "The reminders read as drafts for the user to send (nothing claims they were sent)"
        + (f", and there is no reminder to {_list(current)}, whose invoices are all current." if current else "."),
    ]


def _meeting_followups(i: Content) -> list[str]:
    sections = i.check("one follow-up per person")
    idle = i.excluded("none for the others")
    return [
        f"Each draft in {sections['path']} is a short, friendly follow-up addressed to one person by first name, "
        f"ready to send as written.",
        f"The draft for each of {_list(sections['headings'])} lists all of that person's open actions and only "
        f"theirs, each with its due date (or a clear note that it has none).",
        f"The drafts come from {i.name} (signed or clearly attributed) and do not claim they were sent.",
        "No completed action appears in any draft"
        + (f", and {_list(idle)} (no open actions) get no draft." if idle else "."),
    ]


def _inbox_replies(i: Content) -> list[str]:
    sections = i.check("one reply per message")
    subjects = sections["headings"]
    return [
        f"Each reply in {sections['path']} answers the specific message it is under (for a meeting request it "
        f"proposes or asks about a time, for a customer problem it acknowledges the problem and says what happens "
        f"next, for a personal note it responds in kind), not a generic acknowledgement.",
        f"The replies are short (a few sentences), courteous and written in the first person as {i.name}.",
        f"There is exactly one reply for each of the {len(subjects)} messages that need an answer "
        f"({_list(subjects, 5)}), each with the sender's address on its To: line.",
        "No reply promises or states facts the messages do not support (no invented dates, prices, refunds or "
        "order details).",
    ]


def _shift_message(i: Content) -> list[str]:
    check = i.check("message lists every short shift")
    return [
        f"The message in {check['path']} is friendly and encouraging, suitable to send to the whole volunteer group.",
        f"Every shift that is still short ({_list(check.get('contains', []))}) has a bullet giving its date, time, "
        f"role and how many people are still needed, matching {i.path('coverage per shift')}.",
        "No volunteer is named or singled out anywhere in the message.",
        "The message tells readers how to fill a slot (reply, sign up or contact the coordinator).",
    ]


def _support_update(i: Content) -> list[str]:
    urgent = i.check("ticket needing attention")
    unassigned = _listed(i.check("unassigned ticket"))
    return [
        f"{urgent['path']} leads with the week's numbers under `## This week` (opened, solved, backlog), and they "
        f"agree with {i.path('week counts')}.",
        "`## Needs attention` names every urgent backlog ticket with its id and subject"
        + (f" ({_list(_listed(urgent))})" if _listed(urgent) else ", or says plainly that there is none")
        + ".",
        f"`## Unassigned` lists the unassigned tickets ({_list(unassigned)}) and nothing else.",
        "The update is concise and can be pasted into a team channel as it is (no raw JSON or CSV).",
    ]


def _access_actions(i: Content) -> list[str]:
    suspend = i.check("every account to suspend")
    mfa = _listed(i.check("every admin without MFA"))
    names = _listed(suspend)
    return [
        f"{suspend['path']} is written for the system's administrator: a short, professional note saying what to "
        f"do with each account, without review details they do not need.",
        f"`## Suspend` lists exactly the {len(names)} accounts flagged as leaver or dormant ({_list(names, 6)}) "
        f"and nobody else.",
        "`## Enable MFA` lists "
        + (f"each admin account without MFA ({_list(mfa)})" if mfa else "no account, or says there is none to fix")
        + ".",
        f"Nothing in the note contradicts {i.path('one row per account and reason')} or the review's JSON summary.",
    ]


def _availability(i: Content) -> list[str]:
    check = i.check("service below target listed")
    below = _listed(check)
    return [
        f"{check['path']} opens with two or three sentences stating the month, the availability target and how "
        f"the services did overall, fit to paste into the monthly update.",
        "`## Below target` lists "
        + (
            f"each service under target ({_list(below)}) with its uptime"
            if below
            else "no service, or says every service met the target"
        )
        + f", as in {i.path('per-service uptime')}.",
        f"Every figure in the prose agrees with {i.path('per-service uptime')} and {i.path('month summary')}.",
        "The tone is factual: it neither hides nor exaggerates the services that missed the target.",
    ]


def _blog_post(i: Content) -> list[str]:
    check = i.check("kept sections")
    sections = [h for h in check["headings"] if h != "Sources"]
    return [
        f"Each kept section of {check['path']} ({_list(sections)}) is developed into at least a short paragraph "
        f"of flowing prose from its outline bullets, not left as copied fragments.",
        f"The post reads in a consistent first-person voice, as {i.name} would write for their own blog.",
        "Each fact taken from input/facts.csv sits in a sentence that makes sense in context, with the value "
        "exactly as written in the sheet.",
        "Nothing from bullets marked [cut] or from the skipped section appears, and the post does not invent "
        "figures that are not in the outline or the facts sheet.",
    ]


def _release_notes(i: Content) -> list[str]:
    section = i.check("release section lists every feat")
    return [
        f"The new `## {section['heading']}` section of {section['path']} reads as release notes a user can follow: "
        f"one bullet per change in plain words (the commit description, no hashes, type prefixes or merge lines).",
        "Breaking changes (if any) are under `### Changed`, each starting with `BREAKING:`, and say what changes "
        "for users; features are under `### Added` and fixes under `### Fixed`, with no empty subsection.",
        "The new section follows the style of the older sections (heading levels, bullet format, date format) and "
        "sits right below `## [Unreleased]`, which is kept.",
        f"The version and the counts in {i.path('release summary')} agree with what the new section lists.",
    ]


def _composed(i: Content) -> list[str]:
    """Composed tasks (compose-* families) with writing for people: an email draft, a report."""
    out: list[str] = []
    email = next((c for c in i.checks if c.get("name") == "addressed right, with the numbers"), None)
    report = next((c for c in i.checks if c.get("name") == "the heading and every line of the report"), None)
    if email is None and report is None:
        raise LookupError("no email draft or report to judge")
    if email is not None:
        to = str(email["contains"][0]).removeprefix("To: ")
        facts = [str(f) for f in email["contains"][2:]]
        out += [
            f"{email['path']} is a complete short email to {to}: the To: and Subject: lines, a greeting, the "
            f"figures in a sentence or two, and a sign-off from {i.first}.",
            f"The figures it states ({_list(facts)}) are the ones the request asked for, and it adds no "
            f"number or claim that the data does not support.",
            "Its tone suits a note to a colleague or client: plain, friendly and to the point.",
        ]
    if report is not None:
        out += [
            f"{report['path']} reads as a short report a person can use as it is: the heading, one line per "
            f"group and the final line, with no placeholders, code or stray output left in.",
            f"Every figure in {report['path']} agrees with the data it summarises; none is rounded differently "
            f"from the request or invented.",
        ]
    return out


TEMPLATES: dict[str, Callable[[Content], list[str]]] = {
    "invoice-aging-reminders": _invoice_reminders,
    "meeting-followup-drafts": _meeting_followups,
    "inbox-triage-digest": _inbox_replies,
    "shift-coverage-gaps": _shift_message,
    "support-weekly-status": _support_update,
    "stale-access-review": _access_actions,
    "uptime-sla-check": _availability,
    "blog-post-from-outline": _blog_post,
    "release-from-commit-log": _release_notes,
}


def persona_data(name: str, library_root: Path) -> dict[str, Any]:
    path = library_root / "personas" / f"{name}.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {"full_name": name}


def rubric_for(family: str, spec: dict[str, Any], library_root: Path, where: str = "") -> list[dict[str, Any]] | None:
    """The rubric for an instance of `family` (None for code-only families)."""
    template = TEMPLATES.get(family) or (_composed if family.startswith("compose-") else None)
    if template is None:
        return None
    if template is _composed and not any(
        c.get("name") in ("addressed right, with the numbers", "the heading and every line of the report")
        for c in spec.get("checks", [])
        if isinstance(c, dict)
    ):
        return None  # a composed task with no writing for people stays code-only
    try:
        criteria = template(Content(spec, persona_data(str(spec.get("persona", "")), library_root)))
    except (LookupError, KeyError, TypeError) as exc:
        raise ClawgymError(
            f"the rubric template of family {family} does not fit this spec: {exc}",
            file=where or None,
            hint="fix the template in clawgym/bench/rubrics.py, or add it code-only with --no-rubric",
        )
    return [{"criterion": c, "weight": 1} for c in criteria]
