#!/usr/bin/env python3
"""Markdown helper (standard library only).

  mdtool.py outline FILE     front matter keys, headings (with level) and link count
  mdtool.py words FILE       number of words in the body (front matter excluded)
  mdtool.py links FILE...    every http(s) URL in order of appearance, each once
  mdtool.py headings FILE    headings only, one per line as '<level> <text>'
"""
import re
import sys

URL = re.compile(r"https?://[^\s)>\]\"']+")
HEAD = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def split_front_matter(text):
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            fm = text[4:end]
            body = text[end + 4:].lstrip("\n")
            return fm, body
    return "", text


def headings(body):
    out, fence = [], False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        m = None if fence else HEAD.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
    return out


def main(argv):
    if len(argv) < 3 or argv[1] not in ("outline", "words", "links", "headings"):
        print(__doc__.strip())
        return 2
    cmd = argv[1]
    if cmd == "links":
        seen = []
        for path in argv[2:]:
            for url in URL.findall(open(path, encoding="utf-8").read()):
                url = url.rstrip(".,;:")
                if url not in seen:
                    seen.append(url)
        print("\n".join(seen))
        return 0
    text = open(argv[2], encoding="utf-8").read()
    fm, body = split_front_matter(text)
    if cmd == "words":
        print(len(body.split()))
    elif cmd == "headings":
        for level, title in headings(body):
            print(level, title)
    else:
        keys = [ln.split(":", 1)[0] for ln in fm.splitlines() if re.match(r"^[A-Za-z_][\w-]*:", ln)]
        print(f"front matter: {', '.join(keys) if keys else 'none'}")
        for level, title in headings(body):
            print(f"{'  ' * (level - 1)}{'#' * level} {title}")
        print(f"links: {len(URL.findall(body))}, words: {len(body.split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
