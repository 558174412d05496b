"""Capacity of a cluster against its number of nodes (one node: today's single server)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.sweep.statistics import ci95_half_width


def capacity_stats(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95 % CI half-width of ``capacity_clients`` per ``zoning``, ``profile`` and
    ``nodes`` (rows: one per search and seed)."""
    out = []
    for (zoning, profile, nodes), part in rows.groupby(["zoning", "profile", "nodes"]):
        values = part.capacity_clients.to_numpy(dtype=float)
        out.append(
            {
                "zoning": zoning,
                "profile": profile,
                "nodes": nodes,
                "mean": values.mean(),
                "ci95": ci95_half_width(values),
                "n": len(values),
            }
        )
    return pd.DataFrame(out)


def capacity_figure(rows: pd.DataFrame, title: str = "") -> Figure:
    """Left: capacity (clients) against nodes, one line per zoning and interconnect profile,
    mean over seeds with 95 % CI bars, and the dotted line of perfect scaling (nodes x the
    one-node capacity).  Right: capacity per node (the same over nodes).

    ``rows``: columns ``nodes``, ``zoning``, ``profile``, ``seed``, ``capacity_clients``.
    """
    stats = capacity_stats(rows)
    fig, (total_ax, per_ax) = plt.subplots(1, 2, figsize=(10.5, 4.3), layout="constrained")
    markers = "osD^v<>"
    for i, ((zoning, profile), part) in enumerate(stats.groupby(["zoning", "profile"])):
        part = part.sort_values("nodes")
        yerr = np.nan_to_num(part.ci95.to_numpy())
        label = f"{zoning}, {profile}"
        for ax, scale in ((total_ax, 1.0), (per_ax, part.nodes.to_numpy())):
            ax.errorbar(
                part.nodes,
                part["mean"] / scale,
                yerr=yerr / scale,
                marker=markers[i % len(markers)],
                capsize=3,
                label=label,
            )
    single = stats[stats.nodes == 1]["mean"]
    nodes = np.sort(stats.nodes.unique())
    if len(single):
        one = float(single.mean())
        total_ax.plot(nodes, one * nodes, ":", color="grey", label="nodes x one node")
        per_ax.axhline(one, ls=":", color="grey", label="one node (today's server)")
    for ax in (total_ax, per_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(nodes, [str(n) for n in nodes])
        ax.set_xlabel("server nodes")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    total_ax.set_yscale("log", base=2)
    total_ax.set_ylabel("capacity (clients, mean and 95 % CI over seeds)")
    per_ax.set_ylabel("capacity per node (clients)")
    per_ax.set_ylim(bottom=0)
    fig.suptitle(title or "Capacity against server nodes", fontsize=10)
    return fig
