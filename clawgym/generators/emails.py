"""`eml_emails`: an inbox of RFC 5322 messages (one .eml per message, or a single mbox)."""

from __future__ import annotations

import io
import random
from datetime import date, datetime, timedelta, timezone
from email import policy
from email.generator import BytesGenerator
from email.header import Header
from email.message import Message
from email.utils import format_datetime, formataddr, parseaddr
from typing import Any

from ..registry import register
from . import vocab
from .base import Generated
from .common import (
    MONTH_ABBR,
    company_domain,
    email_for,
    fmt_money,
    iso,
    make_schema,
    money,
    p,
    p_count,
    p_date,
    p_strings,
    parse_date,
    People,
    rand_cents,
    slug,
)

TOPICS = ("invoice", "meeting", "newsletter", "support", "personal", "shipping", "travel")
HEADLINES = (
    "Five tools that will change how you plan your week",
    "The quiet return of the paper notebook",
    "What we learned from 1,000 customer interviews",
    "Spring events you should not miss",
    "A beginner's guide to interval training",
    "Why small teams ship faster",
    "This week in AI: smaller models, bigger results",
    "How to run a meeting people enjoy",
)
PERSONAL = (
    (
        "Dinner on {day}?",
        True,
        "Are you free for dinner on {when}? We were thinking of trying the new place near {cafe} "
        "around 19:30. Let me know if that works!",
    ),
    (
        "Photos from the weekend",
        False,
        "I finally sorted the photos from the weekend and uploaded them to the shared album. "
        "The ones from the lake came out great. No need to reply, just enjoy!",
    ),
    (
        "Can you help with the move on {day}?",
        True,
        "We are moving flats on {when} and could really use an extra pair of hands in the "
        "morning. Pizza is on us. Would you be able to make it?",
    ),
)


class _Policy(policy.Compat32):
    """compat32 that skips the (slow) `Header` folding machinery for short ASCII headers."""

    def fold_binary(self, name: str, value: Any) -> bytes:
        if isinstance(value, str) and value.isascii() and len(name) + len(value) < 76 and "\n" not in value:
            return f"{name}: {value}{self.linesep}".encode("ascii")
        return super().fold_binary(name, value)


SMTP32 = _Policy(linesep="\r\n")
MBOX32 = _Policy()


def _addr(name: str, addr: str) -> str:
    """`Name <addr>`, quoted as needed (headers RFC 2047-encode non-ASCII names)."""
    return formataddr((name, addr))


def _message(sender: str, to: str, subject: str, date_header: str, msg_id: str, body: str) -> Message:
    """A single-part text/plain message (compat32 `Message`: much faster than `EmailMessage`)."""
    msg = Message()
    msg["From"] = sender if sender.isascii() else formataddr(parseaddr(sender), charset="utf-8")
    msg["To"] = to if to.isascii() else formataddr(parseaddr(to), charset="utf-8")
    msg["Subject"] = subject if subject.isascii() else Header(subject, "utf-8")
    msg["Date"] = date_header
    msg["Message-ID"] = msg_id
    msg["MIME-Version"] = "1.0"
    msg["Content-Type"] = 'text/plain; charset="utf-8"'
    msg["Content-Transfer-Encoding"] = "7bit" if body.isascii() else "8bit"
    msg.set_payload(body if body.isascii() else body.encode().decode("ascii", "surrogateescape"))
    return msg


def _wrap(line: str, width: int = 72) -> str:
    """Greedy word wrap (like textwrap.fill for plain prose, but much faster)."""
    if len(line) <= width:
        return line
    out, cur = [], ""
    for word in line.split():
        if cur and len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    out.append(cur)
    return "\n".join(out)


def _nice(d: date) -> str:
    return f"{vocab.WEEKDAYS[d.weekday()]}, {vocab.MONTHS[d.month - 1]} {d.day}"


def _workday_after(rng: random.Random, d: date, lo: int, hi: int) -> date:
    out = d + timedelta(days=rng.randint(lo, hi))
    while out.weekday() >= 5:
        out += timedelta(days=1)
    return out


def _money_text(cents: int, currency: str) -> str:
    return f"${fmt_money(cents, True)}" if currency == "USD" else f"{currency} {fmt_money(cents, True)}"


def _topic(rng: random.Random, topic: str, sent: date, owner: str, prm: dict, people: People) -> dict[str, Any]:
    """Sender, subject, body paragraphs and extracted facts for one message."""
    cur = prm["currency"]
    first, last = people.one()
    owner_domain = prm["owner_email"].split("@")[-1]
    m: dict[str, Any] = {"amounts": [], "dates": [], "details": {}, "needs_reply": False}
    sign = [f"Best regards,\n{first} {last}"]
    if topic == "invoice":
        company = rng.choice(vocab.COMPANIES)
        inv, cents = f"INV-{rng.randint(1000, 9999)}", rand_cents(rng, 80, 4800)
        due = sent + timedelta(days=rng.choice((14, 30)))
        m.update(
            from_name=f"{company} Billing",
            from_email=f"billing@{company_domain(company)}",
            subject=rng.choice(
                (f"Invoice {inv} from {company}", f"Your {company} invoice {inv}", f"Payment due: invoice {inv}")
            ),
            amounts=[money(cents)],
            dates=[iso(due)],
            details={"invoice_id": inv, "vendor": company, "amount": money(cents), "currency": cur, "due": iso(due)},
        )
        paras = [
            f"Hi {owner},",
            f"Please find below the details of invoice {inv} for "
            f"{rng.choice(('consulting services', 'your monthly plan', 'the catering order', 'design work'))}.",
            f"Invoice number: {inv}\nAmount due: {_money_text(cents, cur)}\nDue date: {iso(due)}",
            "Payment can be made by bank transfer to the account on file. Let us know if you have any questions.",
            f"Kind regards,\nAccounts Receivable\n{company}",
        ]
        sign = []
    elif topic == "meeting":
        project, goal = rng.choice(vocab.PROJECTS), rng.choice(vocab.PROJECT_GOALS)
        when = _workday_after(rng, sent, 1, 6)
        time, length = f"{rng.randint(9, 16):02d}:{rng.choice(('00', '30'))}", rng.choice((30, 45, 60))
        room = rng.choice(vocab.MEETING_ROOMS)
        m.update(
            from_name=f"{first} {last}",
            from_email=email_for(rng, first, last, owner_domain),
            subject=rng.choice(
                (f"Meeting request: {project} {goal}", f"Can we meet about {project}?", f"Time to discuss the {goal}?")
            ),
            needs_reply=True,
            dates=[iso(when)],
            details={"date": iso(when), "time": time, "duration_minutes": length, "location": room, "project": project},
        )
        paras = [
            f"Hi {owner},",
            f"Could we find some time to go over the {project} {goal}? Would "
            f"{_nice(when)} at {time} work for you? It should take about {length} minutes, and we "
            f"can use {room}.",
            "If that slot does not suit you, please suggest another time.",
        ]
        sign = [f"Thanks,\n{first}"]
    elif topic == "newsletter":
        name, addr = rng.choice(vocab.NEWSLETTERS)
        heads = rng.sample(HEADLINES, 3)
        m.update(
            from_name=name,
            from_email=addr,
            subject=f"{name}: {heads[0]}",
            details={"newsletter": name, "headlines": heads},
        )
        paras = [
            "Hello reader,",
            "Here is what we picked for you this week:",
            "\n".join(f"* {h}" for h in heads),
            f"You are receiving this because you subscribed to {name}. "
            f"Unsubscribe: https://{addr.split('@')[1]}/unsubscribe",
        ]
        sign = []
    elif topic == "support":
        subject, tag = rng.choice(vocab.TICKET_SUBJECTS)
        order = f"ORD-{rng.randint(10000, 99999)}"
        cents = rand_cents(rng, 15, 450)
        m.update(
            from_name=f"{first} {last}",
            from_email=email_for(rng, first, last),
            subject=f"{subject} (order {order})",
            needs_reply=True,
            amounts=[money(cents)],
            details={"order_id": order, "issue": tag, "order_total": money(cents)},
        )
        paras = [
            f"Hello {owner},",
            f"I am writing about order {order} ({_money_text(cents, cur)}). "
            f"{subject}{'' if subject.endswith('?') else '.'} I have tried again this morning and the problem is still there.",
            "Could you look into this and let me know what the next steps are?",
        ]
    elif topic == "personal":
        subject, reply, text = rng.choice(PERSONAL)
        when = sent + timedelta(days=rng.randint(2, 6))
        fill = {"day": vocab.WEEKDAYS[when.weekday()], "when": _nice(when), "cafe": rng.choice(vocab.CAFES)}
        m.update(
            from_name=f"{first} {last}",
            from_email=email_for(rng, first, last),
            subject=subject.format(**fill),
            needs_reply=reply,
            dates=[iso(when)] if "{when}" in text else [],
        )
        paras = [f"Hey {owner},", text.format(**fill)]
        sign = [f"Cheers,\n{first}"]
    elif topic == "shipping":
        store = rng.choice(("Summit Outdoor Gear", "Tidewater Supply", "Copperleaf Interiors", "Bluebird Bakery"))
        order, carrier = f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}", rng.choice(vocab.CARRIERS)
        eta, track = _workday_after(rng, sent, 2, 5), f"1Z{rng.getrandbits(40):010X}"
        m.update(
            from_name=store,
            from_email=f"orders@{company_domain(store)}",
            subject=f"Your order {order} has shipped",
            dates=[iso(eta)],
            details={"order_id": order, "carrier": carrier, "tracking": track, "eta": iso(eta)},
        )
        paras = [
            f"Hi {owner},",
            f"Good news: your order {order} is on its way with {carrier}.",
            f"Tracking number: {track}\nEstimated delivery: {_nice(eta)} ({iso(eta)})",
            f"Thank you for shopping with {store}.",
        ]
        sign = []
    else:  # travel
        airline, code = rng.choice(vocab.AIRLINES).split("/")
        src, dst = rng.sample(vocab.CITIES, 2)
        when = sent + timedelta(days=rng.randint(7, 40))
        flight, conf = f"{code}{rng.randint(100, 2999)}", f"{rng.getrandbits(30):08X}"[:6]
        dep, cents = f"{rng.randint(6, 21):02d}:{rng.choice(('05', '20', '35', '50'))}", rand_cents(rng, 120, 1400)
        m.update(
            from_name=airline,
            from_email=f"reservations@{slug(airline, '')}.com",
            subject=f"Booking confirmation {conf}: {src} to {dst}",
            amounts=[money(cents)],
            dates=[iso(when)],
            details={
                "confirmation": conf,
                "flight": flight,
                "date": iso(when),
                "departure": dep,
                "from_city": src,
                "to_city": dst,
                "amount": money(cents),
                "currency": cur,
            },
        )
        paras = [
            f"Dear {prm['owner_name']},",
            f"Thank you for booking with {airline}. Your trip is confirmed.",
            f"Confirmation code: {conf}\nFlight: {flight}\nDate: {_nice(when)} ({iso(when)})\n"
            f"Departure: {dep} from {src}\nArrival city: {dst}\nTotal paid: {_money_text(cents, cur)}",
            "Online check-in opens 24 hours before departure.",
        ]
        sign = []
    wrapped = ["\n".join(_wrap(x) for x in para.split("\n")) for para in paras + sign]
    m["body"] = "\n\n".join(wrapped) + "\n"
    return m


@register("generator", "eml_emails")
class EmlEmails:
    """Inbox of plain-text emails: a folder of .eml files (CRLF), or one mbox file.

    data: list in date order of {index, file (null for mbox), message_id, from, from_name,
    from_email, to, subject, date (ISO 8601 with offset), body, topic, needs_reply, amounts
    (floats mentioned), dates (YYYY-MM-DD mentioned), details (topic-specific facts)}.
    """

    name = "eml_emails"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "count": p_count("Number of messages.", 6, minimum=1, maximum=500),
            "topics": p_strings(
                "Topics to draw from (each used at least once when count allows).",
                list(TOPICS),
                minItems=1,
                uniqueItems=True,
            ),
            "start_date": p_date("First day messages may be sent (YYYY-MM-DD).", "2026-03-02"),
            "days": p_count("Messages are sent within [start_date, start_date+days-1].", 7, minimum=1, maximum=3660),
            "owner_name": p("string", "Recipient's display name.", "Jordan Lee"),
            "owner_email": p("string", "Recipient's address.", "jordan.lee@example.com"),
            "currency": p("string", "Currency of amounts mentioned.", "USD", pattern="^[A-Z]{3}$"),
            "format": p(
                "string",
                "`eml`: one file per message in the folder; `mbox`: one mbox file.",
                "eml",
                enum=["eml", "mbox"],
            ),
        },
    )
    schema["properties"]["topics"]["items"]["enum"] = list(TOPICS)

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        start = parse_date(params["start_date"], "start_date")
        n, topics = int(params["count"]), list(params["topics"])
        picks = topics[:n]
        rng.shuffle(picks)
        picks += [rng.choice(topics) for _ in range(n - len(picks))]
        stamps = sorted(
            datetime(
                d.year, d.month, d.day, rng.randint(7, 20), rng.randrange(60), rng.randrange(60), tzinfo=timezone.utc
            )
            for d in (start + timedelta(days=rng.randrange(int(params["days"]))) for _ in picks)
        )
        owner_first = params["owner_name"].split()[0] if params["owner_name"].strip() else "there"
        people = People(rng)
        to = _addr(params["owner_name"], params["owner_email"])
        width = max(2, len(str(n)))
        files: dict[str, bytes] = {}
        mbox = io.BytesIO()
        data = []
        for i, (topic, sent) in enumerate(zip(picks, stamps)):
            m = _topic(rng, topic, sent.date(), owner_first, params, people)
            sender = _addr(m["from_name"], m["from_email"])
            msg_id = f"<{rng.getrandbits(64):016x}.{i + 1}@{m['from_email'].split('@')[1]}>"
            msg = _message(sender, to, m["subject"], format_datetime(sent), msg_id, m["body"])
            name = None
            if params["format"] == "eml":
                name = f"{i + 1:0{width}d}-{slug(m['subject'])[:40].strip('-')}.eml"
                buf = io.BytesIO()
                BytesGenerator(buf, mangle_from_=False, policy=SMTP32).flatten(msg)
                files[name] = buf.getvalue()
            else:
                wd = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[sent.weekday()]
                msg.set_unixfrom(
                    f"From {m['from_email']} {wd} {MONTH_ABBR[sent.month - 1]} {sent.day:2d} "
                    f"{sent.isoformat()[11:19]} {sent.year}"
                )
                BytesGenerator(mbox, mangle_from_=True, policy=MBOX32).flatten(msg, unixfrom=True)
                mbox.write(b"\n")
            data.append(
                {
                    "index": i,
                    "file": name,
                    "message_id": msg_id,
                    "from": sender,
                    "from_name": m["from_name"],
                    "from_email": m["from_email"],
                    "to": to,
                    "subject": m["subject"],
                    "date": sent.isoformat(),
                    "body": m["body"],
                    "topic": topic,
                    "needs_reply": m["needs_reply"],
                    "amounts": m["amounts"],
                    "dates": m["dates"],
                    "details": m["details"],
                }
            )
        if params["format"] == "mbox":
            return Generated(content=mbox.getvalue(), data=data)
        return Generated(files=files, data=data)
