"""`vcf_contacts`: an address book as vCard 3.0, optionally with duplicate people to merge."""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import People, company_domain, email_for, iso, make_schema, p, p_count, phone
from .ics import escape, fold


@register("generator", "vcf_contacts")
class VcfContacts:
    """vCard 3.0 address book (CRLF line endings, one VCARD per contact).

    data: list in file order of {uid, name, first_name, last_name, email, phone, org, title, city,
    birthday (YYYY-MM-DD or null), note (or null), duplicate_of (index of the earlier card for
    the same person, else null)}. A duplicate has the same name but a different email or phone,
    and may lack org/title.
    """

    name = "vcf_contacts"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "count": p_count("Number of cards (including duplicates).", 10, minimum=1, maximum=2000),
            "duplicates": p_count("How many cards repeat an earlier person.", 0, maximum=1000),
            "birthday_ratio": p("number", "Share of contacts with a birthday.", 0.5, minimum=0, maximum=1),
            "work_ratio": p(
                "number", "Share of contacts with a work email at their company.", 0.6, minimum=0, maximum=1
            ),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        n, dupes = int(params["count"]), int(params["duplicates"])
        if dupes * 2 > n:
            raise ClawgymError("vcf_contacts: duplicates must be at most half of count")
        cards: list[dict[str, Any]] = []
        for first, last in People(rng).many(n - dupes):
            org = rng.choice(vocab.COMPANIES)
            work = rng.random() < float(params["work_ratio"])
            bday = (
                iso(date(rng.randint(1958, 2004), rng.randint(1, 12), rng.randint(1, 28)))
                if rng.random() < float(params["birthday_ratio"])
                else None
            )
            cards.append(
                {
                    "name": f"{first} {last}",
                    "first_name": first,
                    "last_name": last,
                    "email": email_for(rng, first, last, company_domain(org) if work else None),
                    "phone": phone(rng),
                    "org": org,
                    "title": rng.choice(vocab.JOB_TITLES),
                    "city": rng.choice(vocab.CITIES),
                    "birthday": bday,
                    "note": rng.choice(
                        (
                            None,
                            None,
                            None,
                            f"Met at the {rng.choice(vocab.CITIES)} conference",
                            "Prefers text messages",
                            "Introduced by a colleague",
                        )
                    ),
                    "duplicate_of": None,
                }
            )
        for orig in rng.sample(cards, dupes):
            dup = dict(orig, duplicate_of=orig)
            if rng.random() < 0.5:
                dup["email"] = email_for(rng, orig["first_name"], orig["last_name"])
            else:
                dup["phone"] = phone(rng)
            if rng.random() < 0.5:
                dup.update(org=None, title=None)
            dup["note"] = None
            pos = next(i for i, c in enumerate(cards) if c is orig)
            cards.insert(rng.randint(pos + 1, len(cards)), dup)
        index_of = {id(c): i for i, c in enumerate(cards)}
        lines: list[str] = []
        for c in cards:
            c["uid"] = f"{rng.getrandbits(64):016x}"
            if c["duplicate_of"] is not None:
                c["duplicate_of"] = index_of[id(c["duplicate_of"])]
            lines += [
                "BEGIN:VCARD",
                "VERSION:3.0",
                f"UID:{c['uid']}",
                f"N:{escape(c['last_name'])};{escape(c['first_name'])};;;",
                f"FN:{escape(c['name'])}",
            ]
            if c["org"]:
                lines += [f"ORG:{escape(c['org'])}", f"TITLE:{escape(c['title'])}"]
            lines += [
                f"EMAIL;TYPE=INTERNET:{c['email']}",
                f"TEL;TYPE=CELL:{c['phone']}",
                f"ADR;TYPE=HOME:;;;{escape(c['city'])};;;",
            ]
            if c["birthday"]:
                lines.append(f"BDAY:{c['birthday']}")
            if c["note"]:
                lines.append(f"NOTE:{escape(c['note'])}")
            lines.append("END:VCARD")
        keys = (
            "uid",
            "name",
            "first_name",
            "last_name",
            "email",
            "phone",
            "org",
            "title",
            "city",
            "birthday",
            "note",
            "duplicate_of",
        )
        data = [{k: c[k] for k in keys} for c in cards]
        return Generated(content=("\r\n".join(fold(x) for x in lines) + "\r\n").encode(), data=data)
