"""How big the BSP groups are: the distribution of group sizes, per map (or any series).

Sizes are binned in powers of two (1, 2, 3-4, 5-8, 9-16, ...): the distribution has a long
tail (one giant group in a concentration area) that single sizes would scatter into noise.
The bins are categories, so each series is a set of bars side by side (a line between bins
would suggest values between them); series whose distributions are identical share one set of
bars.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.figures.style import series_label


def size_bins(largest: int) -> list[tuple[int, int]]:
    """Bins ``(low, high)`` of whole group sizes, inclusive: (1, 1), (2, 2), (3, 4), (5, 8),
    ... up to the first bin that holds ``largest``."""
    bins, k = [(1, 1)], 1
    while bins[-1][1] < largest:
        bins.append((2 ** (k - 1) + 1, 2**k))
        k += 1
    return bins


def group_size_figure(
    group_sizes: pd.DataFrame, series: tuple[str, ...] = ("map",), title: str = ""
) -> Figure:
    """Left: share of groups per size bin; right: share of the grouped entities per size bin
    (where the work is: one giant group holds many entities while being one group).

    ``group_sizes`` columns: the ``series`` columns, ``size`` (entities per group) and
    ``groups`` (how many groups of that size), summed over seeds.  The legend gives each
    series' mean group size.
    """
    bins = size_bins(int(group_sizes["size"].max()))
    edges = [high for _, high in bins]
    fig, (count_ax, entity_ax) = plt.subplots(1, 2, figsize=(11.0, 4.2), layout="constrained")
    positions = np.arange(len(bins))
    drawn: list[tuple[list[str], np.ndarray, np.ndarray]] = []
    for key, rows in group_sizes.groupby(list(series), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = series_label(series, key, ("map",))
        counts = rows.groupby("size")["groups"].sum()
        which = np.searchsorted(edges, counts.index.to_numpy())
        per_bin = np.bincount(which, counts.to_numpy(), minlength=len(bins))
        entities = np.bincount(which, counts.to_numpy() * counts.index, minlength=len(bins))
        same = next((d for d in drawn if np.array_equal(d[1], per_bin)), None)
        if same is not None:  # e.g. the same groups on 2 and 4 CPUs: one set of bars
            same[0].append(label)
            continue
        drawn.append(([label], per_bin, entities))
    width = 0.8 / len(drawn)
    for k, (labels, per_bin, entities) in enumerate(drawn):
        x = positions + (k - (len(drawn) - 1) / 2) * width
        mean = entities.sum() / per_bin.sum()
        colour = plt.get_cmap("tab10")(k % 10)
        label = f"{' = '.join(labels)} ({mean:.1f})"
        count_ax.bar(x, per_bin / per_bin.sum(), width * 0.92, color=colour, label=label)
        entity_ax.bar(x, entities / entities.sum(), width * 0.92, color=colour)
    names = [str(low) if low == high else f"{low}-{high}" for low, high in bins]
    for ax, what in ((count_ax, "share of groups"), (entity_ax, "share of grouped entities")):
        ax.set_xticks(positions, names, rotation=45 if len(bins) > 8 else 0)
        ax.set_xlabel("group size (entities)")
        ax.set_ylabel(what)
        ax.set_ylim(0, None)
        ax.grid(True, axis="y", alpha=0.3)
    count_ax.legend(fontsize=8, title="(mean size)", title_fontsize=8)
    fig.suptitle(title or "BSP group sizes per frame", fontsize=10)
    return fig
