"""The machine's trace: one row per interval a thread spent on a CPU.

Recorded facts, from which every metric is derived (:mod:`simsrv.metrics`).  Columns of
:meth:`Trace.to_frame`:

=============  ==========================================================================
``frame``      server frame the interval belongs to (the frame whose plan issued it)
``cpu``        CPU index, 0-based
``thread``     thread name within the frame's plan
``activity``   what ran: ``world``, ``request``, ``reply``, ``net_recv``, ``net_send``, ... or a
               wait state, named ``*_wait`` (``lock_wait``, ``barrier_wait`` and named barriers
               such as ``end_barrier_wait``, ``join_wait``, ``runqueue_wait``)
``start_s``    interval start, simulated seconds
``end_s``      interval end, simulated seconds
``busy``       True when the CPU was working (computing, or OS work); False for wait states
=============  ==========================================================================

Idle CPU time (no thread at all) is not recorded: it is the complement of the busy time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WAIT_ACTIVITIES = frozenset({"lock_wait", "barrier_wait", "join_wait", "runqueue_wait"})
"""The executor's wait states; strategies may name barrier waits too (any ``*_wait``)."""
WAIT_SUFFIX = "_wait"


def is_wait(activity: str) -> bool:
    """True for activities during which a thread is blocked (the CPU is not busy for it)."""
    return activity.endswith(WAIT_SUFFIX)


US = 1e-6


class Trace:
    """Append-only column store of intervals (times in microseconds internally)."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, str, str, float, float]] = []

    def record(
        self, frame: int, cpu: int, thread: str, activity: str, start_us: float, end_us: float
    ) -> None:
        """Append one interval; zero-length intervals are skipped."""
        if end_us > start_us:
            self.rows.append((frame, cpu, thread, activity, start_us, end_us))

    def __len__(self) -> int:
        return len(self.rows)

    def to_frame(self) -> pd.DataFrame:
        """The trace as a tidy DataFrame (columns documented in the module docstring)."""
        table = np.array(self.rows, dtype=object).reshape(len(self.rows), 6)
        df = pd.DataFrame(
            {
                "frame": table[:, 0].astype(np.int64),
                "cpu": table[:, 1].astype(np.int32),
                "thread": pd.Categorical(table[:, 2]),
                "activity": pd.Categorical(table[:, 3]),
                "start_s": table[:, 4].astype(np.float64) * US,
                "end_s": table[:, 5].astype(np.float64) * US,
            }
        )
        waits = [a for a in df["activity"].cat.categories if is_wait(a)]
        df["busy"] = ~df["activity"].isin(waits)
        return df
