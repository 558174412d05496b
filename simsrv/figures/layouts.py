"""The death32c stand-in's layouts against the published death32c figures.

One panel per quantity (frames/s, messages/frame, groups/frame, entities/group), each run a
colour: every (layout, seed) point at its layout's distance between the two concentration
areas, the layout means joined, and the published value of each run as a dashed line
([T §4.3.2, §4.4.3-4.4.4; P Table 1]).  Input: the table of
:func:`simsrv.studies.layouts.measure`.
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
PUBLISHED = {
    # run -> quantity -> published value [T §4.3.2, §4.4.3-4.4.4; P Table 1]
    "groups-only": {"frames_per_s": 420, "messages_per_frame": 10, "groups_per_frame": 4,
                    "entities_per_group": 7},
    "fork-wait": {"frames_per_s": 95, "messages_per_frame": 33, "groups_per_frame": 9,
                  "entities_per_group": 8},
}  # fmt: skip
COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")


def layouts_figure(table: pd.DataFrame) -> Figure:
    """2 x 2 panels of ``table`` (columns ``run``, ``layout``, ``hotspot_distance`` and the
    :data:`PANELS` quantities)."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for (column, label), ax in zip(PANELS.items(), axes.flat, strict=True):
        for (name, part), colour in zip(table.groupby("run", sort=False), COLOURS, strict=False):
            ax.scatter(part["hotspot_distance"], part[column], s=14, color=colour, alpha=0.5)
            means = part.groupby("hotspot_distance")[column].mean()
            ax.plot(
                means.index, means.to_numpy(), "-o", color=colour, ms=4, label=f"{name} (model)"
            )
            published = PUBLISHED.get(name, {}).get(column)
            if published is not None:
                ax.axhline(published, color=colour, ls="--", lw=1, label=f"{name} (death32c)")
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
