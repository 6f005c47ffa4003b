"""How a composed task's reference solution is written: the idioms a person picks for files,
CSV, JSON and grouping, drawn per task.

Two people solving the same task write different code (open() or pathlib, csv.DictWriter or
csv.writer, setdefault or defaultdict). Every idiom here is a complete, correct way of doing the
step; the fragments in formats.py, the operations and the deliverables ask this module for the lines, so the
choice is made once per task and applied throughout.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    io: str = "open"  # "open": with open(...) as fh | "pathlib": Path(...).read_text / .open
    csv_out: str = "dict"  # "dict": csv.DictWriter | "rows": csv.writer and lists
    group: str = "setdefault"  # "setdefault": d.setdefault(k, []) | "defaultdict": defaultdict(list)
    layout: str = "script"  # "script": top to bottom | "functions": a function per step and a main()
    keep: str = "comprehension"  # how rows are filtered: "comprehension" | "loop" | "filter"
    eol: str = "lf"  # CSV line ends: "lf" (lineterminator='\n') | "crlf" (the csv module's default)

    @classmethod
    def draw(cls, rng: random.Random) -> "Style":
        return cls(
            rng.choice(["open", "pathlib"]),
            rng.choice(["dict", "rows"]),
            rng.choice(["setdefault", "defaultdict"]),
            rng.choice(["script", "script", "functions"]),
            rng.choice(["comprehension", "comprehension", "loop", "filter"]),
            rng.choice(["lf", "crlf"]),
        )

    def kept(self, var: str, it: str, condition: str) -> list[str]:
        """Keep the rows of `var` for which `condition` (an expression over `it`) holds."""
        if self.keep == "loop":
            return [
                "kept = []",
                f"for {it} in {var}:",
                f"    if {condition}:",
                f"        kept.append({it})",
                f"{var} = kept",
            ]
        if self.keep == "filter":
            return [f"{var} = list(filter(lambda {it}: {condition}, {var}))"]
        return [f"{var} = [{it} for {it} in {var} if {condition}]"]

    # -- reading ---------------------------------------------------------------------------
    def text(self, path: str) -> str:
        """An expression: the whole text of `path`."""
        if self.io == "pathlib":
            return f"Path({path!r}).read_text(encoding='utf-8')"
        return f"open({path!r}, encoding='utf-8').read()"

    def reading(self, path: str, body: list[str], handle: str = "fh", newline: bool = False) -> list[str]:
        """`body` (lines using `handle`) run with `path` open for reading."""
        nl = "newline='', " if newline else ""
        opener = (
            f"Path({path!r}).open({nl}encoding='utf-8')"
            if self.io == "pathlib"
            else f"open({path!r}, {nl}encoding='utf-8')"
        )
        return [f"with {opener} as {handle}:"] + ["    " + line for line in body]

    # -- writing ---------------------------------------------------------------------------
    def mkdir(self, folder: str) -> str:
        if self.io == "pathlib":
            return f"Path({folder!r}).mkdir(parents=True, exist_ok=True)"
        return f"os.makedirs({folder!r}, exist_ok=True)"

    def write_text(self, path: str, expr: str) -> list[str]:
        if self.io == "pathlib":
            return [f"Path({path!r}).write_text({expr}, encoding='utf-8')"]
        return [f"with open({path!r}, 'w', encoding='utf-8') as out:", f"    out.write({expr})"]

    def write_json(self, path: str, value: str, sort_keys: bool = True) -> list[str]:
        keys = ", sort_keys=True" if sort_keys else ""
        if self.io == "pathlib":
            return [f"Path({path!r}).write_text(json.dumps({value}, indent=2{keys}) + '\\n', encoding='utf-8')"]
        return [f"with open({path!r}, 'w', encoding='utf-8') as out:", f"    json.dump({value}, out, indent=2{keys})"]

    def _csv_open(self, path_expr: str) -> str:
        if self.io == "pathlib":
            return f"with Path({path_expr}).open('w', newline='', encoding='utf-8') as out:"
        return f"with open({path_expr}, 'w', newline='', encoding='utf-8') as out:"

    def _eol(self) -> str:
        return ", lineterminator='\\n'" if self.eol == "lf" else ""

    def write_dicts(self, path_expr: str, header: list[str], rows: str, indent: str = "") -> list[str]:
        """Write the dicts of `rows` (an expression) under `header` (extra keys ignored)."""
        if self.csv_out == "dict":
            body = [
                f"writer = csv.DictWriter(out, fieldnames={header!r}, extrasaction='ignore'{self._eol()})",
                "writer.writeheader()",
                f"writer.writerows({rows})",
            ]
        else:
            body = [
                f"writer = csv.writer(out{self._eol()})",
                f"writer.writerow({header!r})",
                f"for record in {rows}:",
                f"    writer.writerow([record[col] for col in {header!r}])",
            ]
        return [indent + self._csv_open(path_expr)] + [indent + "    " + line for line in body]

    def write_rows(self, path: str, header: str, rows: list[str], loop: str = "") -> list[str]:
        """Write a header (an expression) and rows: `rows` are lines that call `emit(list)` per row,
        or with `loop`, `rows` is one expression per row inside `for <loop>:`."""
        body = [f"writer = csv.writer(out{self._eol()})", f"writer.writerow({header})"]
        if loop:
            body += [f"for {loop}:"] + [f"    writer.writerow({r})" for r in rows]
        else:
            body += [f"writer.writerows({rows[0]})"]
        return [self._csv_open(repr(path))] + ["    " + line for line in body]

    # -- grouping --------------------------------------------------------------------------
    def grouping(self, name: str, it: str, rows: str, key: str, value: str) -> list[str]:
        """`name` maps each key (an expression over `it`) to the list of `value`s."""
        if self.group == "defaultdict":
            return [f"{name} = defaultdict(list)", f"for {it} in {rows}:", f"    {name}[{key}].append({value})"]
        return [f"{name} = {{}}", f"for {it} in {rows}:", f"    {name}.setdefault({key}, []).append({value})"]
