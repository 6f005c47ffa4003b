"""The report's histograms: the reward distribution and the tokens and model turns per trial, one bar per
series in each bin, outliers in a hatched overflow bar after a cut axis."""

from __future__ import annotations

from typing import Sequence

from .plot_figure import AX_H, AX_W, SMALL, Plot
from .plot_scale import FONT, Bins, fmt_number, nice_ticks, outlier_cut, trials


def _series_bars(
    plot: Plot, bins: Bins, counts: list[list[int]], colors: Sequence[str], names: Sequence[str], unit: str, what: str
) -> None:
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
            rect = ax.bar(
                left,
                c,
                inner,
                align="edge",
                color=colors[s],
                linewidth=0.6 if over else 0,
                edgecolor="#333333" if over else colors[s],
                hatch="////" if over else None,
            )[0]
            plot.tip(
                rect, f"{'over' if over else 'bar'}-{s}-{b}", f"{names[s]}: {trials(c)} with {bins.describe(b, unit)}"
            )
            if labelled:
                plot.value_label(left + inner / 2, c, f"{c:,}", inner * px_per_unit, f"value-{s}-{b}")
    right = bins.hi + (2.5 * bins.width if bins.cut is not None else 0)
    ax.set_xlim(bins.lo, right)
    ax.set_xlabel(what)


def _count_axis(plot: Plot, counts: list[list[int]]) -> None:
    top = max([c for row in counts for c in row] or [0])
    room = max(plot.label_room, 8.0)
    plot.y_axis(nice_ticks(max(1, top), integer=True), "trials", headroom=room / (AX_H - room))


def _over_label(plot: Plot, bins: Bins, unit: str, values_over: Sequence[float]) -> None:
    from matplotlib.transforms import offset_copy

    x = bins.hi + 2.0 * bins.width
    trans = offset_copy(plot.ax.get_xaxis_transform(), fig=plot.fig, y=-3.5, units="points")
    plot.ax.text(
        x,
        0,
        "> " + fmt_number(bins.cut or 0),
        transform=trans,
        ha="center",
        va="top",
        fontsize=FONT,
        color="#555555",
        gid="over-label",
    )
    n = len(values_over)
    plot.notes.append(
        f"axis cut at {fmt_number(bins.cut or 0)} {unit}: {trials(n)} "
        f"above it (up to {fmt_number(max(values_over))}) in the hatched bar"
    )


def reward_plot(
    rewards: Sequence[float | None], series: Sequence[int], names: Sequence[str], colors: Sequence[str]
) -> Plot:
    plot = Plot("plot-reward", "Reward distribution of graded trials")
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


def usage_plot(
    name: str,
    title: str,
    values: Sequence[int],
    present: Sequence[bool],
    series: Sequence[int],
    names: Sequence[str],
    colors: Sequence[str],
    unit: str,
    what: str,
) -> Plot:
    """A histogram of tokens or turns per trial: trials without a trajectory or without model calls are
    counted in a note; outliers go to a hatched overflow bar."""
    plot = Plot(name, title)
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
