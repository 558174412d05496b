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

import pandas as pd

from simsrv.metrics.timeline import cumulative_time, interval_levels, window_share


def waiting_fractions(trace: pd.DataFrame, t0_s: float, t1_s: float) -> dict[str, float]:
    """The three fractions above for a trace already clipped to ``[t0_s, t1_s]``."""
    length = trace["end_s"] - trace["start_s"]
    thread_time = float(length.sum())
    activity = trace["activity"]
    names = [str(a) for a in pd.unique(activity)]  # decide per distinct name, not per row
    at_barrier = activity.isin([a for a in names if a.endswith("barrier_wait")])
    waiting = trace[at_barrier | (activity == "lock_wait")]
    times, levels = interval_levels(waiting["start_s"].to_numpy(), waiting["end_s"].to_numpy())
    share = window_share(cumulative_time(times, levels >= 1), t0_s, t1_s)

    def fraction(rows: pd.Series) -> float:
        return float(length[rows].sum()) / thread_time if thread_time else 0.0

    return {
        "lock_wait_fraction": fraction(activity == "lock_wait"),
        "barrier_wait_fraction": fraction(at_barrier),
        "any_waiting_fraction": share,
    }
