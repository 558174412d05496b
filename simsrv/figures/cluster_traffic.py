"""Interconnect traffic of a cluster against its nodes and its players."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.sweep.statistics import ci95_half_width

METRICS = {
    "interconnect_bytes_per_s": "interconnect traffic (bytes/s)",
    "interconnect_messages_per_s": "interconnect messages/s",
}


def at_capacity(points: pd.DataFrame) -> pd.DataFrame:
    """Per search (``nodes``, ``zoning``, ``profile``, ``seed``), its point at capacity: the
    largest client count that met the rule (searches where none met are left out)."""
    met = points[points.met]
    keys = ["nodes", "zoning", "profile", "seed"]
    best = met.loc[met.groupby(keys).clients.idxmax()]
    return best.reset_index(drop=True)


def traffic_figure(points: pd.DataFrame, title: str = "") -> Figure:
    """Top: bytes/s and messages/s on the interconnect against players, every point of the
    capacity searches (met: filled; overloaded: hollow), one colour per node count.
    Bottom: the same at capacity against nodes, one line per zoning and profile (mean and 95 %
    CI over seeds).

    ``points``: columns ``nodes``, ``zoning``, ``profile``, ``seed``, ``clients``, ``met`` and
    the two :data:`METRICS`.
    """
    fig, axes = plt.subplots(2, 2, figsize=(10.5, 7.6), layout="constrained")
    several = points[points.nodes > 1]
    cmap = plt.get_cmap("viridis")
    counts = sorted(several.nodes.unique())
    for j, (metric, label) in enumerate(METRICS.items()):
        ax = axes[0, j]
        for k, nodes in enumerate(counts):
            part = several[several.nodes == nodes]
            colour = cmap(k / max(1, len(counts) - 1))
            met = part[part.met]
            ax.scatter(met.clients, met[metric], s=16, color=colour, label=f"{nodes} nodes")
            over = part[~part.met]
            ax.scatter(over.clients, over[metric], s=16, facecolors="none", edgecolors=colour)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("players (hollow: overloaded)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax = axes[1, j]
        capacity = at_capacity(several)
        for (zoning, profile), part in capacity.groupby(["zoning", "profile"]):
            stats = part.groupby("nodes")[metric].agg(["mean", ci95_half_width])
            ax.errorbar(
                stats.index,
                stats["mean"],
                yerr=np.nan_to_num(stats["ci95_half_width"].to_numpy()),
                marker="o",
                capsize=3,
                label=f"{zoning}, {profile}",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.set_xlabel("server nodes (at capacity)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or "Interconnect traffic against players and nodes", fontsize=10)
    return fig
