"""A Gantt chart of a few frames: one row per CPU, intervals coloured by activity family (the
style of Cordeiro's thesis, Figure 5).

Activities are coloured by family (stage 1, 2, 3, OS, barriers, lock waits, other waits:
:data:`simsrv.figures.style.ACTIVITY_FAMILIES`), so the legend is short and the colours can be
told apart.  Busy intervals fill the row; wait states (a thread blocked on a lock or a barrier,
holding its CPU) are thin bars at the bottom of the row, so a waiting thread and a running one
on the same CPU both stay visible.  Dotted lines mark frame starts.

The panels of one strategy (its CPU counts) share one x range, so their frames compare at a
glance; a strategy whose panels are identical (one thread: ``sequential``) gets one panel.
Times are milliseconds from the first shown frame's start.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from simsrv.figures.style import ACTIVITY_FAMILIES, activity_family

INTERVAL = ["frame", "cpu", "activity", "busy", "start_ms", "end_ms"]


def gantt_panels(gantt: pd.DataFrame) -> list[tuple[str, list[int]]]:
    """``(strategy, CPU counts)`` per panel, in order of appearance; the CPU counts of a
    strategy whose intervals are the same at every count share one panel."""
    panels: list[tuple[str, list[int]]] = []
    for strategy in dict.fromkeys(gantt["strategy"]):
        rows = gantt[gantt["strategy"] == strategy]
        counts = list(dict.fromkeys(rows["cpus"]))
        first = _intervals(rows[rows["cpus"] == counts[0]])
        same = all(_intervals(rows[rows["cpus"] == n]) == first for n in counts[1:])
        panels += [(strategy, counts)] if same else [(strategy, [n]) for n in counts]
    return panels


def _intervals(rows: pd.DataFrame) -> list[tuple]:
    return sorted(rows[INTERVAL].itertuples(index=False, name=None))


def gantt_figure(gantt: pd.DataFrame, title: str = "") -> Figure:
    """One panel per strategy and CPU count (:func:`gantt_panels`): ``gantt`` rows as in
    :mod:`simsrv.sweep.records` (``strategy``, ``cpus``, ``cpu``, ``activity``, ``busy``,
    ``frame``, ``start_ms``, ``end_ms``)."""
    panels = gantt_panels(gantt)
    heights = [1.0 + 0.35 * counts[0] for _, counts in panels]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(11.0, 0.8 + sum(heights)),
        layout="constrained",
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    span = gantt.groupby("strategy")["end_ms"].max()
    shown: set[str] = set()
    for ax, (strategy, counts) in zip(axes[:, 0], panels, strict=True):
        cpus = counts[0]
        rows = gantt[(gantt["strategy"] == strategy) & (gantt["cpus"] == cpus)]
        families = rows["activity"].astype(str).map(activity_family)
        for family, part in rows.groupby(families, sort=False):
            busy = family not in ("lock_wait", "wait")
            colour = ACTIVITY_FAMILIES[family][0]
            for cpu, cpu_rows in part.groupby("cpu"):
                bars = list(
                    zip(
                        cpu_rows["start_ms"], cpu_rows["end_ms"] - cpu_rows["start_ms"], strict=True
                    )
                )
                y, h = (cpu - 0.4, 0.8) if busy else (cpu + 0.22, 0.18)  # rows grow downwards
                ax.broken_barh(bars, (y, h), color=colour)
            shown.add(family)
        for start in rows.groupby("frame").start_ms.min():
            ax.axvline(start, color="black", linestyle=":", linewidth=0.8)
        ax.set_yticks(range(cpus), [f"CPU {c}" for c in range(cpus)])
        ax.set_ylim(cpus - 0.5, -0.5)
        ax.set_xlim(0, float(span[strategy]) * 1.01)
        ax.set_title(_panel_title(strategy, counts), fontsize=9, loc="left")
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlabel("ms from the first frame's start", fontsize=8)
    order = [f for f in ACTIVITY_FAMILIES if f in shown]
    handles = [Patch(color=ACTIVITY_FAMILIES[f][0], label=ACTIVITY_FAMILIES[f][1]) for f in order]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(title or "A few frames per CPU (dotted: frame starts)", fontsize=10)
    return fig


def _panel_title(strategy: str, counts: list[int]) -> str:
    if len(counts) == 1:
        return f"{strategy}, {counts[0]} CPUs"
    listed = ", ".join(str(n) for n in counts[:-1]) + f" and {counts[-1]}"
    return f"{strategy}, {listed} CPUs (identical: the extra CPUs stay idle)"
