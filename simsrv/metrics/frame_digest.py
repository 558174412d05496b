"""The frame records digested block by block: every per-frame metric of the summary without
the frame table.

:func:`simsrv.metrics.summary.summarize` needs, from the frames that start in the measured
window ``[t0_s, t1_s)``, only counts, integer sums and maxima (exact in any order), and one mean
of ratios: ``groups.largest_share``, the mean over grouped frames of the largest group's share
of the frame's grouped entities.  That mean is the correctly rounded mean of the exact sum
(:class:`ExactSum`), so it does not depend on how the frames are cut into blocks; pandas' mean
sums pairwise and may differ from it in the last bit.  The conservation check needs every
frame's packets (:attr:`FrameDigest.messages_read`).

:meth:`FrameDigest.add` takes frames in order, in blocks of any size (DataFrames with the
frame table's columns, :func:`simsrv.frame_table.block_frame`).  Memory: a few numbers, and the
count of groups of each size for strategies that record them (the sweep's group-size table).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

GROUP_COLUMNS = ("groups", "group_entities", "largest_group")
"""The columns a strategy that groups entities records per frame."""
MEMORY_COLUMNS = ("memory_bytes", "memory_reserved_bytes")
"""Per-frame memory columns of strategies with static threads (the summary takes their max)."""


class ExactSum:
    """The exact sum of floats added in any order, kept as a few floats (their exact sum)."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, values: np.ndarray) -> None:
        """Add finite ``values``."""
        terms = self.partials + np.asarray(values, float).tolist()
        partials: list[float] = []
        while True:  # the rounded sum, then the rounded rest, until nothing is left
            rest = math.fsum(terms + [-p for p in partials])
            if rest == 0.0:
                break
            partials.append(rest)
        self.partials = partials

    def value(self) -> float:
        """The exact sum, correctly rounded."""
        return math.fsum(self.partials)


class FrameDigest:
    """Per-frame metrics of the frames that start in ``[t0_s, t1_s)`` (see the module
    docstring)."""

    def __init__(self, t0_s: float, t1_s: float) -> None:
        self.t0_s, self.t1_s = t0_s, t1_s
        self.messages_read = 0
        """Packets read by every frame of the run (warm-up and after the window included)."""
        self.total_frames = 0
        """Frames of the whole run."""
        self.frames = 0  # measured frames
        self.sums: Counter[str] = Counter()  # messages, replies, choked of the measured frames
        self.columns: tuple[str, ...] = ()  # the strategy's columns seen
        self.grouped = 0  # measured frames with groups
        self.group_sums: Counter[str] = Counter()  # groups, group_entities of those frames
        self.largest_group = 0
        self.largest_share = ExactSum()
        self.memory: dict[str, int] = {}  # column -> max over the measured frames
        self.group_sizes: Counter[int] = Counter()  # groups of each size, measured frames

    def add(self, frames: pd.DataFrame) -> None:
        """The next frames of the run, in order."""
        if len(frames) == 0:
            return
        self.columns = tuple(frames.columns)
        self.total_frames += len(frames)
        self.messages_read += int(frames["messages"].sum())
        start = frames["start_s"]
        f = frames[(start >= self.t0_s) & (start < self.t1_s)]
        if len(f) == 0:
            return
        self.frames += len(f)
        for name in ("messages", "replies", "choked"):
            self.sums[name] += int(f[name].sum())
        for name in MEMORY_COLUMNS:
            if name in f:
                self.memory[name] = max(self.memory.get(name, 0), int(f[name].max()))
        if "groups" in f:
            self._add_groups(f[f["groups"] > 0])

    def _add_groups(self, f: pd.DataFrame) -> None:
        if len(f) == 0:
            return
        self.grouped += len(f)
        for name in ("groups", "group_entities"):
            self.group_sums[name] += int(f[name].sum())
        self.largest_group = max(self.largest_group, int(f["largest_group"].max()))
        largest, entities = f["largest_group"].to_numpy(), f["group_entities"].to_numpy()
        self.largest_share.add(largest / entities)
        if "group_sizes" in f:
            for sizes in f["group_sizes"]:
                self.group_sizes.update(sizes)

    def summary(self, span_s: float) -> dict[str, Any]:
        """The summary's frame metrics over a window of ``span_s`` s (keys of
        :func:`simsrv.metrics.summary.summarize`: ``frames_per_s``, ``messages_per_frame``,
        ``messages_per_s``, ``replies_per_s``, ``choked_per_s``, ``frames``; ``groups`` and
        the memory columns' maxima for strategies that record them)."""
        n, sums = self.frames, self.sums
        result: dict[str, Any] = {
            "frames_per_s": n / span_s,
            "messages_per_frame": sums["messages"] / n if n else 0.0,
            "messages_per_s": sums["messages"] / span_s,
            "replies_per_s": float(sums["replies"]) / span_s,
            "choked_per_s": float(sums["choked"]) / span_s,
            "frames": n,
        }
        if "groups" in self.columns:
            result["groups"] = self.group_statistics()
        for name in MEMORY_COLUMNS:
            if name in self.memory:
                result[name] = self.memory[name]
        return result

    def group_statistics(self) -> dict[str, float]:
        """Mean groups per frame, mean group size (entities per group), largest group, and
        largest share (the mean over frames of the largest group's share of the frame's grouped
        entities), over the measured frames with groups."""
        g = self.grouped
        if g == 0:
            return {"mean_count": 0.0, "mean_size": 0.0, "max_size": 0.0, "largest_share": 0.0}
        groups, entities = self.group_sums["groups"], self.group_sums["group_entities"]
        return {
            "mean_count": groups / g,  # integers: as pandas' float mean and int64 division
            "mean_size": entities / groups,
            "max_size": float(self.largest_group),
            "largest_share": self.largest_share.value() / g,
        }
