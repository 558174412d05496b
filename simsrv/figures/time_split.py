"""Where the server's CPU time goes, beside the papers' shares [P §4.1-4.2, §5.2; T §4.4].

Two panels:

* the sequential server: the model's busy CPU time by part (world, the fixed frame work,
  requests, replies, network system calls) beside the published shares (request + reply with
  its network calls ~80 %, of which network ~10 %; world < 5 %; the rest not broken down);
* the final BSP-group version (and the groups-only run): the model's busy CPU time by part,
  grouping and the operating-system costs included, and the four moments of a frame with the
  published all-CPUs-busy share (moments 1 + 3) marked.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

PARTS = {
    # part -> (activities, label, colour), stacked bottom to top
    "world": (("world",), "world physics", "#3182bd"),
    "frame": (("frame", "reply_info"), "fixed frame work", "#9ecae1"),
    "request": (("request", "action_lists"), "requests", "#31a354"),
    "reply": (("reply",), "replies", "#fd8d3c"),
    "network": (("net_recv", "net_send"), "network system calls", "#e6550d"),
    "grouping": (("grouping", "schedule"), "grouping + LPT", "#66c2a4"),
    "os": (
        ("spawn", "copy_on_write", "teardown", "wait", "copy_out", "copy_back"),
        "processes (clone, copy-on-write, exit, wait, copies)",
        "#8c564b",
    ),
}
MOMENTS = {
    "overlap": ("(1) world || previous teardown", "#1b9e77"),
    "sequential": ("(2) sequential", "#bdbdbd"),
    "parallel": ("(3) parallel", "#66a61e"),
    "tail": ("(4) last process + sync", "#e7298a"),
}
PUBLISHED_SEQUENTIAL = (
    # (label, share, colour, hatch): [P §4.1-4.2]
    ("request + reply\n(without network)", 0.70, "#74c476", ""),
    ("network system calls ~10 %", 0.10, "#e6550d", ""),
    ("world < 5 %", 0.05, "#3182bd", "//"),
    ("rest (not broken down)", 0.15, "#f0f0f0", "//"),
)


def part_shares(time_breakdown: dict[str, float]) -> dict[str, float]:
    """Busy CPU time by part (:data:`PARTS`), as shares of the busy time (idle and waits
    left out); activities of no part count in ``os``."""
    busy = {a: v for a, v in time_breakdown.items() if a != "idle" and not a.endswith("_wait")}
    total = sum(busy.values()) or 1.0
    known = {a for acts, _, _ in PARTS.values() for a in acts}
    out = {p: sum(busy.get(a, 0.0) for a in acts) / total for p, (acts, _, _) in PARTS.items()}
    out["os"] += sum(v for a, v in busy.items() if a not in known) / total
    return out


def time_split_figure(
    parts: pd.DataFrame, moments: pd.DataFrame, all_busy: dict[str, float], title: str
) -> Figure:
    """``parts``: columns ``run``, ``part``, ``share`` (mean over seeds; the first run is the
    sequential server); ``moments``: columns ``run``, ``moment``, ``share``; ``all_busy``:
    run -> the published all-CPUs-busy share."""
    runs = list(dict.fromkeys(parts.run))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13.0, 6.4), layout="constrained", width_ratios=(1.0, 2.4)
    )
    table = parts.pivot_table(index="run", columns="part", values="share", sort=False)

    def stack(ax, x, shares, width=0.6):
        bottom = 0.0
        for part, (_, label, colour) in PARTS.items():
            value = float(shares.get(part, 0.0))
            ax.bar(x, value, width, bottom=bottom, color=colour, label=label)
            if value >= 0.04:
                ax.text(x, bottom + value / 2, f"{value:.0%}", ha="center", va="center", size=8)
            bottom += value

    stack(left, 0, table.loc[runs[0]])
    bottom = 0.0
    for label, share, colour, hatch in PUBLISHED_SEQUENTIAL:
        left.bar(1, share, 0.6, bottom=bottom, color=colour, hatch=hatch, edgecolor="#555555")
        left.text(1, bottom + share / 2, label, ha="center", va="center", size=7)
        bottom += share
    left.set_xticks([0, 1], [f"model\n{runs[0]}", "papers\n[P §4.1-4.2]"])
    left.set_ylabel("share of busy CPU time")
    left.set_ylim(0, 1.0)
    left.set_title("sequential server")

    others = runs[1:]
    step = 2.2  # x distance between runs: a CPU-time bar and a moments bar each
    for i, run in enumerate(others):
        stack(right, step * i, table.loc[run])
        m = moments[moments.run == run].set_index("moment").share
        bottom = 0.0
        for moment, (label, colour) in MOMENTS.items():
            value = float(m.get(moment, 0.0))
            right.bar(step * i + 0.75, value, 0.5, bottom=bottom, color=colour, label=label)
            bottom += value
        if run in all_busy:
            both = float(m.get("overlap", 0.0) + m.get("parallel", 0.0))
            right.annotate(
                f"all CPUs busy\nmodel {both:.1%}\npaper {all_busy[run]:.2%}",
                (step * i + 0.375, 1.0),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                size=8,
            )
    right.set_xticks(
        [step * i + d for i in range(len(others)) for d in (0, 0.75)],
        [x for run in others for x in ("CPU\ntime", "frame\nmoments")],
        size=8,
    )
    for i, run in enumerate(others):  # the run's name under its pair of bars
        right.annotate(
            run,
            (step * i + 0.375, 0),
            xytext=(0, -30),
            textcoords="offset points",
            ha="center",
            va="top",
            annotation_clip=False,
        )
    right.set_ylim(0, 1.18)
    right.set_ylabel("share of busy CPU time / of frame time")
    right.set_title("BSP-group versions")
    handles, labels = [], []
    for ax in (left, right):
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(title)
    return fig
