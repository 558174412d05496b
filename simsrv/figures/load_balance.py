"""Load balance among processors (the style of Cordeiro et al. 2007, Fig. 1): each CPU's share
of the machine's busy time, per strategy, against the even share ``1 / CPUs``."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.figures.style import strategy_colour


def load_balance_figure(cpu_load: pd.DataFrame, title: str = "") -> Figure:
    """One panel per CPU count, bars per strategy and CPU (mean over seeds, range as error bar).

    ``cpu_load`` columns: ``strategy``, ``cpus``, ``clients``, ``seed``, ``cpu`` and
    ``utilization`` (busy share of the window).  A CPU's share is its busy time over the sum of
    all CPUs' busy time in the same run.  With several client counts, the largest is shown.
    """
    clients = int(cpu_load["clients"].max())
    data = cpu_load[cpu_load["clients"] == clients].copy()
    total = data.groupby(["strategy", "cpus", "seed"]).utilization.transform("sum")
    data["share"] = (data["utilization"] / total).fillna(0.0)
    stats = data.groupby(["strategy", "cpus", "cpu"], sort=False).share.agg(["mean", "min", "max"])
    cpu_counts = sorted(data["cpus"].unique())
    strategies = list(dict.fromkeys(data["strategy"]))
    fig_width = min(16.0, max(5.0, 1.2 + 1.1 * sum(min(c, 16) for c in cpu_counts)))
    fig, axes = plt.subplots(
        1,
        len(cpu_counts),
        figsize=(fig_width, 4.0),
        layout="constrained",
        squeeze=False,
    )
    width = 0.8 / len(strategies)
    for ax, n in zip(axes[0], cpu_counts, strict=True):
        for k, strategy in enumerate(strategies):
            if (strategy, n) not in stats.index.droplevel("cpu"):
                continue
            s = stats.loc[(strategy, n)]
            x = s.index.to_numpy() + (k - (len(strategies) - 1) / 2) * width
            ax.bar(
                x,
                s["mean"],
                width * 0.92,
                yerr=[s["mean"] - s["min"], s["max"] - s["mean"]],
                color=strategy_colour(strategy),
                label=strategy,
                capsize=2,
            )
        ax.axhline(1.0 / n, color="black", linestyle=":", linewidth=1, label="even share")
        ax.set_xticks(np.arange(n), [str(c) for c in range(n)])
        ax.set_xlabel(f"CPU ({n} CPUs)")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("share of the machine's busy time")
    axes[0][0].legend(fontsize=8)
    title = title or f"Load balance among processors ({clients} clients)"
    # Wrapped to the figure's width (~12 characters per inch at 10 pt), never cut at its edges.
    fig.suptitle(
        "\n".join(textwrap.wrap(title, int(fig_width * 12), break_on_hyphens=False)), fontsize=10
    )
    return fig
