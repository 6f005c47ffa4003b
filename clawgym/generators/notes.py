"""`markdown_notes` (meeting / project / journal notes) and `todo_list` (markdown checklist)."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import People, fill, iso, make_schema, p, p_count, p_date, p_strings, parse_date


class Doc:
    """Collects markdown lines and the matching structured view."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.sections: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []

    def heading(self, text: str, level: int = 2, **extra: Any) -> None:
        if self.lines:
            self.lines.append("")
        self.lines.append(f"{'#' * level} {text}")
        self.sections.append({"heading": text, "level": level, "items": [], "text": None, **extra})

    def para(self, text: str) -> None:
        self.lines.append(text)
        sec = self.sections[-1]
        sec["text"] = text if sec["text"] is None else sec["text"] + "\n" + text

    def item(self, text: str, marker: str = "-") -> None:
        self.lines.append(f"{marker} {text}")
        self.sections[-1]["items"].append(text)

    def action(self, owner: str | None, text: str, due: date | None, done: bool) -> None:
        body = (f"{owner}: " if owner else "") + text + (f" by {iso(due)}" if due else "")
        self.item(f"[{'x' if done else ' '}] {body}")
        self.actions.append(
            {
                "owner": owner,
                "text": text,
                "due": iso(due) if due else None,
                "done": done,
                "line": len(self.lines),
                "section": self.sections[-1]["heading"],
            }
        )

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()


def _actions(rng: random.Random, doc: Doc, owners: list[str | None], n: int, day: date, prm: dict, **ctx: Any) -> None:
    texts = rng.sample(vocab.ACTION_TEMPLATES, min(n, len(vocab.ACTION_TEMPLATES)))
    while len(texts) < n:
        texts.append(rng.choice(vocab.ACTION_TEMPLATES))
    for tpl in texts:
        due = day + timedelta(days=rng.randint(1, 14)) if rng.random() < prm["due_ratio"] else None
        doc.action(rng.choice(owners), fill(tpl, rng, **ctx), due, rng.random() < prm["done_ratio"])


def _meeting(rng: random.Random, prm: dict, day: date, doc: Doc) -> dict:
    people = [f"{f} {l}" for f, l in People(rng, unique_first=True).many(int(prm["attendees"]))]
    project = prm["project"] or rng.choice(vocab.PROJECTS)
    title = prm["title"] or f"{rng.choice(vocab.MEETING_TYPES)}: {project}"
    topics = rng.sample(vocab.DISCUSSION_TOPICS, min(int(prm["topics"]), len(vocab.DISCUSSION_TOPICS)))
    ctx = {"project": project, "date": iso(day + timedelta(days=rng.randint(7, 30)))}
    hour = rng.randint(9, 16)
    doc.heading(title, 1)
    doc.lines += [
        f"Date: {iso(day)} ({vocab.WEEKDAYS[day.weekday()]})",
        f"Time: {hour:02d}:00-{hour + 1:02d}:00",
        f"Attendees: {', '.join(people)}",
    ]
    doc.heading("Agenda")
    for i, (topic, _) in enumerate(topics):
        doc.item(topic, f"{i + 1}.")
    doc.heading("Notes")
    for topic, bullets in topics:
        doc.heading(topic, 3)
        for b in rng.sample(bullets, rng.randint(2, len(bullets))):
            doc.item(fill(b, rng, **ctx))
    decisions = rng.sample(vocab.DECISION_TEMPLATES, rng.randint(1, 2))
    doc.heading("Decisions")
    for d in decisions:
        doc.item(fill(d, rng, **ctx))
    doc.heading("Action Items")
    _actions(rng, doc, [x.split()[0] for x in people], int(prm["action_items"]), day, prm, **ctx)
    return {"title": title, "project": project, "attendees": people, "decisions": doc.sections[-2]["items"]}


def _project(rng: random.Random, prm: dict, day: date, doc: Doc) -> dict:
    people = [f"{f} {l}" for f, l in People(rng, unique_first=True).many(int(prm["attendees"]))]
    project = prm["project"] or rng.choice(vocab.PROJECTS)
    goal = rng.choice(vocab.PROJECT_GOALS)
    title = prm["title"] or f"Project {project}: {goal}"
    status = rng.choice(("on track", "on track", "at risk", "delayed"))
    doc.heading(title, 1)
    doc.lines.append(f"Last updated: {iso(day)}")
    doc.heading("Status")
    doc.para(f"Overall status: {status}. Owner: {people[0]}. Team: {', '.join(people[1:]) or 'none'}.")
    doc.heading("Milestones")
    ms_day = day - timedelta(days=rng.randint(10, 30))
    milestones = []
    stages = (
        "Kickoff",
        "Requirements signed off",
        "Design freeze",
        "Beta release",
        "User testing",
        "Launch",
        "Retrospective",
    )
    for k in sorted(rng.sample(range(len(stages)), 4)):
        name = stages[k]
        ms_day += timedelta(days=rng.randint(5, 15))
        state = "done" if ms_day < day else "planned"
        milestones.append({"date": iso(ms_day), "name": name, "status": state})
        doc.item(f"{iso(ms_day)}: {name} ({state})")
    ctx = {"project": project}
    doc.heading("Risks")
    for b in rng.sample(dict(vocab.DISCUSSION_TOPICS)["Risks"], 2):
        doc.item(fill(b, rng, **ctx))
    doc.heading("Action Items")
    _actions(rng, doc, [x.split()[0] for x in people], int(prm["action_items"]), day, prm, **ctx)
    return {"title": title, "project": project, "attendees": people, "status": status, "milestones": milestones}


def _journal(rng: random.Random, prm: dict, day: date, doc: Doc) -> dict:
    title = prm["title"] or f"Journal - {vocab.MONTHS[day.month - 1]} {day.year}"
    doc.heading(title, 1)
    todos = int(prm["action_items"])
    n = int(prm["entries"])
    per_day = [todos // n + (1 if i < todos % n else 0) for i in range(n)]
    for i in range(n):
        d = day + timedelta(days=i)
        doc.heading(f"{iso(d)} ({vocab.WEEKDAYS[d.weekday()]})", 2, date=iso(d))
        for b in rng.sample(vocab.JOURNAL_BULLETS, rng.randint(2, 3)):
            doc.item(fill(b, rng))
        texts = rng.sample(vocab.TODO_TEXTS["Errands"] + vocab.TODO_TEXTS["Home"], per_day[i])
        for t in texts:
            due = d + timedelta(days=rng.randint(1, 10)) if rng.random() < prm["due_ratio"] else None
            text = fill(t, rng)
            doc.action(None, text[0].lower() + text[1:], due, rng.random() < prm["done_ratio"])
    return {"title": title, "project": None, "attendees": []}


@register("generator", "markdown_notes")
class MarkdownNotes:
    """Markdown meeting notes, project status notes or a journal, with action items.

    Action items read `- [ ] Owner: text by YYYY-MM-DD` (`[x]` when done; owner and due optional;
    journals have no owner). data: {kind, title, date, project, attendees, sections: [{heading,
    level, items, text, date (journal only)}], action_items: [{owner, text, due, done, line, section}]} plus
    `decisions` (meeting) or `status`/`milestones` (project).
    """

    name = "markdown_notes"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "kind": p("string", "Kind of notes.", "meeting", enum=["meeting", "project", "journal"]),
            "date": p_date("Meeting date / last update / first journal day (YYYY-MM-DD).", "2026-03-02"),
            "title": p(["string", "null"], "Title (null: generated).", None),
            "project": p(["string", "null"], "Project name (null: drawn).", None),
            "attendees": p_count("meeting/project: number of people (distinct first names).", 4, minimum=1, maximum=20),
            "topics": p_count("meeting: discussion topics.", 3, minimum=1, maximum=7),
            "entries": p_count("journal: number of daily entries.", 5, minimum=1, maximum=60),
            "action_items": p_count("Number of action items (journal: to-dos spread over entries).", 4, maximum=16),
            "done_ratio": p("number", "Share of action items already done.", 0.25, minimum=0, maximum=1),
            "due_ratio": p("number", "Share of action items with a due date.", 0.75, minimum=0, maximum=1),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        day = parse_date(params["date"], "date")
        doc = Doc()
        kind = params["kind"]
        if kind == "journal" and int(params["action_items"]) > 13 * int(params["entries"]):
            raise ClawgymError("markdown_notes: too many action items for the number of entries")
        extra = {"meeting": _meeting, "project": _project, "journal": _journal}[kind](rng, params, day, doc)
        data = {"kind": kind, "date": iso(day), **extra, "sections": doc.sections, "action_items": doc.actions}
        return Generated(content=doc.text(), data=data)


@register("generator", "todo_list")
class TodoList:
    """Markdown checklist grouped by section.

    Items read `- [ ] Text (due YYYY-MM-DD, high priority)` (parenthesis only when there is a due
    date or a non-normal priority). data: {title, sections: [names], items: [{section, text, due,
    priority, done, line}]}.
    """

    name = "todo_list"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "title": p("string", "Top heading.", "To-do"),
            "sections": p_strings(
                "Section names; known ones (" + ", ".join(vocab.TODO_TEXTS) + ") get matching items, others get a mix.",
                ["Work", "Home", "Errands"],
                minItems=1,
            ),
            "items": p_count("Total number of items.", 10, minimum=1, maximum=200),
            "start_date": p_date("First possible due date (YYYY-MM-DD).", "2026-03-02"),
            "days": p_count("Due dates fall in [start_date, start_date+days-1].", 21, minimum=1, maximum=3660),
            "done_ratio": p("number", "Share of items checked off.", 0.3, minimum=0, maximum=1),
            "due_ratio": p("number", "Share of items with a due date.", 0.6, minimum=0, maximum=1),
            "priorities": p("boolean", "Mark some items low/high priority (others are normal).", True),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        start = parse_date(params["start_date"], "start_date")
        sections = list(params["sections"])
        n = int(params["items"])
        mixed = [t for texts in vocab.TODO_TEXTS.values() for t in texts]
        lines = [f"# {params['title']}"]
        items: list[dict[str, Any]] = []
        counts = [n // len(sections) + (1 if i < n % len(sections) else 0) for i in range(len(sections))]
        for sec, count in zip(sections, counts):
            lines += ["", f"## {sec}"]
            pool = list(vocab.TODO_TEXTS.get(sec, mixed))
            picks = rng.sample(pool, min(count, len(pool)))
            picks += [rng.choice(pool) for _ in range(count - len(picks))]
            for tpl in picks:
                text = fill(tpl, rng)
                due = (
                    start + timedelta(days=rng.randrange(int(params["days"])))
                    if rng.random() < params["due_ratio"]
                    else None
                )
                prio = rng.choices(("low", "normal", "high"), (1, 3, 1))[0] if params["priorities"] else "normal"
                done = rng.random() < params["done_ratio"]
                notes = ([f"due {iso(due)}"] if due else []) + ([f"{prio} priority"] if prio != "normal" else [])
                lines.append(f"- [{'x' if done else ' '}] {text}" + (f" ({', '.join(notes)})" if notes else ""))
                items.append(
                    {
                        "section": sec,
                        "text": text,
                        "due": iso(due) if due else None,
                        "priority": prio,
                        "done": done,
                        "line": len(lines),
                    }
                )
        data = {"title": params["title"], "sections": sections, "items": items}
        return Generated(content=("\n".join(lines) + "\n").encode(), data=data)
