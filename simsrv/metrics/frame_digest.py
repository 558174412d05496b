"""The frame records digested block by block: every per-frame metric of the summary without
the frame table.

:func:`simsrv.pipeline.summary.summarize` needs, from the frames that start in the measured
window ``[t0_s, t1_s)``, only counts, integer sums and maxima (exact in any order), and one mean
of ratios: ``groups.largest_share``, the mean over grouped frames of the largest group's share
of the frame's grouped entities.  That mean is the correctly rounded mean of the exact sum
(:class:`simsrv.metrics.kahan.ExactSum`), so it does not depend on how the frames are cut into
blocks; pandas' mean sums pairwise and may differ from it in the last bit.  The conservation
check needs every frame's packets (:attr:`FrameDigest.messages_read`).

:meth:`FrameDigest.add` takes frames in order, in blocks of any size
(:class:`simsrv.workload.frame_table.FrameBlock`).  Memory: a few numbers, and the
count of groups of each size for strategies that record them (the sweep's group-size table).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from simsrv.metrics.kahan import ExactSum
from simsrv.workload.frame_table import FrameBlock

MEMORY_COLUMNS = ("memory_bytes", "memory_reserved_bytes")
"""Per-frame memory columns of strategies with static threads (the summary takes their max)."""


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
        self.columns: tuple[str, ...] = ()  # the frames' columns (the strategy's included)
        self.grouped = 0  # measured frames with groups
        self.group_sums: Counter[str] = Counter()  # groups, group_entities of those frames
        self.largest_group = 0
        self.largest_share = ExactSum()
        self.memory: dict[str, int] = {}  # column -> max over the measured frames
        self.group_sizes: Counter[int] = Counter()  # groups of each size, measured frames

    def add(self, frames: FrameBlock) -> None:
        """The next frames of the run, in order."""
        if len(frames) == 0:
            return
        self.columns = frames.names()
        self.total_frames += len(frames)
        messages = frames.column("messages")
        self.messages_read += int(messages.sum())
        start = frames.column("start_s")
        measured = (start >= self.t0_s) & (start < self.t1_s)
        if not measured.any():
            return
        self.frames += int(measured.sum())
        self.sums["messages"] += int(messages[measured].sum())
        for name in ("replies", "choked"):
            self.sums[name] += int(frames.column(name)[measured].sum())
        for name in MEMORY_COLUMNS:
            if name in self.columns:
                top = int(frames.column(name)[measured].max())
                self.memory[name] = max(self.memory.get(name, 0), top)
        if "groups" in self.columns:
            self._add_groups(frames, measured & (frames.column("groups") > 0))

    def _add_groups(self, frames: FrameBlock, grouped: np.ndarray) -> None:
        if not grouped.any():
            return
        self.grouped += int(grouped.sum())
        for name in ("groups", "group_entities"):
            self.group_sums[name] += int(frames.column(name)[grouped].sum())
        largest = frames.column("largest_group")[grouped]
        self.largest_group = max(self.largest_group, int(largest.max()))
        self.largest_share.add(largest / frames.column("group_entities")[grouped])
        if "group_sizes" in self.columns:
            sizes = frames.values("group_sizes")
            for i in np.flatnonzero(grouped).tolist():
                self.group_sizes.update(sizes[i])

    def summary(self, span_s: float) -> dict[str, Any]:
        """The summary's frame metrics over a window of ``span_s`` s (keys of
        :func:`simsrv.pipeline.summary.summarize`: ``frames_per_s``, ``messages_per_frame``,
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
