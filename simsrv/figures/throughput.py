"""Frames/s, messages/frame and the parallel-time fraction against clients or CPUs, one line
per strategy with its 95 % confidence band over seeds."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simsrv.figures.style import column_label, strategy_colour
from simsrv.sweep.statistics import mean_ci

LINESTYLES = ("-", "--", ":", "-.")
LABELS = {
    "frames_per_s": "frames/s",
    "messages_per_frame": "messages/frame",
    "parallel_fraction": "parallel-time fraction (all CPUs busy)",
}


def metric_lines(ax: Axes, runs: pd.DataFrame, metric: str, x: str, series: str | None) -> None:
    """Mean of ``metric`` against column ``x``, a line per strategy (and per value of
    ``series``, told apart by line style), with the 95 % confidence band over seeds."""
    summary = mean_ci(runs, [metric])
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
    ax.set_xlabel(column_label(x))
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.grid(True, alpha=0.3)


def axis_and_series(runs: pd.DataFrame) -> tuple[str, str | None]:
    """Plot against clients when the grid varies them, else against CPUs."""
    if runs["clients"].nunique() > 1:
        return "clients", "cpus" if runs["cpus"].nunique() > 1 else None
    return "cpus", None


def throughput_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Frames/s and messages/frame (``runs``: the comparison's runs table)."""
    x, series = axis_and_series(runs)
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2), layout="constrained")
    for ax, metric in zip(axes, ("frames_per_s", "messages_per_frame"), strict=True):
        metric_lines(ax, runs, metric, x, series)
        ax.set_yscale("log")
        if x == "cpus" or runs[x].max() / runs[x].min() > 8:
            ax.set_xscale("log", base=2 if x == "cpus" else 10)
        values = sorted(runs[x].unique())
        ax.set_xticks(values, [str(v) for v in values])
        if x == "cpus":
            ax.minorticks_off()
    axes[0].legend(fontsize=8)
    fig.suptitle(title or "Throughput (mean and 95 % CI over seeds)", fontsize=10)
    return fig


def parallel_fraction_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Share of the measured time with every CPU busy, against CPUs."""
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    series = "clients" if runs["clients"].nunique() > 1 else None
    metric_lines(ax, runs, "parallel_fraction", "cpus", series)
    cpus = sorted(runs["cpus"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(cpus, [str(c) for c in cpus])
    ax.minorticks_off()
    ax.set_ylim(0, None)
    ax.legend(fontsize=8)
    ax.set_title(title or "Parallel-time fraction (mean and 95 % CI over seeds)", fontsize=10)
    return fig
