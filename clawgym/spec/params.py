"""Sample a task's `params` deterministically from its seed."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from ..errors import Problem
from .load import Document

SAMPLERS = ("int", "float", "choice", "sample", "date", "value")


def param_problems(doc: Document) -> list[Problem]:
    """Checks the schema cannot express: exactly one sampler, sane ranges, `k` only with `sample`."""
    problems = []
    for name, spec in (doc.data.get("params") or {}).items():
        if not isinstance(spec, dict):
            continue
        path = ("params", name)
        given = [s for s in SAMPLERS if s in spec]
        if len(given) != 1:
            problems.append(
                Problem(
                    f"give exactly one of {', '.join(SAMPLERS)} (found {', '.join(given) or 'none'})",
                    **doc.where(path),
                    hint="for example 'n: {int: [3, 8]}'",
                )
            )
            continue
        kind = given[0]
        if kind in ("int", "float", "date") and isinstance(spec[kind], list) and len(spec[kind]) == 2:
            low, high = spec[kind]
            if str(low) > str(high) if kind == "date" else low > high:
                problems.append(
                    Problem(
                        f"empty range: {low} is above {high}", **doc.where(path + (kind,)), hint="write [low, high]"
                    )
                )
        if kind == "date":
            for i, value in enumerate(spec["date"]):
                try:
                    dt.date.fromisoformat(str(value))
                except ValueError:
                    problems.append(Problem(f"{value!r} is not a YYYY-MM-DD date", **doc.where(path + ("date", i))))
        if "k" in spec and kind != "sample":
            problems.append(Problem("'k' only applies to 'sample'", **doc.where(path + ("k",))))
        if kind == "sample" and spec.get("k", 1) > len(spec["sample"]):
            problems.append(
                Problem(
                    f"k={spec['k']} is more than the {len(spec['sample'])} items to sample from",
                    **doc.where(path + ("k",)),
                )
            )
        if "round" in spec and kind != "float":
            problems.append(Problem("'round' only applies to 'float'", **doc.where(path + ("round",))))
    return problems


def sample_params(specs: dict[str, dict], rng: random.Random) -> dict[str, Any]:
    """One value per parameter, in declaration order, from `rng`."""
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if "int" in spec:
            out[name] = rng.randint(*spec["int"])
        elif "float" in spec:
            out[name] = round(rng.uniform(*spec["float"]), spec.get("round", 2))
        elif "choice" in spec:
            out[name] = spec["choice"][rng.randrange(len(spec["choice"]))]
        elif "sample" in spec:
            picked = sorted(rng.sample(range(len(spec["sample"])), spec.get("k", 1)))
            out[name] = [spec["sample"][i] for i in picked]
        elif "date" in spec:
            low, high = (dt.date.fromisoformat(str(d)) for d in spec["date"])
            out[name] = (low + dt.timedelta(days=rng.randint(0, (high - low).days))).isoformat()
        else:
            out[name] = spec["value"]
    return out
