"""The course's figures: small matplotlib helpers the lessons share.

Each helper returns a `matplotlib.figure.Figure`: a notebook shows it once when it is the
cell's last expression, a script can `savefig` it, and nothing needs a display (safe under
the Agg backend, in CI and under nbgrader).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# The two stores keep their colors everywhere; lesson 04's baselines get their own.
COLORS = {"naive": "#c0504d", "disciplined": "#4f81bd", "no memory": "#a6a6a6", "full context": "#f79646",
          "oracle": "#9bbb59"}
SIZE = (6.4, 3.6)


def _figure() -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=SIZE)
    plt.close(fig)  # shown once, as the cell's value, and not again by pyplot when the cell ends
    return fig, ax


def _color(name: str) -> str | None:
    return next((c for key, c in COLORS.items() if key in name.lower()), None)


def grouped_bars(table: Mapping[str, Mapping[str, float]], *, title: str, ylabel: str,
                 ylim: tuple[float, float] | None = (0, 1.05), fmt: str = "%.2f",
                 intervals: Mapping[str, Mapping[str, tuple[float, float]]] | None = None) -> Figure:
    """Bars grouped along x: table[group][series] = value (e.g. table["recall@1"]["naive"]);
    `intervals[group][series] = (low, high)` draws each bar's interval as a whisker."""
    fig, ax = _figure()
    groups = list(table)
    series = list(dict.fromkeys(s for g in groups for s in table[g]))
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        values = [table[g].get(name, 0.0) for g in groups]
        whiskers = None
        if intervals is not None:
            spans = [intervals[g].get(name, (v, v)) for g, v in zip(groups, values)]
            whiskers = [[v - low for v, (low, _) in zip(values, spans)], [high - v for v, (_, high) in zip(values, spans)]]
        bars = ax.bar(xs, values, width, label=name, color=_color(name), yerr=whiskers, capsize=2,
                      error_kw={"elinewidth": 0.8})
        if intervals is None:  # with whiskers, the numbers belong in the table beside the figure
            ax.bar_label(bars, fmt=fmt, fontsize=8)
    ax.set_xticks(range(len(groups)), groups)
    _finish(ax, title, ylabel, ylim, legend=len(series) > 1, outside=len(series) > 3)
    return fig


def lines(x: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str, xlabel: str,
          ylabel: str, logx: bool = False, ylim: tuple[float, float] | None = None,
          xs: Mapping[str, Sequence[float]] | None = None, dashed: Sequence[str] = ()) -> Figure:
    """One line per series over x; `xs` gives a series its own x values (e.g. its store sizes),
    and the series named in `dashed` are drawn dashed (e.g. recall@1 next to recall@3)."""
    fig, ax = _figure()
    _draw_lines(ax, x, series, xs, dashed, logx)
    ax.set_xlabel(xlabel)
    _finish(ax, title, ylabel, ylim, legend=len(series) > 1)
    return fig


def lines_and_cost(x: Sequence[float], series: Mapping[str, Sequence[float]],
                   cost: Mapping[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str,
                   cost_label: str, logx: bool = False, ylim: tuple[float, float] | None = None,
                   xs: Mapping[str, Sequence[float]] | None = None, dashed: Sequence[str] = (),
                   cost_logy: bool = False) -> Figure:
    """`lines` above, and below it on the same x what each point costs (e.g. context words per
    query); a cost series takes its x from `xs` too. `cost_logy` puts the cost on a log scale."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(SIZE[0], SIZE[1] * 1.7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    plt.close(fig)
    _draw_lines(top, x, series, xs, dashed, logx)
    _finish(top, title, ylabel, ylim, legend=len(series) > 1)
    _draw_lines(bottom, x, cost, xs, dashed, logx)
    if cost_logy:
        bottom.set_yscale("log")
    bottom.set_xlabel(xlabel)
    _finish(bottom, "", cost_label, None, legend=True)
    return fig


def _draw_lines(ax, x, series, xs, dashed, logx: bool) -> None:
    for name, ys in series.items():
        ax.plot((xs or {}).get(name, x), ys, marker="o", label=name, color=_color(name),
                linestyle="--" if name in dashed else "-")
    if logx:
        ax.set_xscale("symlog", linthresh=10)


def _finish(ax, title: str, ylabel: str, ylim: tuple[float, float] | None, legend: bool,
            outside: bool = False) -> None:
    """Title, labels, grid; the legend beside the axes when it would cover many bars."""
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.grid(axis="y", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    if legend:
        place = {"loc": "upper left", "bbox_to_anchor": (1.0, 1.0)} if outside else {}
        ax.legend(frameon=False, fontsize=9, **place)
    ax.figure.tight_layout()
