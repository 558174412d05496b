"""Colours shared by every figure: one per strategy, one per trace activity.

A strategy not listed gets a colour of a fixed palette picked by a checksum of its name, and an
activity not listed its stage category's colour, so colours never depend on which runs happen
to be plotted together.
"""

from __future__ import annotations

import matplotlib as mpl

from simsrv.metrics.stages import category

STRATEGY_COLOURS = {
    "sequential": "#7f7f7f",
    "abdelkhalek": "#1f77b4",
    "area-quadrant": "#2ca02c",
    "bsp-group": "#ff7f0e",
}

ACTIVITY_COLOURS = {
    # stage 1: world physics and the fixed frame work (blues)
    "frame": "#9ecae1",
    "world": "#3182bd",
    # stage 2: receiving and executing requests (greens)
    "net_recv": "#a1d99b",
    "sort": "#74c476",
    "grouping": "#66c2a4",
    "action_lists": "#41ab5d",
    "schedule": "#00695c",
    "lock": "#c7e9c0",
    "request": "#31a354",
    # stage 3: replies (oranges)
    "reply_info": "#fdd0a2",
    "reply": "#fd8d3c",
    "net_send": "#e6550d",
    # process and thread management (browns, purples)
    "spawn": "#8c564b",
    "teardown": "#c49c94",
    "copy_on_write": "#9467bd",
    "copy_in": "#c5b0d5",
    "copy_out": "#c5b0d5",
    "copy_back": "#7b4173",
    "wait": "#bcbd22",
    "context_switch": "#e377c2",
    "signal_send": "#ad494a",  # the thread library's wake-up signals (LinuxThreads)
    "signal_wakeup": "#e7969c",
    "lock_spin": "#843c39",  # busy-waiting for a kernel spinlock (the device's transmit lock)
    "barrier": "#6b6ecf",
    # wait states (reds and light purples; drawn thin in Gantt charts)
    "lock_wait": "#d62728",
    "barrier_wait": "#b5b5e6",
    "internal_barrier_wait": "#9c9ede",
    "end_barrier_wait": "#de9ed6",
    "join_wait": "#ff9896",
    "runqueue_wait": "#f7b6d2",
}

CATEGORY_FALLBACK = {
    "stage1": "#3182bd",
    "stage2": "#31a354",
    "stage3": "#fd8d3c",
    "os": "#8c564b",
    "barrier": "#6b6ecf",
}


ACTIVITY_FAMILIES = {
    # family -> (colour, legend label); every activity falls in one (activity_family)
    "stage1": ("#3182bd", "world physics, frame work (stage 1)"),
    "stage2": ("#31a354", "receiving, executing requests (stage 2)"),
    "stage3": ("#fd8d3c", "building, sending replies (stage 3)"),
    "os": ("#8c564b", "processes, threads (OS)"),
    "barrier": ("#6b6ecf", "passing barriers"),
    "lock_wait": ("#d62728", "waiting for a lock (thin)"),
    "wait": ("#b0b0b0", "waiting at a barrier or join (thin)"),
}
"""The few colour families of Gantt charts: 20-odd activities in near-identical shades cannot be
told apart, their stage can."""


def activity_family(activity: str) -> str:
    """The :data:`ACTIVITY_FAMILIES` key of a trace activity: its stage category
    (:func:`simsrv.metrics.stages.category`), with every wait but ``lock_wait`` in ``wait``."""
    name = category(activity)
    if name in ACTIVITY_FAMILIES:
        return name
    return "wait"


def column_label(column: str) -> str:
    """How a grid column is named on axes and in legends (``cpus`` -> ``CPUs``)."""
    return "CPUs" if column == "cpus" else column


def series_label(columns: tuple[str, ...], values: tuple, named: tuple[str, ...]) -> str:
    """A legend label for one series: the value alone for the ``named`` columns (a map, a
    strategy), else value and column (``4 CPUs``), joined by commas."""
    return ", ".join(
        str(v) if c in named else f"{v} {column_label(c)}"
        for c, v in zip(columns, values, strict=True)
    )


def strategy_colour(name: str) -> str:
    """The colour of strategy ``name``."""
    if name in STRATEGY_COLOURS:
        return STRATEGY_COLOURS[name]
    palette = mpl.colormaps["Dark2"].colors
    return mpl.colors.to_hex(palette[sum(map(ord, name)) % len(palette)])


def activity_colour(activity: str) -> str:
    """The colour of a trace activity (unknown ones take their stage category's colour)."""
    if activity in ACTIVITY_COLOURS:
        return ACTIVITY_COLOURS[activity]
    return CATEGORY_FALLBACK.get(category(activity), "#d9a0a0")
