"""Input formats of compositional synthesis: how a domain's rows are written into the workspace,
how the reference solution reads them back, and what reading yields.

Every format renders rows (strings, as a CSV holds them) into files, and `parse` reads those files
back exactly as the solution's reader lines do, so the pipeline computes on what an agent will
actually see (a JSON number 12.0 reads back as "12.0", a Markdown cell is stripped, a log line
keeps only what its template holds).
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import dataclass
from typing import Any

from .model import Domain
from .data import Row, to_csv
from .style import Style

# Field types whose values JSON writes as numbers.
_JSON_NUMBER = {"int": int, "money": float, "hours": float}


@dataclass
class Rendered:
    """The files one input takes, the path the request names, and how it reads back."""

    files: dict[str, str]
    path: str  # a file, or a folder ending in "/"
    columns: list[str]
    rows: list[Row]  # what the reader lines yield
    code: list[str]  # the reader lines (assign the rows variable)
    phrase: str  # how the request refers to it
    unique: bool = False  # the format cannot hold repeated keys (one file per record)
    both: str = ""  # how it refers to two such files, "{paths}" naming them: the format said once


def _said(rng: random.Random, path: str, *ways: tuple[str, str]) -> tuple[str, str]:
    """One way of naming the input (`{path}`), and the same way for two files of it (`{paths}`)."""
    one, two = rng.choice(ways)
    return one.replace("{path}", path), two


def label_of(field: str) -> str:
    return field.replace("_", " ").title()


class Format:
    name = ""
    ext = ""
    skill = "csv.read_rows"

    def applies(self, domain: Domain) -> bool:
        return True

    def render(
        self,
        domain: Domain,
        rows: list[Row],
        columns: list[str],
        folder: str,
        stem: str,
        var: str,
        it: str,
        rng: random.Random,
        style: Style = Style(),
    ) -> Rendered:
        raise NotImplementedError


class Csv(Format):
    name, ext = "csv", ".csv"

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.csv"
        text = to_csv(rows, columns)
        parsed = list(csv.DictReader(io.StringIO(text, newline="")))
        code = style.reading(path, [f"{var} = list(csv.DictReader(fh))"], newline=True)
        phrase, both = _said(
            rng,
            path,
            ("{path}", "{paths}"),
            ("the CSV export {path}", "the CSV exports {paths}"),
            ("{path} (a plain CSV export)", "{paths} (plain CSV exports)"),
        )
        return Rendered({path: text}, path, columns, parsed, code, phrase, both=both)


class Semicolon(Format):
    """A spreadsheet export with semicolons and decimal commas (as many European locales write)."""

    name, ext = "semicolon", ".csv"

    def applies(self, domain):
        return bool(domain.of_type("money", "hours"))

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.csv"
        decimal = [c for c in columns if domain.type_of(c) in ("money", "hours")]
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=";", lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([r[c].replace(".", ",") if c in decimal else r[c] for c in columns])
        text = buf.getvalue()
        parsed = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=";"))
        for r in parsed:
            for c in decimal:
                r[c] = r[c].replace(",", ".")
        code = style.reading(path, [f"{var} = list(csv.DictReader(fh, delimiter=';'))"], newline=True) + [
            f"for {it} in {var}:  # decimal commas to points",
            f"    for col in {decimal!r}:",
            f"        {it}[col] = {it}[col].replace(',', '.')",
        ]
        # what the file is, not which program wrote it: that would be the same tool in every domain
        phrase, both = _said(
            rng,
            path,
            (
                "{path} (exported from a spreadsheet set to semicolons and decimal commas)",
                "{paths} (both exported from a spreadsheet set to semicolons and decimal commas)",
            ),
            (
                "{path} (';' between fields, commas as the decimal mark)",
                "{paths} (both with ';' between fields and commas as the decimal mark)",
            ),
        )
        return Rendered({path: text}, path, columns, parsed, code, phrase, both=both)


class Json(Format):
    name, ext = "json", ".json"
    skill = "json-data.load_json"

    def _records(self, domain: Domain, rows: list[Row], columns: list[str]) -> list[dict[str, Any]]:
        out = []
        for r in rows:
            rec: dict[str, Any] = {}
            for c in columns:
                kind = _JSON_NUMBER.get(domain.type_of(c))
                try:
                    rec[c] = kind(r[c]) if kind else r[c]
                except ValueError:  # a value a cleaning step will repair: kept as written
                    rec[c] = r[c]
            out.append(rec)
        return out

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.json"
        records = self._records(domain, rows, columns)
        wrap = rng.choice([None, domain.noun[1].replace(" ", "_"), "items"])
        data: Any = records if wrap is None else {"exported": "2026-04-30", wrap: records}
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        parsed = [{k: str(v) for k, v in rec.items()} for rec in records]
        pick = "" if wrap is None else f"[{wrap!r}]"
        if style.io == "pathlib":
            code = [
                f"exported = json.loads({style.text(path)}){pick}",
                f"{var} = [{{field: str(value) for field, value in {it}.items()}} for {it} in exported]",
            ]
        else:
            code = style.reading(
                path, [f"{var} = [{{k: str(v) for k, v in {it}.items()}} for {it} in json.load(fh){pick}]"]
            )
        where, each = ("", "") if wrap is None else (f' (under "{wrap}")', f' (each under "{wrap}")')
        phrase, both = _said(
            rng,
            path,
            ("{path}" + where, "{paths}" + each),
            ("the JSON export {path}" + where, "the JSON exports {paths}" + each),
        )
        return Rendered({path: text}, path, columns, parsed, code, phrase, both=both)


class JsonLines(Json):
    name, ext = "jsonl", ".jsonl"

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.jsonl"
        records = self._records(domain, rows, columns)
        text = "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records)
        parsed = [{k: str(v) for k, v in rec.items()} for rec in records]
        if style.io == "pathlib":
            code = [
                f"{var} = []",
                f"for line in {style.text(path)}.splitlines():",
                "    if line.strip():",
                f"        {var}.append({{field: str(value) for field, value in json.loads(line).items()}})",
            ]
        else:
            code = style.reading(
                path, [f"{var} = [{{k: str(v) for k, v in json.loads(line).items()}} for line in fh if line.strip()]"]
            )
        phrase, both = _said(
            rng,
            path,
            ("{path} (one JSON object per line)", "{paths} (one JSON object per line)"),
            ("the JSON-lines file {path}", "the JSON-lines files {paths}"),
        )
        return Rendered({path: text}, path, columns, parsed, code, phrase, both=both)


class MarkdownTable(Format):
    name, ext = "md_table", ".md"
    skill = "markdown-notes.extract_items"

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.md"
        title = rng.choice(
            [
                f"{domain.noun[1].capitalize()}",
                f"{domain.noun[1].capitalize()} (working copy)",
                f"Notes: {domain.noun[1]}",
            ]
        )
        lines = [
            f"# {title}",
            "",
            rng.choice(
                [
                    "Copied from the shared sheet.",
                    "Kept by hand; see the table below.",
                    "Last updated at the end of the month.",
                ]
            ),
            "",
            "| " + " | ".join(columns) + " |",
            "|" + "|".join("---" for _ in columns) + "|",
        ]
        lines += ["| " + " | ".join(r[c] for c in columns) + " |" for r in rows]
        text = "\n".join(lines) + "\n"
        table = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
        header = [c.strip() for c in table[0].strip("|").split("|")]
        parsed = [dict(zip(header, [c.strip() for c in ln.strip("|").split("|")])) for ln in table[2:]]
        source = f"{style.text(path)}.splitlines()" if style.io == "pathlib" else "fh"
        read = [f"table = [line.strip() for line in {source} if line.strip().startswith('|')]"]
        code = (read if style.io == "pathlib" else style.reading(path, read)) + [
            "header = [cell.strip() for cell in table[0].strip('|').split('|')]",
            f"{var} = [dict(zip(header, [cell.strip() for cell in line.strip('|').split('|')])) for line in table[2:]]",
        ]
        phrase, both = _said(
            rng,
            path,
            ("the table in {path}", "the tables in {paths}"),
            ("{path} (a Markdown table under the heading)", "{paths} (each a Markdown table under a heading)"),
        )
        return Rendered({path: text}, path, columns, parsed, code, phrase, both=both)


class Records(Format):
    """One text file per record, `Label: value` lines (helpdesk exports, contact cards, notes)."""

    name, ext = "records", ".txt"
    skill = "markdown-notes.extract_items"

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        base = f"{folder}/{stem}/"
        labels = {label_of(c): c for c in columns}
        files, seen = {}, set()
        ext = rng.choice([".txt", ".md"])
        for r in rows:
            name = re.sub(r"[^A-Za-z0-9._-]+", "-", r[domain.key]).strip("-").lower() or "record"
            while name in seen:
                name += "-2"
            seen.add(name)
            files[f"{base}{name}{ext}"] = "".join(f"{label}: {r[c]}\n" for label, c in labels.items())
        parsed = []
        for path in sorted(files):
            item: Row = {}
            for line in files[path].splitlines(keepends=True):
                if ":" in line:
                    label, value = line.split(":", 1)
                    if label.strip() in labels:
                        item[labels[label.strip()]] = value.strip()
            parsed.append(item)
        if style.io == "pathlib":
            code = [
                f"labels = {labels!r}",
                f"{var} = []",
                f"for card in sorted(Path({base.rstrip('/')!r}).glob({'*' + ext!r})):",
                f"    {it} = {{}}",
                "    for line in card.read_text(encoding='utf-8').splitlines():",
                "        name, sep, value = line.partition(':')",
                "        if sep and name.strip() in labels:",
                f"            {it}[labels[name.strip()]] = value.strip()",
                f"    {var}.append({it})",
            ]
        else:
            code = [
                f"labels = {labels!r}",
                f"{var} = []",
                f"for name in sorted(glob.glob({base + '*' + ext!r})):",
                f"    {it} = {{}}",
                "    with open(name, encoding='utf-8') as fh:",
                "        for line in fh:",
                "            if ':' in line:",
                "                label, value = line.split(':', 1)",
                "                if label.strip() in labels:",
                f"                    {it}[labels[label.strip()]] = value.strip()",
                f"    {var}.append({it})",
            ]
        phrase = rng.choice(
            [
                f"the files in {base} (one per {domain.noun[0]}, 'Label: value' lines)",
                f"{base}, where each {domain.noun[0]} is a small text file of 'Label: value' lines",
            ]
        )
        return Rendered(files, base, columns, parsed, code, phrase, unique=True)


class Lines(Format):
    """A text log, one record per line, in the domain's `line` template."""

    name, ext = "lines", ".log"
    skill = "log-analysis.parse_lines"

    def applies(self, domain):
        return bool(domain.line)

    def render(self, domain, rows, columns, folder, stem, var, it, rng, style=Style()):
        path = f"{folder}/{stem}.log"
        template = domain.line
        fields = re.findall(r"\{(\w+)\}", template)
        cols = [c for c in columns if c in fields]
        text = "".join(template.format(**r) + "\n" for r in rows)
        parts, pos = [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            parts.append(re.escape(template[pos : m.start()]))
            parts.append(f"(?P<{m.group(1)}>.+?)")
            pos = m.end()
        parts.append(re.escape(template[pos:]))
        pattern = "^" + "".join(parts) + "$"
        rx = re.compile(pattern)
        parsed = [m.groupdict() for m in (rx.match(ln) for ln in text.splitlines()) if m]
        if style.io == "pathlib":
            code = [
                f"pattern = re.compile({pattern!r})",
                f"{var} = []",
                f"for line in {style.text(path)}.splitlines():",
                "    match = pattern.match(line)",
                "    if match:",
                f"        {var}.append(match.groupdict())",
            ]
        else:
            code = [f"pattern = re.compile({pattern!r})"] + style.reading(
                path, [f"{var} = [m.groupdict() for m in (pattern.match(line.rstrip('\\n')) for line in fh) if m]"]
            )
        example = template.format(**rows[0])
        phrase, both = _said(
            rng,
            path,
            ("{path} (lines like `" + example + "`)", "{paths} (lines like `" + example + "`)"),
            ("the log {path}; a line reads `" + example + "`", "the logs {paths}; a line reads `" + example + "`"),
        )
        return Rendered({path: text}, path, cols, parsed, code, phrase, both=both)


FORMATS: dict[str, Format] = {
    f.name: f for f in (Csv(), Semicolon(), Json(), JsonLines(), MarkdownTable(), Records(), Lines())
}
