"""The four moments of a parallel frame and the OS cost shares [P §5.2].

Moments (the paper's trace analysis of the final BSP-group server), per frame from its start to
its end (the coordinator's finish):

``overlap``     from the frame start until the first worker starts, the time during which every
                CPU is busy (the world phase overlapping the previous workers' teardown);
``sequential``  the rest of that span (one CPU: world, scheduling, worker creation);
``parallel``    from the first worker's start until the first process (coordinator or worker)
                finishes its groups' request and reply work;
``tail``        from then until the frame ends (the last process, then the synchronisation).

A frame without workers is all ``overlap`` + ``sequential``.  Each is a fraction of the
measured frames' total duration (the server's busy time; the time it spends blocked waiting for
packets is reported by ``time_breakdown``), so the four sum to 1.  Threads are recognised by the
trace conventions of the strategies: the coordinator is the thread of a frame's first interval;
teardown intervals (``teardown``) do not start the parallel moment.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

MOMENTS = ("overlap", "sequential", "parallel", "tail")
GROUP_WORK = ("request", "reply", "net_send")
OS_ACTIVITIES = {
    "spawn": ("spawn",),
    "copy_on_write": ("copy_on_write",),
    "teardown": ("teardown",),
    "wait": ("wait",),
}


def moments(
    frames: pd.DataFrame, trace: pd.DataFrame, all_busy: Callable[[Any], Any]
) -> dict[str, float]:
    """Fractions ``overlap``, ``sequential``, ``parallel``, ``tail`` (see the module docstring).

    ``all_busy`` is the trace's cumulative all-CPUs-busy time
    (:func:`simsrv.metrics.timeline.all_busy_time`).
    """
    rows = trace[trace["frame"].isin(frames["frame"])]
    return moments_of(frames, frame_bounds(rows), all_busy)


def frame_bounds(rows: pd.DataFrame) -> pd.DataFrame:
    """Per frame of ``rows`` (trace rows, in trace order, every row of each frame): when its
    first worker starts (``first_worker_s``) and when its first thread finishes its group work
    (``first_finish_s``), s; NaN when there is none."""
    rows = rows.sort_values(["frame", "start_s"])  # stable: ties in trace order
    coordinator = rows.groupby("frame", observed=True)["thread"].first()
    is_coord = rows["thread"].to_numpy() == coordinator.reindex(rows["frame"]).to_numpy()
    workers = rows[~is_coord & (rows["activity"] != "teardown") & rows["busy"]]
    work = rows[rows["activity"].isin(GROUP_WORK)]
    finish = work.groupby(["frame", "thread"], observed=True)["end_s"].max()
    return pd.DataFrame(
        {
            "first_worker_s": workers.groupby("frame")["start_s"].min(),
            "first_finish_s": finish.groupby(level="frame").min(),
        },
        index=pd.Index(coordinator.index, name="frame"),
    )


def moments_of(
    frames: pd.DataFrame, bounds: pd.DataFrame, all_busy: Callable[[Any], Any]
) -> dict[str, float]:
    """The four fractions from the frames and their :func:`frame_bounds`."""
    if frames.empty:
        return dict.fromkeys(MOMENTS, 0.0)
    marks = frame_marks(frames, bounds)
    overlap = all_busy(marks["b1"].to_numpy()) - all_busy(marks["start_s"].to_numpy())
    return moments_from_marks(marks, overlap)


def frame_marks(frames: pd.DataFrame, bounds: pd.DataFrame) -> pd.DataFrame:
    """Per frame (index ``frame``): ``start_s``, ``end_s`` and the moments' boundaries ``b1``
    (the first worker's start) and ``b2`` (the first finish), clipped to the frame, s."""
    first_worker = bounds["first_worker_s"].dropna()
    first_finish = bounds["first_finish_s"].dropna()
    f = frames.set_index("frame")
    start, end = f["start_s"], f["end_s"]
    b1 = first_worker.reindex(f.index).fillna(end).clip(lower=start, upper=end)
    b2 = first_finish.reindex(f.index).fillna(end).clip(lower=b1, upper=end)
    has_workers = f.index.isin(first_worker.index)
    b2 = b2.where(has_workers, end)
    return pd.DataFrame({"start_s": start, "end_s": end, "b1": b1, "b2": b2})


def marks_of_rows(
    rows: tuple[np.ndarray, ...],
    activities: list[str],
    frames: np.ndarray,
    start_s: np.ndarray,
    end_s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`frame_marks` of :func:`frame_bounds` on arrays, for speed: ``rows`` = (frame,
    thread code, activity code, busy, start_s, end_s) of the rows of ``frames`` (sorted
    frame numbers, with their ``start_s`` and ``end_s``), in trace order; ``activities`` names
    the codes.  Returns ``b1`` and ``b2`` per frame.  Only minima, maxima and clips: equal to
    the pandas functions to the bit (``tests/test_trace_digest.py``)."""
    frame, thread, activity, busy, start, end = rows
    n = len(frames)
    first_worker, first_finish = np.full(n, np.nan), np.full(n, np.nan)
    if len(frame):
        local = np.searchsorted(frames, frame)
        order = np.lexsort((start, local))  # stable: ties in trace order
        heads = order[np.r_[0, np.flatnonzero(np.diff(local[order])) + 1]]
        coordinator = np.full(n, -1)
        coordinator[local[heads]] = thread[heads]
        teardown = np.array([a == "teardown" for a in activities], bool)[activity]
        workers = (thread != coordinator[local]) & ~teardown & busy
        np.fmin.at(first_worker, local[workers], start[workers])
        work = np.array([a in GROUP_WORK for a in activities], bool)[activity]
        if work.any():
            threads = int(thread.max()) + 1
            key = local[work] * threads + thread[work]
            order = np.argsort(key, kind="stable")
            key, ends = key[order], end[work][order]
            heads = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
            np.fmin.at(first_finish, key[heads] // threads, np.maximum.reduceat(ends, heads))
    has_workers = ~np.isnan(first_worker)
    b1 = np.minimum(np.maximum(np.where(has_workers, first_worker, end_s), start_s), end_s)
    b2 = np.where(np.isnan(first_finish), end_s, first_finish)
    b2 = np.where(has_workers, np.minimum(np.maximum(b2, b1), end_s), end_s)
    return b1, b2


def moment_terms(
    start: np.ndarray, end: np.ndarray, b1: np.ndarray, b2: np.ndarray, overlap: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per frame, the terms whose sums make the moments (:data:`MOMENT_TERMS`), s: from the
    frame's start, end and boundaries ``b1`` and ``b2`` and its all-CPUs-busy time from its
    start to ``b1`` (``overlap``)."""
    return end - start, overlap, b1 - start, b2 - b1, end - b2


MOMENT_TERMS = ("duration", "overlap", "to_b1", "parallel", "tail")
"""The sums :func:`moments_from_sums` takes (:func:`moment_terms`)."""


def moments_from_sums(sums: list[float], frames: int) -> dict[str, float]:
    """The four fractions from the sums over ``frames`` frames of :func:`moment_terms`
    (correctly rounded: ``math.fsum`` or :class:`simsrv.metrics.kahan.ExactSum`, so that the
    result does not depend on how the frames are cut into blocks)."""
    total, overlap, to_b1, parallel, tail = sums
    if frames == 0 or total <= 0:
        return dict.fromkeys(MOMENTS, 0.0)
    values = {
        "overlap": overlap,
        "sequential": to_b1 - overlap,
        "parallel": parallel,
        "tail": tail,
    }
    return {key: v / total for key, v in values.items()}


def moments_from_marks(marks: pd.DataFrame, overlap: np.ndarray) -> dict[str, float]:
    """The four fractions from :func:`frame_marks` and each frame's all-CPUs-busy time between
    its start and ``b1`` (``overlap``, s)."""
    terms = moment_terms(
        *(marks[c].to_numpy() for c in ("start_s", "end_s", "b1", "b2")), np.asarray(overlap)
    )
    return moments_from_sums([math.fsum(t.tolist()) for t in terms], len(marks))


def os_time_fraction(trace: pd.DataFrame, cpus: int, span_s: float) -> dict[str, float]:
    """Share of the available CPU time (``cpus x span``) in each operating-system activity."""
    length = trace["end_s"] - trace["start_s"]
    by_activity = length.groupby(trace["activity"], observed=True).sum()
    return {
        key: float(sum(by_activity.get(a, 0.0) for a in acts) / (cpus * span_s))
        for key, acts in OS_ACTIVITIES.items()
    }
