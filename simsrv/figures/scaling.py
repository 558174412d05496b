"""How the largest BSP group grows with the number of players (the "giant group" limit)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure


def largest_group_figure(scaling: pd.DataFrame) -> Figure:
    """Largest group against players, one line per map.

    Columns: ``map``, ``players``, ``largest_group_players`` and ``largest_group_share`` (its
    share of all players), one row per seed; lines are the means, bars the range over seeds.
    Left: size (log-log, with a dotted line of slope 1: a group growing with the player count);
    right: share of the players.
    """
    fig, (size_ax, share_ax) = plt.subplots(1, 2, figsize=(10.0, 4.2), layout="constrained")
    for name, rows in scaling.groupby("map", sort=False):
        for ax, column in ((size_ax, "largest_group_players"), (share_ax, "largest_group_share")):
            stats = rows.groupby("players")[column].agg(["mean", "min", "max"])
            ax.errorbar(
                stats.index,
                stats["mean"],
                yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                marker="o",
                capsize=3,
                label=name,
            )
    players = sorted(scaling.players.unique())
    size_ax.plot(players, players, ":", color="grey", label="every player")
    for ax in (size_ax, share_ax):
        ax.set_xscale("log")
        ax.set_xlabel("players (the map grows with them: constant density)")
        ax.grid(True, which="both", alpha=0.3)
    size_ax.set_yscale("log")
    size_ax.set_ylabel("largest BSP group (players)")
    share_ax.set_ylabel("share of all players in the largest group")
    share_ax.set_ylim(0, 1.05)
    size_ax.legend(fontsize=8)
    fig.suptitle("Largest BSP group, 20 % of the players sending in the frame", fontsize=10)
    return fig
