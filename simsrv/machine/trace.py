"""The machine's trace: one row per interval a thread spent on a CPU.

Recorded facts, from which every metric is derived (:mod:`simsrv.metrics`).  Columns of
:meth:`Trace.to_frame`:

=============  ==========================================================================
``frame``      server frame the interval belongs to (the frame whose plan issued it)
``cpu``        CPU index, 0-based
``thread``     thread name within the frame's plan
``activity``   what ran: ``world``, ``request``, ``reply``, ``net_recv``, ``net_send``, ... or a
               wait state (``lock_wait``, ``barrier_wait``, ``join_wait``)
``start_s``    interval start, simulated seconds
``end_s``      interval end, simulated seconds
``busy``       True when the CPU was working (computing, or OS work); False for wait states
=============  ==========================================================================

Idle CPU time (no thread at all) is not recorded: it is the complement of the busy time.
"""

from __future__ import annotations

import pandas as pd

WAIT_ACTIVITIES = frozenset({"lock_wait", "barrier_wait", "join_wait"})
"""Activities during which a thread is blocked: the CPU is not busy for it."""

US = 1e-6


class Trace:
    """Append-only column store of intervals (times in microseconds internally)."""

    __slots__ = ("frame", "cpu", "thread", "activity", "start_us", "end_us")

    def __init__(self) -> None:
        self.frame: list[int] = []
        self.cpu: list[int] = []
        self.thread: list[str] = []
        self.activity: list[str] = []
        self.start_us: list[float] = []
        self.end_us: list[float] = []

    def record(
        self, frame: int, cpu: int, thread: str, activity: str, start_us: float, end_us: float
    ) -> None:
        """Append one interval; zero-length intervals are skipped."""
        if end_us <= start_us:
            return
        self.frame.append(frame)
        self.cpu.append(cpu)
        self.thread.append(thread)
        self.activity.append(activity)
        self.start_us.append(start_us)
        self.end_us.append(end_us)

    def __len__(self) -> int:
        return len(self.frame)

    def to_frame(self) -> pd.DataFrame:
        """The trace as a tidy DataFrame (columns documented in the module docstring)."""
        df = pd.DataFrame(
            {
                "frame": pd.array(self.frame, dtype="int64"),
                "cpu": pd.array(self.cpu, dtype="int32"),
                "thread": pd.Categorical(self.thread),
                "activity": pd.Categorical(self.activity),
                "start_s": pd.array(self.start_us, dtype="float64") * US,
                "end_s": pd.array(self.end_us, dtype="float64") * US,
            }
        )
        df["busy"] = ~df["activity"].isin(list(WAIT_ACTIVITIES))
        return df
