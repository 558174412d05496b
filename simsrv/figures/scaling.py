"""How the largest BSP group grows with the number of players (the "giant group" limit)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure


def largest_group_figure(scaling: pd.DataFrame) -> Figure:
    """Largest group (players) against players, one line per map; columns ``map``,
    ``players``, ``largest_group`` (one row per seed; the line is the mean, bars the range)."""
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    for name, rows in scaling.groupby("map", sort=False):
        stats = rows.groupby("players").largest_group.agg(["mean", "min", "max"])
        ax.errorbar(
            stats.index,
            stats["mean"],
            yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
            marker="o",
            capsize=3,
            label=name,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("players (map area grows with them: constant density)")
    ax.set_ylabel("largest BSP group (players)")
    ax.set_title("Largest group, 20 % of players sending in the frame", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
