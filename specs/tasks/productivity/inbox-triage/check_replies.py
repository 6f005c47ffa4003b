"""Grade the reply drafts of the inbox-triage task.

argv[1]: JSON {"replies": [{"file", "to", "subject", "message_id"}], "others": [file names]}.
Each message needing a reply must have drafts/<same file name> addressed to the sender, with the
subject "Re: <original subject>" and In-Reply-To set to the original Message-ID, plus a body.
Messages that need no reply must not get a draft: a draft for one halves the score (it earns
nothing on its own, so writing no drafts at all scores 0). A body is a few words of text.
Prints {"score", "checks"}.
"""
import json
import os
import re
import sys
from email import policy
from email.parser import BytesParser
from email.utils import getaddresses


def main():
    spec = json.loads(sys.argv[1])
    work = os.environ["CLAWGYM_WORKSPACE"]
    checks = []
    for r in spec["replies"]:
        path = os.path.join(work, "drafts", r["file"])
        name = f"reply to {r['file']}"
        if not os.path.isfile(path):
            checks.append({"name": name, "score": 0.0, "reason": "no draft"})
            continue
        try:
            with open(path, "rb") as fh:
                msg = BytesParser(policy=policy.default).parse(fh)
            to = [a.lower() for _, a in getaddresses([str(msg.get("To", ""))])]
            subject = " ".join(str(msg.get("Subject", "")).split())
            irt = str(msg.get("In-Reply-To", ""))
            part = msg.get_body(preferencelist=("plain",))
            body = part.get_content() if part is not None else ""
        except Exception as e:  # noqa: BLE001 - a broken draft scores 0
            checks.append({"name": name, "score": 0.0, "reason": f"unreadable draft: {e}"})
            continue
        problems = []
        if r["to"].lower() not in to:
            problems.append(f"To is {msg.get('To')!r}, want {r['to']}")
        if subject.lower() != ("re: " + " ".join(r["subject"].split())).lower():
            problems.append(f"Subject is {subject!r}")
        if r["message_id"] not in irt:
            problems.append("In-Reply-To missing or wrong")
        if len(body.strip()) < 20 or len(re.findall(r"[^\W\d_]{2,}", body)) < 4:
            problems.append("body is empty or has no words")
        checks.append({"name": name, "score": (4 - len(problems)) / 4, "reason": "; ".join(problems)})
    score = sum(c["score"] for c in checks) / len(checks) if checks else 1.0
    extra = [f for f in spec["others"] if os.path.exists(os.path.join(work, "drafts", f))]
    checks.append({"name": "no drafts for messages that need no reply (halves the score)",
                   "score": 0.0 if extra else 1.0, "reason": ("drafts for: " + ", ".join(extra)) if extra else ""})
    print(json.dumps({"score": score * (0.5 if extra else 1.0), "checks": checks}))


if __name__ == "__main__":
    main()
