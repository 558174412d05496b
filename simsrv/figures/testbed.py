"""The real server against the model: a function of the campaign table and the model's runs.

Every measured condition is drawn.  A *series* is the conditions that differ only in their
client count (same map, rate, phase pattern and quota); repeats of a condition (its seeds)
are one point, their mean, with a bar from the lowest to the highest.  Six panels: (a)
frames/s, (b) messages/frame and (c) replies/s against clients, one colour per series,
measured (filled, solid) and modelled (open, dashed), clients on a log axis and the rates on
log axes; (d) messages/frame against frames/s,
each real point joined to its model point, the curve along which the arrival pattern moves a
sequential server; (e) the server's CPU busy fraction, model against real, with the
identity; (f) the share of the clients' packets answered against clients.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

SERIES = ["config.map", "config.rate_hz", "config.phases", "quota"]
"""What the conditions of one series share (everything but the client count and seed)."""
QUANTITIES = {
    "frames_per_s": "frames_per_s",
    "messages_per_frame": "messages_per_frame",
    "replies_per_s": "replies_per_s",
    "server_cpu_utilization": "busy_fraction",
    "reply_ratio": "reply_ratio",
}
"""Measured column -> the model's (``model.*``)."""


def series_label(key: tuple) -> str:
    """``dm1, 77 Hz, independent`` (+ ``, quota 5 %``)."""
    map_name, rate, phases, quota = key
    label = f"{map_name}, {rate:g} Hz, {phases}"
    return label if quota == "" else f"{label}, quota {quota}"


def _quota(table: pd.DataFrame) -> pd.Series:
    """Each row's quota as text (``""`` without one)."""
    if "config.quota_us" not in table:
        return pd.Series("", index=table.index)
    share = table["config.quota_us"] / table.get("config.period_us", 100_000)
    return share.map(lambda s: "" if pd.isna(s) else f"{s:.0%}")


def condition_points(measured: pd.DataFrame, model: pd.DataFrame) -> pd.DataFrame:
    """One row per (series, clients): the mean, lowest and highest of each quantity over the
    condition's repeats, measured (``real.*``) and modelled (``model.*``).  ``model`` has a
    row per run (merged on ``label``) or, with a ``condition`` column, per condition (merged
    on ``measured``'s ``condition``)."""
    if "condition" in model:  # the model ran once per condition: every repeat gets it
        table = measured.merge(model.drop(columns=["label"]), on=["condition", "role", "question"])
    else:
        table = measured.merge(model, on=["label", "role", "question"])
    table = table.assign(quota=_quota(table))
    rows = []
    for key, group in table.groupby([*SERIES, "config.clients"], sort=True, dropna=False):
        row = dict(zip([*SERIES, "clients"], key, strict=True))
        row["repeats"] = len(group)
        for real, sim in QUANTITIES.items():
            for prefix, column in (("real", real), ("model", f"model.{sim}")):
                values = group[column].astype(float) if column in group else pd.Series([np.nan])
                row[f"{prefix}.{real}"] = values.mean()
                row[f"{prefix}.{real}.low"] = values.min()
                row[f"{prefix}.{real}.high"] = values.max()
        rows.append(row)
    return pd.DataFrame(rows)


def _colours(keys: list[tuple]) -> dict[tuple, tuple]:
    palette = plt.get_cmap("tab20" if len(keys) > 10 else "tab10")
    return {key: palette(i % palette.N) for i, key in enumerate(keys)}


def _against_clients(ax, points: pd.DataFrame, colours: dict, column: str) -> None:
    for key, rows in points.groupby(SERIES, sort=True, dropna=False):
        c = colours[key]
        rows = rows.sort_values("clients")
        for prefix, style, face in (("real", "o-", c), ("model", "o--", "white")):
            mean = rows[f"{prefix}.{column}"]
            spread = [mean - rows[f"{prefix}.{column}.low"], rows[f"{prefix}.{column}.high"] - mean]
            ax.errorbar(
                rows["clients"],
                mean,
                yerr=spread if prefix == "real" else None,
                fmt=style,
                color=c,
                markerfacecolor=face,
                markersize=4,
                lw=1,
                capsize=2,
            )
    ax.grid(alpha=0.3)


def testbed_figure(measured: pd.DataFrame, model: pd.DataFrame) -> Figure:
    """``measured``: a campaign's runs.parquet; ``model``: the same rows' ``model.*``."""
    points = condition_points(measured, model)
    keys = [tuple(k) for k in points[SERIES].drop_duplicates().itertuples(index=False)]
    colours = _colours(keys)
    fig, axes = plt.subplots(3, 2, figsize=(12, 13), layout="constrained")
    (ax_fps, ax_mpf), (ax_rps, ax_curve), (ax_cpu, ax_ratio) = axes
    panels = (
        (ax_fps, "frames_per_s", "frames/s", "(a) frames/s"),
        (ax_mpf, "messages_per_frame", "messages/frame", "(b) messages/frame"),
        (ax_rps, "replies_per_s", "replies/s", "(c) replies/s"),
        (ax_ratio, "reply_ratio", "packets answered", "(f) share of the packets answered"),
    )
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    low, high = points["clients"].min(), points["clients"].max()
    counts = [2**k for k in range(12) if low <= 2**k <= high]  # (the powers of two measured)
    for ax, column, ylabel, title in panels:
        _against_clients(ax, points, colours, column)
        ax.set(xlabel="clients", ylabel=ylabel, title=f"{title} against clients")
        # clients from a handful to hundreds: a log axis, ticked at powers of two
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts)
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(NullFormatter())
    for ax in (ax_fps, ax_mpf, ax_rps):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain)
    for key, rows in points.groupby(SERIES, sort=True, dropna=False):
        c = colours[key]
        ax_curve.scatter(rows["real.frames_per_s"], rows["real.messages_per_frame"], color=c, s=16)
        ax_curve.scatter(
            rows["model.frames_per_s"],
            rows["model.messages_per_frame"],
            facecolors="white",
            edgecolors=c,
            s=16,
        )
        for _, r in rows.iterrows():
            ax_curve.plot(
                [r["real.frames_per_s"], r["model.frames_per_s"]],
                [r["real.messages_per_frame"], r["model.messages_per_frame"]],
                color=c,
                alpha=0.4,
                lw=0.8,
            )
        ax_cpu.scatter(
            rows["real.server_cpu_utilization"] * 100,
            rows["model.server_cpu_utilization"] * 100,
            color=c,
            s=16,
        )
    ax_curve.set(
        xscale="log",
        yscale="log",
        xlabel="frames/s",
        ylabel="messages/frame",
        title="(d) the sequential server's curve: every condition",
    )
    for axis in (ax_curve.xaxis, ax_curve.yaxis, ax_mpf.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax_curve.grid(alpha=0.3, which="both")
    top = max(
        1.0,
        np.nanmax(points["real.server_cpu_utilization"]) * 100,
        np.nanmax(points["model.server_cpu_utilization"]) * 100,
    )
    ax_cpu.plot([0, top * 1.05], [0, top * 1.05], color="#888888", lw=0.8)
    ax_cpu.set(
        xlabel="real server CPU busy (%)",
        ylabel="model CPU busy (%)",
        title="(e) the server's CPU, model against real",
    )
    ax_cpu.grid(alpha=0.3)
    handles = [
        Line2D([], [], color=colours[k], marker="o", lw=1, label=series_label(k)) for k in keys
    ]
    handles += [
        Line2D([], [], color="#444444", marker="o", lw=1, label="real server (mean, range)"),
        Line2D(
            [], [], color="#444444", marker="o", ls="--", markerfacecolor="white", label="model"
        ),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    return fig
