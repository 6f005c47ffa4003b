"""The HTML report's plots: SVG drawn by matplotlib (imported lazily), made safe to inline in the page.

Four plots: the reward distribution, mean reward per category with its 95% CI, tokens per trial and
model turns per trial, one colour per series (agent, or run · agent for several runs).

What the plots promise:
- Round ticks: 1, 2 or 5 × 10^k steps from matplotlib's `MaxNLocator`, integers on count axes; the top
  tick is at or above the largest bar, so a bar of 1 ends exactly on the "1" grid line.
- Zero is visible and is not "no data": a zero bar is a mark just outside the axis with its value label;
  a group without graded trials shows "no data".
- Labels fit: category names are wrapped under their bars, or, when they cannot be (many categories,
  long words), each category becomes a row with its name beside it; the full name is in the tooltip.
- Outliers do not flatten the rest: when the largest value is far beyond Tukey's far-out fence
  (Q3 + 3 IQR) of the others, the axis is cut after the last ordinary value, the outliers go to one
  hatched bar on the right, and the plot says so.

Record strings (agent, run and category names) never reach the SVG markup: category labels are drawn as
glyph outlines, names are only in the tooltips, which the page's code adds as text from its JSON data.
Only numbers and this module's own words are SVG text. The markup has no style attributes or
elements (the page's Content-Security-Policy allows only its own styles): they become presentation
attributes.
"""

from __future__ import annotations

import io
import re
import warnings
from typing import Any, Mapping, Sequence

from ..files.textsafe import printable
from .plot_scale import (FONT, Bins, fit_lines, fmt_number, fmt_ticks, nice_ticks, outlier_cut, text_width, trials, wrap)

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2",
           "#bcbd22", "#7f7f7f"]  # matplotlib's tab10, blue and red first
PLOTS = ("reward", "category", "tokens", "turns")
AX_W, AX_H = 340.0, 140.0  # the plotting area in points (= SVG units, about CSS pixels in the page)
LEFT, RIGHT, TOP, BOTTOM = 50.0, 14.0, 26.0, 48.0
SMALL = 8.0  # value labels and notes
ZERO_MARK = 3.0  # height in points of the mark a zero bar gets under the baseline
ROW_H = 10.0  # points per bar when categories are rows
ROW_LABEL_W = 140.0  # points for a category name beside its row (two lines; longer names end in "…")

_RC = {"svg.fonttype": "none", "svg.hashsalt": "clawgym-report", "font.size": FONT, "font.family": "sans-serif",
       "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
       "axes.edgecolor": "#888888", "axes.labelcolor": "#333333", "xtick.color": "#555555",
       "ytick.color": "#555555", "axes.linewidth": 0.8, "hatch.linewidth": 0.8}
# Presentation attributes that may replace matplotlib's style properties (everything it writes).
_PRESENTATION = {"fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity",
                 "stroke-linecap", "stroke-linejoin", "stroke-miterlimit", "stroke-dasharray",
                 "stroke-dashoffset", "opacity", "font-family", "font-size", "font-style", "font-weight",
                 "text-anchor", "dominant-baseline", "clip-path", "color"}


# ---- figures ----

class _Plot:
    """One figure with its tooltips (element id -> text) and notes."""

    def __init__(self, name: str, title: str, *, ax_h: float = AX_H, grid: str = "y") -> None:
        from matplotlib.figure import Figure

        self.name, self.title, self.ax_h = name, title, ax_h
        w, h = LEFT + AX_W + RIGHT, TOP + ax_h + BOTTOM
        self.fig = Figure(figsize=(w / 72, h / 72), dpi=72)
        self.ax = self.fig.add_axes((LEFT / w, BOTTOM / h, AX_W / w, ax_h / h))
        self.ax.spines[["top", "right"]].set_visible(False)
        self.ax.set_axisbelow(True)
        self.ax.grid(axis=grid, color="#e4e4e4", linewidth=0.8)
        self.tips: dict[str, str] = {}
        self.notes: list[str] = []
        self.label_room = 0.0  # points the tallest value label needs above its bar

    def tip(self, artist: Any, gid: str, text: str) -> None:
        artist.set_gid(gid)
        self.tips[gid] = text

    def y_axis(self, ticks: Sequence[float], label: str, headroom: float = 0.14) -> None:
        from matplotlib.ticker import FixedFormatter, FixedLocator

        top = ticks[-1]
        self.ax.set_ylim(0, top * (1 + headroom))
        self.ax.yaxis.set_major_locator(FixedLocator(list(ticks)))
        self.ax.yaxis.set_major_formatter(FixedFormatter(fmt_ticks(ticks)))
        self.ax.set_ylabel(label)
        self.ax.spines["left"].set_bounds(0, top)

    def x_ticks(self, ticks: Sequence[float]) -> None:
        from matplotlib.ticker import FixedFormatter, FixedLocator

        self.ax.xaxis.set_major_locator(FixedLocator(list(ticks)))
        self.ax.xaxis.set_major_formatter(FixedFormatter(fmt_ticks(ticks)))

    def points_to_y(self, points: float) -> float:
        lo, hi = self.ax.get_ylim()
        return points / self.ax_h * (hi - lo)

    def value_label(self, x: float, y: float, text: str, bar_width_pt: float, gid: str) -> None:
        """`text` above (x, y): horizontal if it fits over the bar, else turned upright."""
        width = text_width(text, SMALL)
        upright = width > bar_width_pt + 3
        self.label_room = max(self.label_room, (width if upright else SMALL * 1.25) + 3)
        self.ax.annotate(text, (x, y), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                         fontsize=SMALL, color="#333333", rotation=90 if upright else 0, gid=gid,
                         annotation_clip=False)

    def message(self, text: str) -> None:
        """A message in the middle of an empty plot."""
        self.ax.text(0.5, 0.5, text, transform=self.ax.transAxes, ha="center", va="center", color="#777777",
                     fontsize=FONT + 1, gid="empty")

    def finish(self) -> None:
        if self.notes:
            lines = wrap("; ".join(self.notes), AX_W, SMALL, max_lines=4) or ["; ".join(self.notes)]
            self.ax.text(0, 1.0, "\n".join(lines), transform=self.ax.transAxes, ha="left", va="bottom",
                         fontsize=SMALL, color="#555555", gid="note", linespacing=1.25)

    def svg(self) -> str:
        from matplotlib.backends.backend_svg import FigureCanvasSVG

        self.finish()
        FigureCanvasSVG(self.fig)
        buf = io.StringIO()
        self.fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.04,
                         metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
        return inline_svg(buf.getvalue(), self.name, self.title)


def inline_svg(text: str, prefix: str, label: str) -> str:
    """matplotlib's SVG as an element for an HTML page: no XML prologue, namespaces, style elements or
    attributes; ids prefixed with `prefix` so several plots share a page."""
    start = text.index("<svg")
    text = re.sub(r"<style[^>]*>.*?</style>", "", text[start:], flags=re.DOTALL)
    text = re.sub(r"<defs>\s*</defs>", "", text)
    head_end = text.index(">") + 1
    view_box = re.search(r'viewBox="([^"]+)"', text[:head_end]).group(1)  # type: ignore[union-attr]
    head = (f'<svg class="mpl" viewBox="{view_box}" width="100%" role="img" aria-label="{_attr(label)}" '
            'stroke-linejoin="round" stroke-linecap="butt">')
    body = _TAG.sub(lambda m: _tag(m.group(0), prefix), text[head_end:])
    out = head + body.strip()
    if re.search(r"<(script|style|foreignObject|image|a)\b|\sstyle=|\son\w+=|https?:|javascript:", out, re.I):
        raise ValueError("unexpected content in the plot SVG")
    return out


_TAG = re.compile(r"<[^<>]+>")  # text content is escaped by matplotlib, so tags are delimited
_STYLE = re.compile(r'\sstyle="([^"]*)"')


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _tag(tag: str, prefix: str) -> str:
    def presentation(m: re.Match[str]) -> str:
        out = []
        for prop in m.group(1).split(";"):
            name, _, value = prop.partition(":")
            name, value = name.strip(), value.strip()
            if name in _PRESENTATION and value:
                out.append(f' {name}="{_attr(value.replace(chr(34), chr(39)))}"')
        return "".join(out)

    tag = _STYLE.sub(presentation, tag)
    tag = re.sub(r'\sid="([^"]+)"', lambda m: f' id="{prefix}-{m.group(1)}"', tag)
    tag = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", tag)
    tag = re.sub(r'\sxlink:href="#([^"]+)"', lambda m: f' href="#{prefix}-{m.group(1)}"', tag)
    return tag


# ---- the four plots ----

def _series_bars(plot: _Plot, bins: Bins, counts: list[list[int]], colors: Sequence[str], names: Sequence[str],
                 unit: str, what: str) -> None:
    """Grouped histogram bars: counts[s][b], b == bins.n the overflow bin (hatched, after a gap)."""
    ax, S = plot.ax, len(counts)
    inner = 0.9 * bins.width / max(1, S)
    px_per_unit = AX_W / ((bins.hi - bins.lo) + (2.5 * bins.width if bins.cut is not None else 0))
    labelled = inner * px_per_unit >= SMALL + 1  # room for a count on every bar (turned upright if need be)
    for s, row in enumerate(counts):
        for b, c in enumerate(row):
            if not c:
                continue
            over = b == bins.n
            left = (bins.hi + 1.5 * bins.width if over else bins.lo + b * bins.width) + 0.05 * bins.width + s * inner
            rect = ax.bar(left, c, inner, align="edge", color=colors[s], linewidth=0.6 if over else 0,
                          edgecolor="#333333" if over else colors[s], hatch="////" if over else None)[0]
            plot.tip(rect, f"{'over' if over else 'bar'}-{s}-{b}", f"{names[s]}: {trials(c)} with {bins.describe(b, unit)}")
            if labelled:
                plot.value_label(left + inner / 2, c, f"{c:,}", inner * px_per_unit, f"value-{s}-{b}")
    right = bins.hi + (2.5 * bins.width if bins.cut is not None else 0)
    ax.set_xlim(bins.lo, right)
    ax.set_xlabel(what)


def _count_axis(plot: _Plot, counts: list[list[int]]) -> None:
    top = max([c for row in counts for c in row] or [0])
    room = max(plot.label_room, 8.0)
    plot.y_axis(nice_ticks(max(1, top), integer=True), "trials", headroom=room / (AX_H - room))


def _over_label(plot: _Plot, bins: Bins, unit: str, values_over: Sequence[float]) -> None:
    from matplotlib.transforms import offset_copy

    x = bins.hi + 2.0 * bins.width
    trans = offset_copy(plot.ax.get_xaxis_transform(), fig=plot.fig, y=-3.5, units="points")
    plot.ax.text(x, 0, "> " + fmt_number(bins.cut or 0), transform=trans, ha="center", va="top", fontsize=FONT,
                 color="#555555", gid="over-label")
    n = len(values_over)
    plot.notes.append(f"axis cut at {fmt_number(bins.cut or 0)} {unit}: {trials(n)} "
                      f"above it (up to {fmt_number(max(values_over))}) in the hatched bar")


def reward_plot(rewards: Sequence[float | None], series: Sequence[int], names: Sequence[str],
                colors: Sequence[str]) -> _Plot:
    plot = _Plot("plot-reward", "Reward distribution of graded trials")
    bins = Bins(1.0, integer=False, width=0.1, lo=0.0, n=10)
    counts = [[0] * bins.n for _ in names]
    graded = 0
    for r, s in zip(rewards, series):
        if r is None:
            continue
        graded += 1
        counts[s][bins.index(r)] += 1
    _series_bars(plot, bins, counts, colors, names, "reward", "reward (bins of 0.1; the last includes 1.0)")
    plot.x_ticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    _count_axis(plot, counts)
    if not graded:
        plot.message("no graded trials")
    skipped = sum(r is None for r in rewards)
    if skipped:
        plot.notes.append(f"not shown: {trials(skipped)} without a reward (errors)")
    return plot


def usage_plot(name: str, title: str, values: Sequence[int], present: Sequence[bool], series: Sequence[int],
               names: Sequence[str], colors: Sequence[str], unit: str, what: str) -> _Plot:
    """A histogram of tokens or turns per trial: trials without a trajectory or without model calls are
    counted in a note; outliers go to a hatched overflow bar."""
    plot = _Plot(name, title)
    shown = [(v, s) for v, p, s in zip(values, present, series) if p and v > 0]
    missing = sum(not p for p in present)
    zero = sum(1 for v, p in zip(values, present) if p and v <= 0)
    upper, cut = outlier_cut([v for v, _ in shown])
    bins = Bins(upper, integer=True, cut=cut)
    counts = [[0] * (bins.n + 1) for _ in names]
    over: list[float] = []
    for v, s in shown:
        b = bins.index(v)
        counts[s][b] += 1
        if b == bins.n:
            over.append(v)
    _series_bars(plot, bins, counts, colors, names, unit, what)
    ticks = nice_ticks(bins.hi, integer=True, nbins=6)
    while ticks[-1] > bins.hi + 1e-9:  # no tick beyond the cut
        ticks.pop()
    if not bins.centred:
        plot.x_ticks(ticks)
    else:
        plot.x_ticks([t for t in nice_ticks(bins.hi, integer=True, nbins=8) if t <= bins.hi])
    if over:
        _over_label(plot, bins, unit, over)
    _count_axis(plot, counts)
    if not shown:
        plot.message("no model calls recorded" if zero or not missing else "no trajectories")
    if zero and shown:
        plot.notes.append(f"not shown: {trials(zero)} without model calls (0 {unit})")
    if missing:
        plot.notes.append(f"not shown: {trials(missing)} without a trajectory")
    return plot


def category_plot(cats: Sequence[str], labels: Sequence[str], rows: Mapping[tuple[int, int], Mapping[str, Any]],
                  names: Sequence[str], colors: Sequence[str]) -> _Plot:
    """Mean reward per category and series with the 95% CI; rows[(series, category index)] is a summary
    row (absent: the series has no trials there).

    Columns when every name wraps under its group of bars and the bars are wide enough for their value;
    else one row per category with the names on the left, the plot as tall as it needs to be.
    """
    S, C = len(names), len(cats)
    shown = [printable(str(label)) for label in labels]
    slot_pt = AX_W / max(1, C)
    wrapped: list[list[str] | None] = []
    size = FONT
    if slot_pt * 0.8 / max(1, S) >= SMALL + 1:
        for size in (FONT, FONT - 1.5):
            wrapped = [wrap(text, slot_pt - 6, size) for text in shown]
            if all(w is not None for w in wrapped):
                break
    columns = bool(wrapped) and all(w is not None for w in wrapped)
    band_pt = S * ROW_H + 8
    plot = _Plot("plot-category", "Mean reward per category, with 95% confidence intervals",
                 ax_h=AX_H if columns else max(60.0, C * band_pt), grid="y" if columns else "x")
    ax = plot.ax
    ticks = [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    if columns:
        plot.y_axis(ticks, "mean reward", headroom=0.2)  # room for "1.00" turned upright
        mark_size = plot.points_to_y(ZERO_MARK)
    else:
        plot.x_ticks(ticks)
        ax.set_xlim(0, 1.25)
        ax.spines["bottom"].set_bounds(0, 1)
        ax.set_xlabel("mean reward")
        ax.set_ylim(-0.5, C - 0.5)
        ax.set_yticks([])
        mark_size = ZERO_MARK / AX_W * 1.25
    inner = 0.8 / max(1, S)
    bar_pt = inner * (slot_pt if columns else band_pt)
    for c in range(C):
        for s in range(S):
            # columns: x from the left, series left to right; rows: y from the top, series top to bottom
            start = c + 0.1 + s * inner if columns else (C - 1 - c) + 0.4 - (s + 1) * inner
            mid = start + inner / 2
            row = rows.get((s, c))
            where = f"{names[s]} · {labels[c]}"
            mean = None if row is None else row.get("mean_reward")
            if mean is None:
                why = "no trials" if row is None else f"no graded trials ({row.get('errors', 0)} errors)"
                if columns:
                    t = ax.text(mid, 0.02, "no data", rotation=90, ha="center", va="bottom", fontsize=SMALL - 0.5,
                                color="#888888", style="italic")
                else:
                    t = ax.text(0.01, mid, "no data", ha="left", va="center", fontsize=SMALL - 0.5,
                                color="#888888", style="italic")
                plot.tip(t, f"nodata-{s}-{c}", f"{where}: no data, {why}")
                continue
            ci = row.get("mean_reward_ci") if row else None
            n = row.get("trials", 0) if row else 0
            detail = f"{where}: mean reward {mean:.3f} over {trials(n)}" + (
                f", 95% CI {ci[0]:.3f}–{ci[1]:.3f}" if ci else "")
            if mean > 0:
                bar = (ax.bar(start, mean, inner, align="edge", color=colors[s], linewidth=0) if columns else
                       ax.barh(start, mean, inner, align="edge", color=colors[s], linewidth=0))[0]
                plot.tip(bar, f"bar-{s}-{c}", detail)
            else:  # a mark just outside the axis, where no bar can be
                xy, wh = ((start, -mark_size), (inner, mark_size)) if columns else ((-mark_size, start), (mark_size, inner))
                mark = _rectangle(xy, wh, colors[s])
                ax.add_patch(mark)
                plot.tip(mark, f"zero-{s}-{c}", detail + " (drawn as a mark beside the axis)")
            top = mean
            if ci and ci[1] > ci[0]:
                line = (ax.vlines(mid, ci[0], ci[1], color="#222222", linewidth=0.9, zorder=4) if columns else
                        ax.hlines(mid, ci[0], ci[1], color="#222222", linewidth=0.9, zorder=4))
                plot.tip(line, f"ci-{s}-{c}", detail)
                top = max(top, ci[1])
            if columns:
                plot.value_label(mid, top, f"{mean:.2f}", bar_pt, f"value-{s}-{c}")
            else:
                ax.annotate(f"{mean:.2f}", (top, mid), xytext=(2, 0), textcoords="offset points", ha="left",
                            va="center", fontsize=min(SMALL, bar_pt), color="#333333", gid=f"value-{s}-{c}",
                            annotation_clip=False)
    _category_names(plot, shown, labels, wrapped, size, columns)
    if not C:
        plot.message("no categories")
    return plot


def _rectangle(xy: tuple[float, float], wh: tuple[float, float], color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(xy, wh[0], wh[1], facecolor=color, edgecolor="#222222", linewidth=0.6, clip_on=False, zorder=3)


def _category_names(plot: _Plot, shown: Sequence[str], labels: Sequence[str], wrapped: Sequence[list[str] | None],
                    size: float, columns: bool) -> None:
    """Category names drawn as outlines (no record text in the SVG), the full name as the tooltip."""
    from matplotlib import patheffects
    from matplotlib.transforms import offset_copy

    ax, C = plot.ax, len(shown)
    if columns:
        ax.set_xlim(0, max(1, C))
        ax.set_xticks([c + 0.5 for c in range(C)], [""] * C)
        ax.tick_params(axis="x", length=0)
        trans = offset_copy(ax.get_xaxis_transform(), fig=plot.fig, y=-ZERO_MARK - 4, units="points")
    else:
        trans = offset_copy(ax.get_yaxis_transform(), fig=plot.fig, x=-ZERO_MARK - 4, units="points")
    for c, text in enumerate(shown):
        if columns:
            t = ax.text(c + 0.5, 0, "\n".join(wrapped[c] or [text]), transform=trans, ha="center", va="top",
                        fontsize=size, linespacing=1.15, parse_math=False, path_effects=[patheffects.Normal()])
        else:
            lines = fit_lines(text, ROW_LABEL_W, FONT, 2)
            t = ax.text(0, C - 1 - c, "\n".join(lines), transform=trans, ha="right", va="center", fontsize=FONT,
                        linespacing=1.1, parse_math=False, path_effects=[patheffects.Normal()])
        plot.tip(t, f"label-{c}", str(labels[c]))


# ---- all of it ----

def build_plots(index: Mapping[str, Sequence[Any]], stats: Mapping[str, Sequence[Mapping[str, Any]]],
                runs: Sequence[str], category_labels: Mapping[str, str], has_trajectory: Sequence[bool]) -> dict[str, Any]:
    """{"svg": {plot id: SVG element}, "tips": {element id: text}, "series": [{"name", "color"}]}.

    `index` has the report's columns (run, agent, cat, reward, tokens, turns); `stats` the summary rows
    per run. Tips and series names are record text: the page shows them only as text. Raises ImportError
    without matplotlib.
    """
    import matplotlib

    multi = len(runs) > 1
    names: list[str] = []
    pos: dict[str, int] = {}
    series: list[int] = []
    for run, agent in zip(index["run"], index["agent"]):
        name = f"{run} · {agent}" if multi else str(agent)
        if name not in pos:
            pos[name] = len(names)
            names.append(name)
        series.append(pos[name])
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    cats = sorted({str(row["category"]) for r in runs for row in stats.get(r, []) if row.get("category") != "all"})
    rows: dict[tuple[int, int], Mapping[str, Any]] = {}
    for r in runs:
        for row in stats.get(r, []):
            name = f"{r} · {row['agent']}" if multi else str(row["agent"])
            if row.get("category") == "all" or name not in pos:
                continue
            rows[(pos[name], cats.index(str(row["category"])))] = row
    with matplotlib.rc_context(_RC), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs missing from the font are drawn as boxes
        plots = [reward_plot(index["reward"], series, names, colors),
                 category_plot(cats, [category_labels.get(c, c) for c in cats], rows, names, colors),
                 usage_plot("plot-tokens", "Tokens per trial", index["tokens"], has_trajectory, series, names,
                            colors, "tokens", "tokens per trial (prompt + completion)"),
                 usage_plot("plot-turns", "Model turns per trial", index["turns"], has_trajectory, series, names,
                            colors, "turns", "model turns per trial")]
        svgs = {p.name: p.svg() for p in plots}
    tips = {f"{p.name}-{gid}": text for p in plots for gid, text in p.tips.items()}
    return {"svg": svgs, "tips": tips, "series": [{"name": n, "color": c} for n, c in zip(names, colors)]}
