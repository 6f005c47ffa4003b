"""The message deliverable: an email draft to a named person with the count (and maybe the total) of
the rows the pipeline ends with."""

from __future__ import annotations

from .data import people
from .state import fmt, form_code, label, num
from .delivered import Deliver, Delivered, exists_check


class DraftEmail(Deliver):
    name = "draft_email"

    def plan(self, s, rng):
        if not s.rows:
            return None
        name = people(rng, 1)[0]
        org = rng.choice(["northwind", "brightside", "harbourworks", "cedarline", "meridian", "fernhill", "quayside"])
        email = f"{name.split()[0].lower()}.{name.split()[1].lower()}@{org}.example"
        numbers = [c for c in s.columns if s.types.get(c) in ("money", "hours")]
        col = rng.choice(numbers) if numbers else None
        stem = rng.choice(
            ["email_draft", "message_to_" + name.split()[0].lower(), "draft", "note_for_" + name.split()[0].lower()]
        )
        subject = rng.choice(
            [
                f"{s.domain.noun[1].capitalize()} update",
                f"The {s.domain.noun[1]} you asked about",
                f"Quick numbers on {s.domain.noun[1]}",
            ]
        )
        return {"name": name, "email": email, "col": col, "path": f"{s.out_dir}/{stem}.txt", "subject": subject}

    def deliver(self, s, p):
        count = len(s.rows)
        facts = [str(count)]
        what = f"number of {s.domain.noun[1]} ({count} here)"
        code = [f"how_many = len({s.var})"]
        body = "f'There are {how_many} " + s.domain.noun[1] + ".'"
        if p["col"]:
            kind = s.types[p["col"]]
            facts.append(fmt(sum(num(r[p["col"]]) for r in s.rows), kind))
            what = f"number of {s.domain.noun[1]} and their total {label(p['col'])}"
            summed = f"sum(float({s.it}[{p['col']!r}]) for {s.it} in {s.var})"
            code.append(f"total = {form_code(kind, summed)}")
            body = "f'There are {how_many} " + s.domain.noun[1] + f", {label(p['col'])} {{total}} in all.'"
        head = f"To: {p['name']} <{p['email']}>\\nSubject: {p['subject']}\\n\\n"
        code += s.style.write_text(p["path"], f"'{head}' + {body} + '\\n'")
        checks = [
            exists_check(p["path"]),
            {
                "type": "text_contains",
                "name": "addressed right, with the numbers",
                "path": p["path"],
                "contains": [f"To: {p['name']} <{p['email']}>", f"Subject: {p['subject']}"] + facts,
                "weight": 2,
            },
        ]
        return Delivered(
            p["path"],
            checks,
            code,
            {"path": p["path"], "to": f"{p['name']} <{p['email']}>", "what": what, "subject": p["subject"]},
            ["email-draft"],
        )
