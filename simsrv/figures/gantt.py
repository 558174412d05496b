"""A Gantt chart of a few frames: one row per CPU, intervals coloured by activity (the style of
Cordeiro's thesis, Figure 5).  Busy intervals fill the row; wait states (a thread blocked on
a lock or a barrier, holding its CPU) are thin bars at the bottom of the row, so a waiting
thread and a running one on the same CPU both stay visible.  Dotted lines mark frame starts.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from simsrv.figures.style import ACTIVITY_COLOURS, activity_colour


def gantt_figure(gantt: pd.DataFrame, title: str = "") -> Figure:
    """One panel per strategy (and CPU count): ``gantt`` rows as in
    :mod:`simsrv.sweep.records` (``strategy``, ``cpus``, ``cpu``, ``activity``, ``busy``,
    ``frame``, ``start_ms``, ``end_ms``)."""
    panels = list(dict.fromkeys(zip(gantt["strategy"], gantt["cpus"], strict=True)))
    heights = [1.0 + 0.35 * cpus for _, cpus in panels]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(11.0, 0.6 + sum(heights)),
        layout="constrained",
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    shown: set[str] = set()
    for ax, (strategy, cpus) in zip(axes[:, 0], panels, strict=True):
        rows = gantt[(gantt["strategy"] == strategy) & (gantt["cpus"] == cpus)]
        for activity, part in rows.groupby("activity", sort=False):
            busy = bool(part["busy"].iloc[0])
            bars = list(zip(part["start_ms"], part["end_ms"] - part["start_ms"], strict=True))
            for cpu, cpu_bars in _by_cpu(part, bars).items():
                y, h = (cpu - 0.4, 0.8) if busy else (cpu + 0.22, 0.18)  # rows grow downwards
                ax.broken_barh(cpu_bars, (y, h), color=activity_colour(str(activity)))
            shown.add(str(activity))
        for start in rows.groupby("frame").start_ms.min():
            ax.axvline(start, color="black", linestyle=":", linewidth=0.8)
        ax.set_yticks(range(cpus), [f"CPU {c}" for c in range(cpus)])
        ax.set_ylim(cpus - 0.5, -0.5)
        ax.set_title(f"{strategy}, {cpus} CPUs", fontsize=9, loc="left")
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time from the first frame's start, ms")
    order = [a for a in ACTIVITY_COLOURS if a in shown] + sorted(shown - set(ACTIVITY_COLOURS))
    handles = [Patch(color=activity_colour(a), label=a.replace("_", " ")) for a in order]
    fig.legend(handles=handles, loc="outside right upper", fontsize=7)
    fig.suptitle(title or "A few frames per CPU (dotted: frame starts)", fontsize=10)
    return fig


def _by_cpu(part: pd.DataFrame, bars: list[tuple[float, float]]) -> dict[int, list]:
    out: dict[int, list] = {}
    for cpu, bar in zip(part["cpu"], bars, strict=True):
        out.setdefault(int(cpu), []).append(bar)
    return out
