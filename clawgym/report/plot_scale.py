"""Numbers and words for the report's plots: round ticks, outlier cuts, histogram bins, and
label text fitted to a width (wrapped, or shortened with the full name kept for the tooltip)."""

from __future__ import annotations

import math
import re
from typing import Sequence

FONT = 9.0  # tick and category labels
MAX_LABEL_LINES = 3
OUTLIER_FACTOR = 4.0  # cut the axis only when the largest value is this many times the last ordinary one


# ---- numbers ----


def nice_ticks(vmax: float, *, integer: bool = False, nbins: int = 5) -> list[float]:
    """Ticks from 0 to the first one at or above `vmax`, in steps of 1, 2 or 5 × 10^k (>= 1 if `integer`)."""
    from matplotlib.ticker import MaxNLocator

    if not vmax > 0:
        return [0, 1]
    loc = MaxNLocator(nbins=nbins, steps=[1, 2, 5, 10], integer=integer, min_n_ticks=2)
    raw = [t for t in loc.tick_values(0, vmax) if t >= -1e-12]
    step = raw[1] - raw[0]
    ticks = [_clean(i * step) for i in range(int(math.ceil(vmax / step - 1e-9)) + 1)]
    return [int(t) for t in ticks] if integer or all(float(t).is_integer() for t in ticks) else ticks


def _clean(v: float) -> float:
    return float(f"{v:.10g}")


def nice_step(raw: float, *, integer: bool = False) -> float:
    """The smallest 1, 2 or 5 × 10^k that is at least `raw` (at least 1 if `integer`)."""
    if not raw > 0:
        return 1
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        step = _clean(m * 10.0**exp)
        if step >= raw * (1 - 1e-9):
            break
    return max(1, int(round(step))) if integer else step


def fmt_number(v: float, scale: float | None = None) -> str:
    """A number as a label: 0, 0.2, 5, 250, 2,500, 40k, 1.5M; `scale` (1e3 or 1e6) forces a suffix."""
    if v == 0:
        return "0"
    a = abs(v)
    scale = scale or (1e6 if a >= 1e6 else 1e3 if a >= 1e4 else 1)
    if scale > 1:
        return f"{v / scale:.4g}{'M' if scale == 1e6 else 'k'}"
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.6g}"


def fmt_ticks(ticks: Sequence[float]) -> list[str]:
    """Tick labels with one suffix for the whole axis (0, 5k, 10k, not 0, 5,000, 10k)."""
    top = max((abs(t) for t in ticks), default=0)
    scale = 1e6 if top >= 1e6 else 1e3 if top >= 1e4 else 1
    return [fmt_number(t, scale) for t in ticks]


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of sorted values (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def outlier_cut(values: Sequence[float]) -> tuple[float, float | None]:
    """(the largest ordinary value, the cut) where outliers would flatten the axis; cut None if none.

    Ordinary: at most Tukey's far-out fence (Q3 + 3 IQR) of the values. The axis is cut only when the
    largest value is more than OUTLIER_FACTOR times the largest ordinary one.
    """
    if not values:
        return 0.0, None
    s = sorted(values)
    if len(s) < 4:
        return s[-1], None
    q1, q3 = _percentile(s, 0.25), _percentile(s, 0.75)
    fence = q3 + 3 * (q3 - q1)
    ordinary = [v for v in s if v <= fence]
    upper = ordinary[-1] if ordinary else s[-1]
    if upper > 0 and s[-1] > OUTLIER_FACTOR * upper:
        return upper, upper
    return s[-1], None


def trials(n: int) -> str:
    """'1 trial', '4,855 trials'."""
    return f"{n:,} {'trial' if n == 1 else 'trials'}"


# ---- bins ----


class Bins:
    """Histogram bins of a nice width from `lo`; values above `cut` (if any) go to one overflow bin."""

    def __init__(
        self,
        upper: float,
        *,
        integer: bool,
        cut: float | None = None,
        target: int = 20,
        width: float | None = None,
        lo: float | None = None,
        n: int | None = None,
    ) -> None:
        self.integer = integer
        self.width = width or nice_step(upper / target, integer=integer)
        self.centred = integer and self.width == 1  # one bin per integer, centred on it
        self.lo = lo if lo is not None else (-0.5 if self.centred else 0.0)
        if n is None:
            n = int(upper) + 1 if self.centred else max(1, int(math.ceil(upper / self.width - 1e-9)))
        self.n = n
        self.hi = self.lo + self.n * self.width
        self.cut = None if cut is None else self.hi

    def index(self, v: float) -> int:
        """The bin of `v`; `n` for the overflow bin. The last bin includes its upper edge."""
        if self.cut is not None and v > self.cut:
            return self.n
        return min(self.n - 1, max(0, math.floor((v - self.lo) / self.width + 1e-9)))  # 0.5 is in [0.5, 0.6)

    def describe(self, b: int, unit: str) -> str:
        if b == self.n:
            return f"more than {fmt_number(self.cut or 0)} {unit}"
        a = self.lo + b * self.width
        if self.centred:
            return f"{fmt_number(a + 0.5)} {unit}"
        if self.integer:
            return f"{fmt_number(a)}–{fmt_number(a + self.width - 1)} {unit}"
        last = b == self.n - 1
        return f"{unit} {a:.3g} to {a + self.width:.3g} ({'inclusive' if last else 'upper end excluded'})"


# ---- text ----


def text_width(text: str, size: float) -> float:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    return text_to_path.get_text_width_height_descent(text, FontProperties(size=size), ismath=False)[0]


def wrap(text: str, width: float, size: float = FONT, max_lines: int = MAX_LABEL_LINES) -> list[str] | None:
    """`text` in lines no wider than `width` points, broken after spaces, hyphens, slashes, underscores
    and ampersands; None if a piece does not fit or it needs more than `max_lines` lines."""
    pieces = [p for p in re.split(r"(?<=[\s/_&-])", text) if p]
    lines: list[str] = []
    current = ""
    for piece in pieces:
        trial = current + piece
        if current and text_width(trial.rstrip(), size) > width:
            lines.append(current.rstrip())
            current = piece.lstrip()
        else:
            current = trial
        if text_width(current.rstrip(), size) > width:
            return None
    if current.strip() or not lines:
        lines.append(current.rstrip())
    return lines if len(lines) <= max_lines else None


def fit_lines(text: str, width: float, size: float = FONT, max_lines: int = 2) -> list[str]:
    """`text` wrapped to `width` points (breaking inside a word if it must), at most `max_lines` lines,
    the last one ending in "…" if something is left out."""
    lines = wrap(text, width, size, max_lines=len(text) + 1)
    if lines is None:  # a piece wider than the line: break by characters
        lines, current = [], ""
        for ch in text:
            if current and text_width(current + ch, size) > width:
                lines.append(current)
                current = ""
            current += ch
        lines.append(current)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [shorten(" ".join(lines[max_lines - 1 :]), width, size)]
    return lines


def shorten(text: str, width: float, size: float = FONT) -> str:
    """`text`, cut with an ellipsis to fit `width` points."""
    if text_width(text, size) <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[:mid] + "…", size) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"
