"""What players feel: the distribution of response times per strategy, as a CDF on a log axis.

A packet's response time is the time from its arrival at the server's socket to the end of the
frame that read it (:mod:`simsrv.workload.response_time`).  The curves come from the runs'
sketches summed over seeds (the sketch of the union of their packets), each point the upper
edge of a bin (within 1 % of the values it holds); the dotted line marks one client frame
(``1 / clients.rate_hz``): above it a player has sent its next packet before the answer to this
one left the server, the ``overloaded`` rule of the tables at the 95th percentile.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.figures.style import series_label


def response_time_figure(
    response: pd.DataFrame,
    series: tuple[str, ...] = ("strategy",),
    client_period_ms: float | None = None,
    title: str = "",
) -> Figure:
    """One CDF per ``series`` value: share of the measured packets answered within ``x`` ms.

    ``response`` columns: the ``series`` columns, ``response_ms`` (a bin's value, ms) and
    ``packets`` (packets in the bin), any number of runs (they are summed)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for k, (key, rows) in enumerate(response.groupby(list(series), sort=False)):
        key = key if isinstance(key, tuple) else (key,)
        counts = rows.groupby("response_ms")["packets"].sum().sort_index()
        values = counts.index.to_numpy()
        share = np.cumsum(counts.to_numpy()) / counts.sum()
        p95 = values[np.searchsorted(share, 0.95)]
        label = series_label(series, key, ("strategy",))
        ax.step(
            np.maximum(values, 1e-3),
            share,
            where="post",
            color=plt.get_cmap("tab10")(k % 10),
            label=f"{label} (p95 {p95:.3g} ms)",
        )
    if client_period_ms is not None:
        ax.axvline(client_period_ms, color="0.3", linestyle=":", linewidth=1)
        ax.annotate(
            "one client frame",
            (client_period_ms, 0.02),
            rotation=90,
            fontsize=7,
            color="0.3",
            ha="right",
        )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("response time (ms, log scale): arrival at the socket to the frame's end")
    ax.set_ylabel("share of packets answered within")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(title or "Response time per strategy", fontsize=10)
    return fig
