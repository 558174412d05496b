"""How big the BSP groups are: the distribution of group sizes, per map (or any series)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure


def group_size_figure(
    group_sizes: pd.DataFrame, series: tuple[str, ...] = ("map",), title: str = ""
) -> Figure:
    """Left: share of groups of each size; right: share of grouped entities in groups of that
    size (where the work is: one giant group holds most entities while being one group).

    ``group_sizes`` columns: the ``series`` columns, ``size`` (entities per group) and
    ``groups`` (how many groups of that size), summed over seeds.
    """
    fig, (count_ax, entity_ax) = plt.subplots(1, 2, figsize=(11.0, 4.2), layout="constrained")
    for key, rows in group_sizes.groupby(list(series), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(_describe(c, v) for c, v in zip(series, key, strict=True))
        counts = rows.groupby("size")["groups"].sum().sort_index()
        entities = counts * counts.index
        count_ax.plot(counts.index, counts / counts.sum(), marker="o", markersize=3, label=label)
        entity_ax.plot(entities.index, entities / entities.sum(), marker="o", markersize=3)
        mean = entities.sum() / counts.sum()
        count_ax.axvline(mean, linestyle=":", linewidth=0.8, color=count_ax.lines[-1].get_color())
    for ax, what in ((count_ax, "share of groups"), (entity_ax, "share of grouped entities")):
        ax.set_xscale("log")
        ax.set_xlabel("group size (entities)")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    count_ax.legend(fontsize=8, title="dotted: mean size", title_fontsize=8)
    fig.suptitle(title or "BSP group sizes per frame", fontsize=10)
    return fig


def _describe(column: str, value) -> str:
    if column == "map":
        return str(value)
    return f"{value} {'CPUs' if column == 'cpus' else column}"
