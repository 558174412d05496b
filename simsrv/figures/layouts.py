"""The death32c stand-in's layouts against the published death32c figures.

One panel per quantity (frames/s, messages/frame, groups/frame, entities/group), each run a
colour: every (layout, seed) point at its layout's distance between the two concentration
areas, the layout means joined, and the published value of each run as a dashed line.  Input:
the table of :func:`simsrv.studies.layouts.measure` and the published values of
:func:`simsrv.studies.layouts.published` (from the reference table).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

PANELS = {
    "frames_per_s": "frames/s",
    "messages_per_frame": "messages/frame",
    "groups_per_frame": "groups/frame",
    "entities_per_group": "entities/group",
}
COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")


def layouts_figure(table: pd.DataFrame, published: dict[tuple[str, str], float]) -> Figure:
    """2 x 2 panels of ``table`` (columns ``run``, ``layout``, ``hotspot_distance`` and the
    :data:`PANELS` quantities); ``published[(run, column)]``: the paper's value, if any."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for (column, label), ax in zip(PANELS.items(), axes.flat, strict=True):
        for (name, part), colour in zip(table.groupby("run", sort=False), COLOURS, strict=False):
            ax.scatter(part["hotspot_distance"], part[column], s=14, color=colour, alpha=0.5)
            means = part.groupby("hotspot_distance")[column].mean()
            ax.plot(
                means.index, means.to_numpy(), "-o", color=colour, ms=4, label=f"{name} (model)"
            )
            paper = published.get((name, column))
            if paper is not None:
                ax.axhline(paper, color=colour, ls="--", lw=1, label=f"{name} (death32c)")
        ax.set_ylabel(label)
        ax.set_yscale("log" if column in ("frames_per_s", "messages_per_frame") else "linear")
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("distance between the two concentration areas (units)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(
        "death32c-like layouts: each point a (layout, seed); published death32c values dashed"
    )
    fig.tight_layout()
    return fig
