"""How much of the server threads' time goes to waiting for locks and at barriers [MODEL §3].

AB04 report, for the multithreaded server, the time lost to lock contention and to barriers and
the time during which at least one thread waits.  From the trace (:mod:`simsrv.machine.trace`):

* ``lock_wait_fraction``: lock-wait time / thread time;
* ``barrier_wait_fraction``: barrier-wait time (every barrier: ``*barrier_wait``) / thread time;
* ``any_waiting_fraction``: share of the window during which at least one thread waits for a
  lock or at a barrier (the union of those intervals).

*Thread time* is the total length of the threads' recorded intervals in the window: the time
the server's threads spend inside frames, computing or blocked (a thread waiting for a packet
between frames is not counted; nor is a runnable thread waiting for its turn on a CPU shared
with another thread of the server).  All three are 0 for a single-threaded server.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsrv.metrics.kahan import GroupSums
from simsrv.metrics.timeline import cumulative_time, interval_levels, window_share

WAITING_FRACTIONS = ("lock_wait_fraction", "barrier_wait_fraction", "any_waiting_fraction")
THREAD_TIME, LOCK_WAIT, BARRIER_WAIT = 0, 1, 2
"""The groups of the waiting sums (:func:`add_wait_times`)."""


def waiting_fractions(trace: pd.DataFrame, t0_s: float, t1_s: float) -> dict[str, float]:
    """The three fractions above for a trace already clipped to ``[t0_s, t1_s]``."""
    length = (trace["end_s"] - trace["start_s"]).to_numpy()
    activity = trace["activity"]
    names = [str(a) for a in pd.unique(activity)]  # decide per distinct name, not per row
    at_barrier = activity.isin([a for a in names if is_barrier_wait(a)]).to_numpy()
    at_lock = (activity == "lock_wait").to_numpy()
    sums = GroupSums(3)
    add_wait_times(sums, length, at_lock, at_barrier)
    waiting = at_barrier | at_lock
    starts, ends = trace["start_s"].to_numpy()[waiting], trace["end_s"].to_numpy()[waiting]
    times, levels = interval_levels(starts, ends)
    share = window_share(cumulative_time(times, levels >= 1), t0_s, t1_s)
    return waiting_shares(sums.get(THREAD_TIME), sums.get(LOCK_WAIT), sums.get(BARRIER_WAIT), share)


def add_wait_times(
    sums: GroupSums, length: np.ndarray, at_lock: np.ndarray, at_barrier: np.ndarray
) -> None:
    """Add intervals' ``length`` (s, in trace order) to the Kahan sums of the thread time
    (every interval), the lock-wait and the barrier-wait time (the rows flagged)."""
    for group, rows in (
        (THREAD_TIME, slice(None)),
        (LOCK_WAIT, at_lock),
        (BARRIER_WAIT, at_barrier),
    ):
        sums.add(length[rows], np.full(len(length[rows]), group))


def is_barrier_wait(activity: str) -> bool:
    """True for a wait at any barrier (``barrier_wait``, ``end_barrier_wait``, ...)."""
    return activity.endswith("barrier_wait")


def waiting_shares(
    thread_time_s: float, lock_wait_s: float, barrier_wait_s: float, any_waiting: float
) -> dict[str, float]:
    """The fractions from the window's thread time, lock-wait and barrier-wait time (s) and the
    share of the window with some thread waiting."""

    def fraction(wait_s: float) -> float:
        return wait_s / thread_time_s if thread_time_s else 0.0

    return {
        "lock_wait_fraction": fraction(lock_wait_s),
        "barrier_wait_fraction": fraction(barrier_wait_s),
        "any_waiting_fraction": any_waiting,
    }
