"""The trace digested block by block: every trace metric of the summary without the trace.

:func:`simsrv.pipeline.summary.summarize` needs, from the machine's interval trace, only sums
and two step functions over the measured window ``[t0_s, t1_s]``:

* per CPU, per activity and per (thread, activity), the length of the intervals clipped to the
  window; the window's thread time, lock-wait and barrier-wait time: Kahan sums in trace order
  (:mod:`simsrv.metrics.kahan`), the arithmetic of pandas' grouped sums;
* the number of busy CPUs over the whole run (all-CPUs-busy time ``F``, for the parallel
  fraction and the moments) and the number of waiting threads in the window
  (:mod:`simsrv.metrics.level_sweep`);
* per measured frame, the moments' boundaries (:func:`simsrv.metrics.moments.marks_of_rows`,
  the arrays' :func:`~simsrv.metrics.moments.frame_bounds`), computed once all the frame's
  rows are in, and added to the moments' exact sums (:class:`~simsrv.metrics.kahan.ExactSum`).

:meth:`TraceDigest.add` takes rows in trace order, in blocks of any size;
:meth:`TraceDigest.advance` says how far the trace is complete (no later row starts before the
horizon; every row of the frames before ``complete_frames`` is in).  The result equals, to the
bit, the pandas functions of :mod:`simsrv.metrics` on the whole trace
(``tests/test_trace_digest.py``), whatever the blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsrv.machine.trace import US, Trace, is_wait, wait_codes
from simsrv.metrics.kahan import ExactSum, GroupSums
from simsrv.metrics.level_sweep import LevelSweep
from simsrv.metrics.moments import (
    MOMENT_TERMS,
    OS_ACTIVITIES,
    marks_of_rows,
    moment_terms,
    moments_from_sums,
)
from simsrv.metrics.stages import thread_shares
from simsrv.metrics.waiting import (
    BARRIER_WAIT,
    LOCK_WAIT,
    THREAD_TIME,
    add_wait_times,
    is_barrier_wait,
    waiting_shares,
)

ALL_FRAMES = np.iinfo(np.int64).max
"""``complete_frames`` once the trace is complete."""


class TraceDigest:
    """Trace metrics of the window ``[t0_s, t1_s]`` of a machine with ``cpus`` CPUs.

    Memory: a few numbers per CPU, activity and (thread, activity); the step functions' steps
    not yet needed and the rows of frames not yet complete.
    """

    def __init__(self, t0_s: float, t1_s: float, cpus: int) -> None:
        self.t0_s, self.t1_s, self.cpus = t0_s, t1_s, cpus
        self.span_s = t1_s - t0_s
        self.all_busy = LevelSweep(cpus)  # busy rows of the whole run
        self.any_waiting = LevelSweep(1)  # wait rows clipped to the window
        self.per_cpu = GroupSums(cpus)  # busy time, clipped
        self.per_activity = GroupSums()  # clipped
        self.per_pair = GroupSums()  # clipped length / span per (thread, activity) pair
        self.waits = GroupSums(3)  # thread time, lock waits, barrier waits, clipped
        self.pairs: dict[tuple[int, int], int] = {}  # (thread, activity) code -> pair code
        self.threads: list[str] = []
        self.activities: list[str] = []
        self._open: list[tuple[np.ndarray, ...]] = []  # rows of frames not complete yet
        self._moment_sums = [ExactSum() for _ in MOMENT_TERMS]  # of the measured frames
        self._marked = 0  # measured frames closed
        # each level's F(t0_s) and F(t1_s), once the sweep has reached them
        self._at_window: dict[str, list[float | None]] = {
            "busy": [None, None],
            "wait": [None, None],
        }
        self._closed_until = 0  # frames before it are closed

    def add(
        self,
        ints: np.ndarray,
        times_us: np.ndarray,
        threads: list[str],
        activities: list[str],
    ) -> None:
        """Trace rows in trace order: ``ints`` columns frame, cpu, thread code, activity code
        (codes into ``threads`` and ``activities``), ``times_us`` start and end, us."""
        if len(ints) == 0:
            return
        self.threads, self.activities = list(threads), list(activities)
        frame, cpu, thread, activity = ints[:, 0], ints[:, 1], ints[:, 2], ints[:, 3]
        start, end = times_us[:, 0] * US, times_us[:, 1] * US
        busy = ~wait_codes(activities)[activity]
        self.all_busy.add(start[busy], end[busy])

        c_start = np.clip(start, self.t0_s, self.t1_s)
        c_end = np.clip(end, self.t0_s, self.t1_s)
        inside = c_end > c_start
        length = (c_end - c_start)[inside]
        activity_in, busy_in = activity[inside], busy[inside]
        self.per_cpu.add(length[busy_in], cpu[inside][busy_in])  # a negative CPU: skipped
        self.per_activity.add(length, activity_in)
        self.per_pair.add(length / self.span_s, self._pair_codes(thread[inside], activity_in))
        barrier = np.array([is_barrier_wait(a) for a in activities], bool)[activity_in]
        lock = np.array([a == "lock_wait" for a in activities], bool)[activity_in]
        add_wait_times(self.waits, length, lock, barrier)
        waiting = barrier | lock
        self.any_waiting.add(c_start[inside][waiting], c_end[inside][waiting])

        self._open.append((frame, thread, activity, busy, start, end))

    def _pair_codes(self, thread: np.ndarray, activity: np.ndarray) -> np.ndarray:
        """Each row's (thread, activity) pair code (numbered as pairs first appear)."""
        if len(thread) == 0:
            return np.zeros(0, np.int64)
        width = len(self.activities)
        keys = thread * width + activity
        codes = np.full(int(keys.max()) + 1, -1, np.int64)
        for key in np.flatnonzero(np.bincount(keys)).tolist():
            codes[key] = self.pairs.setdefault(divmod(key, width), len(self.pairs))
        return codes[keys]

    def advance(self, horizon_s: float, complete_frames: int, frames: pd.DataFrame) -> None:
        """The trace is complete before ``horizon_s`` (no row added later starts before it)
        and for the frames before ``complete_frames`` (the later frames start at or after
        ``horizon_s``); ``frames`` holds at least those frames' rows (``frame``, ``start_s``,
        ``end_s``: the frame table's columns)."""
        self.all_busy.advance(horizon_s)
        self.any_waiting.advance(horizon_s)
        for name, sweep in (("busy", self.all_busy), ("wait", self.any_waiting)):
            known = self._at_window[name]
            for i, t in enumerate((self.t0_s, self.t1_s)):
                if known[i] is None and t <= horizon_s:
                    known[i] = float(sweep.at(t))
        rows = tuple(np.concatenate(column) for column in zip(*self._open, strict=True))
        if not rows:
            rows = _NO_ROWS
        done = rows[0] < complete_frames
        self._open = [tuple(column[~done] for column in rows)] if not done.all() else []
        number = frames["frame"].to_numpy()
        starts, ends = frames["start_s"].to_numpy(), frames["end_s"].to_numpy()
        if (starts[number >= complete_frames] < horizon_s).any():
            raise ValueError("a frame not complete starts before the digest's horizon")
        closing = (number >= self._closed_until) & (number < complete_frames)
        self._closed_until = max(self._closed_until, complete_frames)
        measured = closing & (starts >= self.t0_s) & (starts < self.t1_s)
        if measured.any():
            frame, start, end = number[measured], starts[measured], ends[measured]
            order = np.argsort(frame, kind="stable")
            frame, start, end = frame[order], start[order], end[order]
            inside = done & np.isin(rows[0], frame)
            b1, b2 = marks_of_rows(
                tuple(column[inside] for column in rows), self.activities, frame, start, end
            )
            overlap = self.all_busy.at(b1) - self.all_busy.at(start)
            for total, term in zip(
                self._moment_sums, moment_terms(start, end, b1, b2, overlap), strict=True
            ):
                total.add(term)
            self._marked += len(frame)
        self.all_busy.forget_before(horizon_s)  # F is asked for later at or after it only
        self.any_waiting.forget_before(horizon_s)

    def summary(self) -> dict[str, Any]:
        """The summary's trace metrics (keys of :func:`simsrv.pipeline.summary.summarize`);
        call after :meth:`advance` to ``inf`` past every frame."""
        cpus, span = self.cpus, self.span_s
        utilization = [self.per_cpu.get(c) / span for c in range(cpus)]
        breakdown = {}
        for code in sorted(self.per_activity.present(), key=lambda c: self.activities[c]):
            share = self.per_activity.get(code) / (cpus * span)
            if share > 0:
                breakdown[self.activities[code]] = share
        busy_share = sum(v for a, v in breakdown.items() if not is_wait(a))
        breakdown["idle"] = max(0.0, 1.0 - busy_share)
        by_name = {
            self.activities[c]: self.per_activity.get(c) for c in self.per_activity.present()
        }
        os_share = {
            key: float(sum(by_name.get(a, 0.0) for a in acts) / (cpus * span))
            for key, acts in OS_ACTIVITIES.items()
        }
        f0, f1 = self._at_window["busy"]
        parallel = float((f1 - f0) / span) if span > 0 else 0.0
        w0, w1 = self._at_window["wait"]
        any_share = float((w1 - w0) / span) if span > 0 else 0.0
        moments = moments_from_sums([s.value() for s in self._moment_sums], self._marked)
        pairs = sorted(
            ((self.threads[t], self.activities[a], code) for (t, a), code in self.pairs.items()),
        )
        return {
            "parallel_fraction": parallel,
            "cpu_utilization": utilization,
            "time_breakdown": dict(sorted(breakdown.items())),
            "moments": moments,
            "os_time_fraction": os_share,
            **waiting_shares(
                self.waits.get(THREAD_TIME),
                self.waits.get(LOCK_WAIT),
                self.waits.get(BARRIER_WAIT),
                any_share,
            ),
            "per_thread": thread_shares((t, a, float(self.per_pair.get(c))) for t, a, c in pairs)
            if self.pairs and span > 0
            else {},
        }


_NO_ROWS = (
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, bool),
    np.zeros(0),
    np.zeros(0),
)
"""Rows as the digest keeps them: frame, thread code, activity code, busy, start_s, end_s."""


def digest_store(
    trace: Trace, frames: pd.DataFrame, t0_s: float, t1_s: float, cpus: int
) -> dict[str, Any]:
    """The summary's trace metrics of a machine's whole trace (one block)."""
    digest = TraceDigest(t0_s, t1_s, cpus)
    ints, times = trace.columns()
    digest.add(ints, times, trace.threads.names, trace.activities.names)
    digest.advance(np.inf, ALL_FRAMES, frames)
    return digest.summary()
