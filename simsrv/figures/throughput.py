"""Throughput against clients or CPUs, one line per strategy with its 95 % confidence band
over seeds.

The first panel is what a player gets: replies/s, with the rate the clients offer (clients x
``clients.rate_hz`` packets/s) drawn as a dashed black line; every strategy that keeps up sits
on it.  Points where the server is overloaded (:mod:`simsrv.sweep.overload`: replies below
95 % of the offered packets/s, drops above 1 %, or a p95 response time above one client frame)
are ringed in red.  The second and third
panels are how the server gets there: frames/s and messages/frame (log scales with labelled
1-2-5 ticks when the values span a decade, else linear; a server that runs fewer, bigger
frames is not slower for its players).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from simsrv.figures.style import column_label, strategy_colour
from simsrv.sweep.statistics import mean_ci

LINESTYLES = ("-", "--", ":", "-.")
LABELS = {
    "replies_per_s": "replies/s",
    "frames_per_s": "frames/s",
    "messages_per_frame": "messages/frame",
    "parallel_fraction": "parallel-time fraction (all CPUs busy)",
}
OVERLOADED = "#d62728"
OVERLOADED_LABEL = "overloaded (replies < 95 % offered,\ndrops > 1 % or p95 response > 1 frame)"
OFFERED_LABEL = "offered (clients x packet rate)"


def metric_lines(ax: Axes, runs: pd.DataFrame, metric: str, x: str, series: str | None) -> int:
    """Mean of ``metric`` against column ``x``, a line per strategy (and per value of
    ``series``, told apart by line style), with the 95 % confidence band over seeds; overloaded
    points (when ``runs`` has the columns of the flag) ringed in red.  Returns how many points
    are ringed."""
    summary = mean_ci(runs, [metric])
    ringed = 0
    series_values = sorted(summary[series].unique()) if series else [None]
    for strategy, rows in summary.groupby("strategy", sort=False):
        for k, value in enumerate(series_values):
            line = rows if value is None else rows[rows[series] == value]
            line = line.sort_values(x)
            label = strategy if value is None else f"{strategy}, {value} {column_label(series)}"
            colour = strategy_colour(str(strategy))
            ax.plot(
                line[x],
                line["mean"],
                LINESTYLES[k % len(LINESTYLES)],
                marker="o",
                color=colour,
                label=label,
            )
            band = line["ci95"].fillna(0.0)
            ax.fill_between(
                line[x], line["mean"] - band, line["mean"] + band, color=colour, alpha=0.2
            )
            if "overloaded" in line:
                hot = line[line["overloaded"].astype(bool)]
                ringed += len(hot)
                ax.scatter(
                    hot[x],
                    hot["mean"],
                    s=110,
                    facecolors="none",
                    edgecolors=OVERLOADED,
                    linewidths=1.6,
                    zorder=5,
                )
    ax.set_xlabel(column_label(x))
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.grid(True, alpha=0.3)
    return ringed


def offered_line(ax: Axes, runs: pd.DataFrame, x: str) -> None:
    """The offered packets/s (mean over the runs at each ``x``) as a dashed black line."""
    offered = runs.groupby(x)["offered_per_s"].mean().sort_index()
    ax.plot(offered.index, offered.to_numpy(), "--", color="black", linewidth=1.2, zorder=4)


def readable_log_ticks(ax: Axes) -> None:
    """A log y axis labelled at 1, 2 and 5 times each power of ten (plain numbers, no 10^k)
    when the plotted means span a decade or more; a linear axis otherwise (a log axis over a
    narrower range shows one label or none)."""
    values = np.concatenate([line.get_ydata() for line in ax.get_lines()] or [np.array([])])
    values = values[np.isfinite(values) & (values > 0)]
    if len(values) == 0 or values.max() < 10 * values.min():
        ax.set_ylim(0, None)
        return
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def overloaded_handle() -> Line2D:
    """The legend entry of the red ring that marks overloaded points."""
    return Line2D(
        [],
        [],
        linestyle="",
        marker="o",
        markersize=10,
        markerfacecolor="none",
        markeredgecolor=OVERLOADED,
        markeredgewidth=1.6,
    )


def axis_and_series(runs: pd.DataFrame) -> tuple[str, str | None]:
    """Plot against clients when the grid varies them, else against CPUs."""
    if runs["clients"].nunique() > 1:
        return "clients", "cpus" if runs["cpus"].nunique() > 1 else None
    return "cpus", None


def _x_axis(ax: Axes, runs: pd.DataFrame, x: str) -> None:
    if x == "cpus" or runs[x].max() / runs[x].min() > 8:
        ax.set_xscale("log", base=2 if x == "cpus" else 10)
    values = sorted(runs[x].unique())
    ax.set_xticks(values, [str(v) for v in values])
    ax.minorticks_off()


def throughput_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Replies/s with the offered rate (first panel), frames/s and messages/frame (``runs``:
    the comparison's runs table, with ``offered_per_s``)."""
    x, series = axis_and_series(runs)
    fig, axes = plt.subplots(
        1, 3, figsize=(15.0, 4.6), layout="constrained", gridspec_kw={"width_ratios": [1.3, 1, 1]}
    )
    replies_ax, frames_ax, messages_ax = axes
    metric_lines(replies_ax, runs, "replies_per_s", x, series)
    if "offered_per_s" in runs:
        offered_line(replies_ax, runs, x)
    replies_ax.set_ylim(0, None)
    replies_ax.set_title("what players get: replies/s", fontsize=9, loc="left")
    for ax, metric in ((frames_ax, "frames_per_s"), (messages_ax, "messages_per_frame")):
        metric_lines(ax, runs, metric, x, series)
        readable_log_ticks(ax)
        scale = " (log)" if ax.get_yscale() == "log" else ""
        ax.set_title(f"{'how: ' if metric == 'frames_per_s' else ''}{LABELS[metric]}{scale}",
                     fontsize=9, loc="left")  # fmt: skip
    for ax in axes:
        _x_axis(ax, runs, x)
    handles, labels = replies_ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], linestyle="--", color="black"),
        overloaded_handle(),
    ]
    labels += [OFFERED_LABEL, OVERLOADED_LABEL]
    fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    fig.suptitle(title or "Throughput (mean and 95 % CI over seeds)", fontsize=10)
    return fig


def parallel_fraction_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Share of the measured time with every CPU busy, against CPUs."""
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    series = "clients" if runs["clients"].nunique() > 1 else None
    ringed = metric_lines(ax, runs, "parallel_fraction", "cpus", series)
    cpus = sorted(runs["cpus"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(cpus, [str(c) for c in cpus])
    ax.minorticks_off()
    ax.set_ylim(0, None)
    handles, labels = ax.get_legend_handles_labels()
    if ringed:
        handles.append(overloaded_handle())
        labels.append(OVERLOADED_LABEL)
    ax.legend(handles, labels, fontsize=8)
    ax.set_title(title or "Parallel-time fraction (mean and 95 % CI over seeds)", fontsize=10)
    return fig
