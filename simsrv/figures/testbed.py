"""The real server against the model: a function of the campaign table and the model's runs.

Four panels over the conditions without a CPU quota: (a) frames/s and (b) messages/frame
against clients on dm1 at 77 packets/s, one colour per phase pattern, measured (filled, solid)
and modelled (open, dashed); (c) messages/frame against frames/s for every condition, the
curve along which the arrival pattern moves a sequential server; (d) the server's CPU busy
fraction on each map with 16 clients.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

PHASE_COLOURS = {"independent": "#1f77b4", "step": "#d62728", "hosts:4": "#2ca02c"}


def _colour(phases: str) -> str:
    return PHASE_COLOURS.get(phases, "#7f7f7f")


def testbed_figure(measured: pd.DataFrame, model: pd.DataFrame) -> Figure:
    """``measured``: a campaign's runs.parquet; ``model``: the same rows' ``model.*``."""
    table = measured.merge(model, on=["label", "role", "question"])
    free = table[table["config.quota_us"].isna()]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), layout="constrained")
    (ax_fps, ax_mpf), (ax_curve, ax_maps) = axes
    dm1 = free[(free["config.map"] == "dm1") & (free["config.rate_hz"] == 77.0)]
    for phases, rows in dm1.groupby("config.phases"):
        rows = rows.sort_values("config.clients")
        c = _colour(phases)
        for ax, key in ((ax_fps, "frames_per_s"), (ax_mpf, "messages_per_frame")):
            ax.plot(
                rows["config.clients"], rows[key], "o-", color=c, label=f"{phases}: real server"
            )
            ax.plot(
                rows["config.clients"],
                rows[f"model.{key}"],
                "o--",
                color=c,
                markerfacecolor="white",
                label=f"{phases}: model",
            )
    ax_fps.set(xlabel="clients", ylabel="frames/s", title="(a) frames/s, dm1, 77 packets/s")
    ax_mpf.set(
        xlabel="clients", ylabel="messages/frame", title="(b) messages/frame, dm1, 77 packets/s"
    )
    for ax in (ax_fps, ax_mpf):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for phases, rows in free.groupby("config.phases"):
        c = _colour(phases)
        ax_curve.scatter(
            rows["frames_per_s"], rows["messages_per_frame"], color=c, label=f"{phases}: real"
        )
        ax_curve.scatter(
            rows["model.frames_per_s"],
            rows["model.messages_per_frame"],
            facecolors="white",
            edgecolors=c,
            label=f"{phases}: model",
        )
        for _, r in rows.iterrows():
            ax_curve.plot(
                [r["frames_per_s"], r["model.frames_per_s"]],
                [r["messages_per_frame"], r["model.messages_per_frame"]],
                color=c,
                alpha=0.3,
                lw=0.8,
            )
    ax_curve.set(
        xscale="log",
        yscale="log",
        xlabel="frames/s",
        ylabel="messages/frame",
        title="(c) the sequential server's curve: every condition without a quota",
    )
    ax_curve.grid(alpha=0.3, which="both")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for axis in (ax_curve.xaxis, ax_curve.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax_curve.set_yticks([1, 1.5, 2, 3, 5, 10])
    ax_curve.set_xticks([300, 500, 1000, 2000])
    ax_curve.legend(fontsize=7)
    maps = free[
        (free["config.clients"] == 16)
        & (free["config.phases"] == "independent")
        & (free["config.rate_hz"] == 77.0)
    ].sort_values("config.map")
    x = np.arange(len(maps))
    ax_maps.bar(
        x - 0.2, maps["server_cpu_utilization"] * 100, 0.4, label="real server", color="#444444"
    )
    ax_maps.bar(x + 0.2, maps["model.busy_fraction"] * 100, 0.4, label="model", color="#bbbbbb")
    ax_maps.set_xticks(x, maps["config.map"])
    ax_maps.set(
        ylabel="server CPU busy (%)", title="(d) server CPU, 16 clients, independent phases"
    )
    ax_maps.legend(fontsize=7)
    ax_maps.grid(alpha=0.3, axis="y")
    return fig
