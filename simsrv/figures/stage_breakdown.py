"""Where server time goes, by stage (the report's Figures 10, 14 and 17 [R §5])."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.figures.style import column_label
from simsrv.machine.trace import is_wait
from simsrv.metrics.stages import is_barrier_category

CATEGORY_STYLE = {
    # category -> (label, colour); stacked bottom to top in this order
    "stage1": ("stage 1 (world)", "#4c72b0"),
    "stage2": ("stage 2 (requests)", "#55a868"),
    "lock_wait": ("lock wait", "#c44e52"),
    "stage3": ("stage 3 (replies)", "#dd8452"),
    "intra_frame_wait": ("intra-frame wait (barriers)", "#8172b3"),
    "os": ("OS / thread switches", "#937860"),
    "other_wait": ("other waits (join, run queue)", "#e8b4d0"),
    "idle": ("idle (waiting for packets)", "#dddddd"),
}


def _grouped(shares: pd.DataFrame, x: str) -> pd.DataFrame:
    """Mean share over seeds per (variant, x, plotted category); barrier waits summed, other
    waits (``join_wait``, ``runqueue_wait``) together; a category a seed lacks counts as 0."""
    s = shares[shares.category != "intra_frame_wait"].copy()
    at_barrier = s.category.map(is_barrier_category)
    s["category"] = s.category.where(~at_barrier, "intra_frame_wait")
    other_wait = s.category.map(is_wait) & ~s.category.isin(list(CATEGORY_STYLE))
    s["category"] = s.category.where(~other_wait, "other_wait")
    s["category"] = s.category.where(s.category.isin(list(CATEGORY_STYLE)), "os")
    per_seed = s.groupby(["variant", x, "seed", "category"], sort=False).share.sum()
    wide = per_seed.unstack("category", fill_value=0.0)
    return wide.groupby(level=["variant", x], sort=False).mean()


def stage_breakdown_figure(
    shares: pd.DataFrame,
    title: str = "Server time by stage",
    bar_labels: dict | None = None,
    x: str = "clients",
) -> Figure:
    """Stacked bars of the mean share of each thread's time per category, one group of bars
    per value of column ``x`` (client count, CPUs, ...) and one bar per variant (the report's
    Figure 10).

    Columns: ``variant``, ``x``, ``seed``, ``category`` (as in
    :func:`simsrv.metrics.stages.stage_time_fraction`) and ``share``.  ``bar_labels``: a short
    label printed above each variant's bars (e.g. its thread count).
    """
    table = _grouped(shares, x)
    variants = list(dict.fromkeys(shares.variant))
    groups = sorted(shares[x].unique())
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(11.0, 4.8), layout="constrained")
    for v, variant in enumerate(variants):
        positions = np.arange(len(groups)) + (v - (len(variants) - 1) / 2) * width
        bottom = np.zeros(len(groups))
        for category, (label, colour) in CATEGORY_STYLE.items():
            values = np.array(
                [
                    table[category].get((variant, g), 0.0) if category in table else 0.0
                    for g in groups
                ]
            )
            ax.bar(
                positions,
                values,
                width * 0.92,
                bottom=bottom,
                color=colour,
                label=label if v == 0 else None,
            )
            bottom += values
        if bar_labels and variant in bar_labels:
            for position in positions:
                ax.text(position, 1.01, bar_labels[variant], ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])
    ax.set_xlabel(f"{column_label(x)} (bars: " + ", ".join(variants) + ")")
    ax.set_ylabel("share of each thread's time (mean over threads)")
    ax.set_ylim(0, 1.08)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


def end_barrier_figure(
    per_thread: pd.DataFrame, title: str = "Stage-3 barrier waits per thread"
) -> Figure:
    """Stage-3 barrier waits per thread, one panel per client count, the variants (e.g. cyclic
    vs active replies) side by side, the first solid, the others hatched (the report's
    Figure 17).

    Columns: ``variant``, ``clients``, ``seed``, ``thread``, ``category`` and ``share``.
    """
    waits = ("internal_barrier_wait", "end_barrier_wait")
    colours = {"internal_barrier_wait": "#8172b3", "end_barrier_wait": "#c44e52"}
    data = per_thread[per_thread.category.isin(waits)]
    mean = data.groupby(["variant", "clients", "thread", "category"]).share.mean()
    variants = list(dict.fromkeys(per_thread.variant))
    threads = sorted(per_thread.thread.unique(), key=lambda t: (len(t), t))
    clients = sorted(per_thread.clients.unique())
    fig, axes = plt.subplots(
        1, len(clients), figsize=(4.0 * len(clients), 4.0), sharey=True, layout="constrained"
    )
    axes = np.atleast_1d(axes)
    width = 0.8 / len(variants)
    for ax, c in zip(axes, clients, strict=True):
        for v, variant in enumerate(variants):
            x = np.arange(len(threads)) + (v - (len(variants) - 1) / 2) * width
            bottom = np.zeros(len(threads))
            for wait in waits:
                values = np.array([mean.get((variant, c, t, wait), 0.0) for t in threads])
                ax.bar(
                    x,
                    values,
                    width * 0.92,
                    bottom=bottom,
                    color=colours[wait],
                    alpha=1.0 if v == 0 else 0.5,
                    hatch=None if v == 0 else "//",
                    label=f"{wait.replace('_', ' ')}, {variant}" if c == clients[0] else None,
                )
                bottom += values
        ax.set_xticks(np.arange(len(threads)), threads)
        ax.set_title(f"{c} clients", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("share of the thread's time")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig
