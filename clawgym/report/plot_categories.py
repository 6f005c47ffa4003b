"""The report's plot of mean reward per category with its 95% CI: columns when the category names wrap
under their bars, else one row per category with its name beside it; names drawn as glyph outlines."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..files.textsafe import printable
from .plot_figure import AX_H, AX_W, SMALL, ZERO_MARK, Plot
from .plot_scale import FONT, fit_lines, trials, wrap

ROW_H = 10.0  # points per bar when categories are rows
ROW_LABEL_W = 140.0  # points for a category name beside its row (two lines; longer names end in "…")


def category_plot(
    cats: Sequence[str],
    labels: Sequence[str],
    rows: Mapping[tuple[int, int], Mapping[str, Any]],
    names: Sequence[str],
    colors: Sequence[str],
) -> Plot:
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
    plot = Plot(
        "plot-category",
        "Mean reward per category, with 95% confidence intervals",
        ax_h=AX_H if columns else max(60.0, C * band_pt),
        grid="y" if columns else "x",
    )
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
                    t = ax.text(
                        mid,
                        0.02,
                        "no data",
                        rotation=90,
                        ha="center",
                        va="bottom",
                        fontsize=SMALL - 0.5,
                        color="#888888",
                        style="italic",
                    )
                else:
                    t = ax.text(
                        0.01,
                        mid,
                        "no data",
                        ha="left",
                        va="center",
                        fontsize=SMALL - 0.5,
                        color="#888888",
                        style="italic",
                    )
                plot.tip(t, f"nodata-{s}-{c}", f"{where}: no data, {why}")
                continue
            ci = row.get("mean_reward_ci") if row else None
            n = row.get("trials", 0) if row else 0
            detail = f"{where}: mean reward {mean:.3f} over {trials(n)}" + (
                f", 95% CI {ci[0]:.3f}–{ci[1]:.3f}" if ci else ""
            )
            if mean > 0:
                bar = (
                    ax.bar(start, mean, inner, align="edge", color=colors[s], linewidth=0)
                    if columns
                    else ax.barh(start, mean, inner, align="edge", color=colors[s], linewidth=0)
                )[0]
                plot.tip(bar, f"bar-{s}-{c}", detail)
            else:  # a mark just outside the axis, where no bar can be
                xy, wh = (
                    ((start, -mark_size), (inner, mark_size)) if columns else ((-mark_size, start), (mark_size, inner))
                )
                mark = _rectangle(xy, wh, colors[s])
                ax.add_patch(mark)
                plot.tip(mark, f"zero-{s}-{c}", detail + " (drawn as a mark beside the axis)")
            top = mean
            if ci and ci[1] > ci[0]:
                line = (
                    ax.vlines(mid, ci[0], ci[1], color="#222222", linewidth=0.9, zorder=4)
                    if columns
                    else ax.hlines(mid, ci[0], ci[1], color="#222222", linewidth=0.9, zorder=4)
                )
                plot.tip(line, f"ci-{s}-{c}", detail)
                top = max(top, ci[1])
            if columns:
                plot.value_label(mid, top, f"{mean:.2f}", bar_pt, f"value-{s}-{c}")
            else:
                ax.annotate(
                    f"{mean:.2f}",
                    (top, mid),
                    xytext=(2, 0),
                    textcoords="offset points",
                    ha="left",
                    va="center",
                    fontsize=min(SMALL, bar_pt),
                    color="#333333",
                    gid=f"value-{s}-{c}",
                    annotation_clip=False,
                )
    _category_names(plot, shown, labels, wrapped, size, columns)
    if not C:
        plot.message("no categories")
    return plot


def _rectangle(xy: tuple[float, float], wh: tuple[float, float], color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(xy, wh[0], wh[1], facecolor=color, edgecolor="#222222", linewidth=0.6, clip_on=False, zorder=3)


def _category_names(
    plot: Plot,
    shown: Sequence[str],
    labels: Sequence[str],
    wrapped: Sequence[list[str] | None],
    size: float,
    columns: bool,
) -> None:
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
            t = ax.text(
                c + 0.5,
                0,
                "\n".join(wrapped[c] or [text]),
                transform=trans,
                ha="center",
                va="top",
                fontsize=size,
                linespacing=1.15,
                parse_math=False,
                path_effects=[patheffects.Normal()],
            )
        else:
            lines = fit_lines(text, ROW_LABEL_W, FONT, 2)
            t = ax.text(
                0,
                C - 1 - c,
                "\n".join(lines),
                transform=trans,
                ha="right",
                va="center",
                fontsize=FONT,
                linespacing=1.1,
                parse_math=False,
                path_effects=[patheffects.Normal()],
            )
        plot.tip(t, f"label-{c}", str(labels[c]))
