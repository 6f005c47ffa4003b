#!/usr/bin/env python3
"""Read .eml files and write unsent plain-text drafts (standard library only).

Commands:
  list FOLDER                      one line per .eml: file, date, from, subject
  show FILE                        headers and decoded text body of one message
  new --to ADDR --subject S (--body TEXT | --body-file F) --out PATH [--cc ADDR] [--from ADDR]
  reply ORIGINAL (--body TEXT | --body-file F) --out PATH [--from ADDR] [--all]
"""
from __future__ import annotations

import argparse
import os
import sys
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime


def read(path: str) -> EmailMessage:
    with open(path, "rb") as fh:
        return BytesParser(policy=policy.default).parse(fh)


def body_text(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    return part.get_content() if part is not None else ""


def write_draft(path: str, headers: list[tuple[str, str]], body: str) -> None:
    msg = EmailMessage(policy=policy.SMTP.clone(linesep="\n", utf8=True))
    for key, value in headers:
        if value:
            msg[key] = value
    msg["X-Unsent"] = "1"
    msg.set_content(body if body.endswith("\n") else body + "\n", cte="8bit")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(msg.as_bytes())
    print(f"wrote {path}")


def get_body(args: argparse.Namespace) -> str:
    if args.body_file:
        with open(args.body_file, encoding="utf-8") as fh:
            return fh.read()
    return args.body or ""


def cmd_list(args: argparse.Namespace) -> None:
    for name in sorted(os.listdir(args.folder)):
        if not name.endswith(".eml"):
            continue
        msg = read(os.path.join(args.folder, name))
        try:
            when = parsedate_to_datetime(msg["Date"]).isoformat()
        except (TypeError, ValueError):
            when = "?"
        print(f"{name}\t{when}\t{msg['From']}\t{msg['Subject']}")


def cmd_show(args: argparse.Namespace) -> None:
    msg = read(args.file)
    for key in ("Message-ID", "Date", "From", "Reply-To", "To", "Cc", "Subject"):
        if msg[key]:
            print(f"{key}: {msg[key]}")
    print()
    print(body_text(msg))


def cmd_new(args: argparse.Namespace) -> None:
    write_draft(args.out, [("From", args.sender), ("To", args.to), ("Cc", args.cc),
                           ("Subject", args.subject)], get_body(args))


def cmd_reply(args: argparse.Namespace) -> None:
    orig = read(args.original)
    to = orig["Reply-To"] or orig["From"]
    if not to:
        sys.exit(f"{args.original} has no From or Reply-To header to reply to")
    cc = ""
    if args.all:
        me = {a.lower() for _, a in getaddresses([args.sender or ""])}
        others = [f"{n} <{a}>" if n else a for n, a in getaddresses([orig["To"] or "", orig["Cc"] or ""])
                  if a.lower() not in me]
        cc = ", ".join(others)
    subject = str(orig["Subject"] or "")
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    msg_id = str(orig["Message-ID"] or "").strip()
    refs = " ".join(x for x in (str(orig["References"] or "").strip(), msg_id) if x)
    write_draft(args.out, [("From", args.sender), ("To", str(to)), ("Cc", cc), ("Subject", subject),
                           ("In-Reply-To", msg_id), ("References", refs)], get_body(args))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list")
    p.add_argument("folder")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("show")
    p.add_argument("file")
    p.set_defaults(func=cmd_show)
    for name, func in (("new", cmd_new), ("reply", cmd_reply)):
        p = sub.add_parser(name)
        if name == "reply":
            p.add_argument("original")
            p.add_argument("--all", action="store_true", help="reply to all (Cc the other recipients)")
        else:
            p.add_argument("--to", required=True)
            p.add_argument("--cc", default="")
            p.add_argument("--subject", required=True)
        p.add_argument("--from", dest="sender", default="")
        g = p.add_mutually_exclusive_group(required=True)
        g.add_argument("--body")
        g.add_argument("--body-file")
        p.add_argument("--out", required=True)
        p.set_defaults(func=func)
    args = ap.parse_args(argv)
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
