"""Ping-pong bandwidth against message size, the model's curves beside [V §4.1]'s numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

PROFILE_COLOURS = {"libvip": "#1f77b4", "libvip-altered": "#2ca02c", "tcp": "#d62728"}


def pingpong_figure(model: pd.DataFrame, paper: pd.DataFrame | None = None) -> Figure:
    """Bandwidth (MB/s) against message size (bytes), one line per profile.

    ``model``: the rows of ``simsrv pingpong --json`` (``profile``, ``message_bytes``,
    ``bandwidth_MB_per_s``).  ``paper``: the same columns for the paper's stated points
    (:data:`simsrv.interconnect.paper.PAPER_POINTS`), drawn as open markers with a ±10 %
    bar (the validation tolerance).  Left: the whole range on a logarithmic size axis
    ([V] Figure 5); right: up to 10,000 B on a linear axis ([V] Figure 6), with the 2,400 B
    where [V] says TCP stops beating libVIP.
    """
    fig, (whole, small) = plt.subplots(1, 2, figsize=(11.0, 4.4), layout="constrained")
    for name, rows in model.groupby("profile", sort=False):
        colour = PROFILE_COLOURS.get(name)
        rows = rows.sort_values("message_bytes")
        for ax, part in ((whole, rows), (small, rows[rows.message_bytes <= 10000])):
            ax.plot(
                part.message_bytes, part.bandwidth_MB_per_s, "-", marker=".", color=colour,
                label=f"{name} (model)",
            )  # fmt: skip
        if paper is not None:
            points = paper[paper.profile == name]
            for ax, part in ((whole, points), (small, points[points.message_bytes <= 10000])):
                ax.errorbar(
                    part.message_bytes,
                    part.bandwidth_MB_per_s,
                    yerr=0.1 * part.bandwidth_MB_per_s,
                    fmt="o",
                    mfc="white",
                    color=colour,
                    capsize=3,
                    label=f"{name} ([V] text, ±10 %)",
                )
    whole.set_xscale("log")
    whole.set_title("[V] Figure 5: 10 to 100,000 B", fontsize=10)
    small.set_title("[V] Figure 6: up to 10,000 B", fontsize=10)
    small.axvline(2400, ls=":", color="grey")
    small.annotate("2,400 B: [V]: TCP ahead of libVIP below", (2450, 2), fontsize=8, color="grey")
    for ax in (whole, small):
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bandwidth m / t_c (MB/s, 10^6 B/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
    whole.legend(fontsize=7, loc="upper left")
    fig.suptitle("Ping-pong, 100 round trips per size: model against [V §4.1]", fontsize=10)
    return fig
