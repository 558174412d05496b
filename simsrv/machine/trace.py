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

Storage
-------
A run records millions of rows, so they are kept as numpy columns (:class:`Columns`), not as
Python tuples: names (threads, activities, locks) are interned to integer codes, times are
float64 microseconds.  Two writers fill them, in the order the machine records:

* the compiled machine (:mod:`simsrv.machine.engine`) writes rows straight into the columns
  (:meth:`Columns.reserve`, then the rows written, advancing :attr:`Columns.counter`);
* the simpy reference (:mod:`simsrv.machine.simpy_engine`) appends tuples to
  :attr:`Columns.pending`, which are moved into the columns (:meth:`Columns.flush`) before
  anything reads the store.

:class:`Trace` stores the intervals; :class:`LockHolds` the critical sections of the locks
(for the ``lock_exclusive`` invariant).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from simsrv.core.uninitialised import empty

WAIT_ACTIVITIES = frozenset({"lock_wait", "barrier_wait", "join_wait", "runqueue_wait"})
"""The executor's wait states; strategies may name barrier waits too (any ``*_wait``)."""
WAIT_SUFFIX = "_wait"

SIGNAL_SEND = "signal_send"
"""The activity of a waker's signals (a thread library that wakes sleepers with ``kill()``:
LinuxThreads): CPU time, not a wait."""
SIGNAL_WAKEUP = "signal_wakeup"
"""The activity of a sleeper's return from ``sigsuspend`` once its signal arrives: CPU time."""
LOCK_SPIN = "lock_spin"
"""The activity of a thread busy-waiting on its CPU for a kernel spinlock (a
:class:`~simsrv.machine.plan.SpinSection`'s lock held by another): CPU time, not a wait."""
COLD_START = "cold_start"
"""The activity of a CPU's cold start: the extra CPU time of the first computation after the
CPU was idle (:mod:`simsrv.machine.cold_start`)."""
COLD_REFILL = "cold_refill"
"""The activity of a cold start's refill: the part that grows with the idle time
(:mod:`simsrv.machine.cold_start`); ``cold_start`` is then its fixed wake-up part."""
MACHINE_CHARGED = (SIGNAL_SEND, SIGNAL_WAKEUP, LOCK_SPIN, COLD_START, COLD_REFILL)
"""Activities the machine charges itself: they hold a CPU but no plan charged them."""


def is_wait(activity: str) -> bool:
    """True for activities during which a thread is blocked (the CPU is not busy for it)."""
    return activity.endswith(WAIT_SUFFIX)


US = 1e-6


class Settled(NamedTuple):
    """How far a machine's records are complete (an engine's ``settled_us(next_start_us)``):
    no interval recorded later starts before ``trace_us``, no critical section logged later
    starts before ``holds_us`` (both us), and every frame before ``open_frame`` has all its
    rows (None: every frame executed so far)."""

    trace_us: float
    holds_us: float
    open_frame: int | None


class Names:
    """Interned names (any hashable): ``code(name)`` gives each distinct name its number, in
    order of first appearance; ``names[code]`` is the name."""

    __slots__ = ("codes", "names")

    def __init__(self) -> None:
        self.names: list[Hashable] = []
        self.codes: dict[Hashable, int] = {}

    def code(self, name: Hashable) -> int:
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code

    def codes_of(self, names: Sequence[Hashable]) -> np.ndarray:
        """The codes of ``names``, (len(names),) int64."""
        return np.array([self.code(n) for n in names], dtype=np.int64)


class Columns:
    """Growable columns of rows: ``ints`` (capacity, k) int64 and ``times`` (capacity, 2)
    float64 (start and end, us), the first :attr:`size` rows valid; :attr:`pending` holds rows
    appended as tuples that :meth:`flush` has not stored yet.  Subclasses say how a tuple maps
    to the columns (:meth:`_encode`) and back (:meth:`_decode`)."""

    __slots__ = ("counter", "ints", "pending", "times")
    INT_COLUMNS = 0

    def __init__(self, capacity: int = 1024) -> None:
        self.ints = empty((capacity, self.INT_COLUMNS), np.int64)
        self.times = empty((capacity, 2))
        self.counter = np.zeros(1, np.int64)
        """``counter[0]`` is :attr:`size`: an array, so that the compiled machine advances it
        in place as it writes rows (:mod:`simsrv.machine.engine`)."""
        self.pending: list[tuple] = []

    @property
    def size(self) -> int:
        """Rows stored (pending ones not counted)."""
        return int(self.counter[0])

    @size.setter
    def size(self, value: int) -> None:
        self.counter[0] = value

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more rows after the stored ones (capacity doubles as needed)."""
        need = self.size + rows
        capacity = len(self.times)
        if need > capacity:
            while capacity < need:
                capacity *= 2
            ints = empty((capacity, self.INT_COLUMNS), np.int64)
            times = empty((capacity, 2))
            ints[: self.size] = self.ints[: self.size]
            times[: self.size] = self.times[: self.size]
            self.ints, self.times = ints, times

    def flush(self) -> None:
        """Store the pending tuples (in order) in the columns."""
        pending = self.pending
        if not pending:
            return
        n = len(pending)
        self.reserve(n)
        ints, times = self._encode(pending)
        self.ints[self.size : self.size + n] = ints
        self.times[self.size : self.size + n] = times
        self.size += n
        pending.clear()

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The stored rows (pending ones flushed first): ``ints`` and ``times`` (views)."""
        self.flush()
        return self.ints[: self.size], self.times[: self.size]

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """Every stored row (pending ones flushed first), as copies, and the store emptied:
        a reader that takes the rows as the run goes keeps the store small.  Names keep their
        codes."""
        ints, times = self.columns()
        ints, times = ints.copy(), times.copy()
        self.size = 0
        return ints, times

    def __len__(self) -> int:
        return self.size + len(self.pending)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.rows)

    def row(self, index: int) -> tuple:
        """Stored row ``index`` as a tuple (pending ones flushed first)."""
        ints, times = self.columns()
        return self._decode(ints[index : index + 1], times[index : index + 1])[0]

    @property
    def rows(self) -> list[tuple]:
        """Every row as a tuple (a copy; for tests and small traces)."""
        ints, times = self.columns()
        return self._decode(ints, times)

    def _encode(self, rows: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _decode(self, ints: np.ndarray, times: np.ndarray) -> list[tuple]:
        raise NotImplementedError


class Trace(Columns):
    """The intervals: rows ``(frame, cpu, thread, activity, start_us, end_us)``; ``ints``
    columns frame, cpu, thread code, activity code (:attr:`threads`, :attr:`activities`)."""

    __slots__ = ("activities", "threads")
    INT_COLUMNS = 4

    def __init__(self, capacity: int = 1024) -> None:
        super().__init__(capacity)
        self.threads = Names()
        self.activities = Names()

    def record(
        self, frame: int, cpu: int, thread: str, activity: str, start_us: float, end_us: float
    ) -> None:
        """Append one interval; zero-length intervals are skipped."""
        if end_us > start_us:
            self.pending.append((frame, cpu, thread, activity, start_us, end_us))

    def _encode(self, rows: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        frames, cpus, threads, activities, starts, ends = zip(*rows, strict=True)
        ints = empty((len(rows), 4), np.int64)
        ints[:, 0], ints[:, 1] = frames, cpus
        ints[:, 2] = [self.threads.code(t) for t in threads]
        ints[:, 3] = [self.activities.code(a) for a in activities]
        return ints, np.array([starts, ends], dtype=np.float64).T

    def _decode(self, ints: np.ndarray, times: np.ndarray) -> list[tuple]:
        threads, activities = self.threads.names, self.activities.names
        return [
            (f, c, threads[t], activities[a], s, e)
            for (f, c, t, a), (s, e) in zip(ints.tolist(), times.tolist(), strict=True)
        ]

    def busy(self) -> np.ndarray:
        """Per stored row: True unless its activity is a wait."""
        ints, _ = self.columns()
        return ~wait_codes(self.activities.names)[ints[:, 3]]

    def to_frame(self) -> pd.DataFrame:
        """The trace as a tidy DataFrame (columns documented in the module docstring)."""
        ints, times = self.columns()
        return trace_frame(ints, times, self.threads.names, self.activities.names)


def wait_codes(activities: Sequence[str]) -> np.ndarray:
    """Per activity code: True when it is a wait (:func:`is_wait`)."""
    return np.array([is_wait(a) for a in activities], dtype=bool)


def trace_frame(
    ints: np.ndarray, times_us: np.ndarray, threads: list, activities: list
) -> pd.DataFrame:
    """Trace rows (:class:`Trace` columns; ``threads`` and ``activities`` name the codes) as
    the tidy DataFrame documented in the module docstring."""
    df = pd.DataFrame(
        {
            "frame": ints[:, 0].copy(),
            "cpu": ints[:, 1].astype(np.int32),
            "thread": _categorical(ints[:, 2], threads),
            "activity": _categorical(ints[:, 3], activities),
            "start_s": times_us[:, 0] * US,
            "end_s": times_us[:, 1] * US,
        }
    )
    waits = [a for a in df["activity"].cat.categories if is_wait(a)]
    df["busy"] = ~df["activity"].isin(waits)
    return df


def _categorical(codes: np.ndarray, names: list) -> pd.Categorical:
    """``names[codes]`` as a categorical whose categories are the names that occur, sorted
    (what ``pd.Categorical`` of the values gives)."""
    present = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    order = sorted(present.tolist(), key=names.__getitem__)
    recode = np.full(len(names), -1, np.int64)
    recode[order] = np.arange(len(order))
    categories = pd.Index([names[i] for i in order])
    return pd.Categorical.from_codes(recode[codes], categories=categories)


class LockHolds(Columns):
    """The critical sections: rows ``(lock, frame, thread, start_us, end_us)``; ``ints``
    columns lock code (:attr:`locks`), frame, thread code (:attr:`threads`)."""

    __slots__ = ("locks", "threads")
    INT_COLUMNS = 3

    def __init__(self, capacity: int = 1024, threads: Names | None = None) -> None:
        super().__init__(capacity)
        self.locks = Names()
        self.threads = Names() if threads is None else threads
        """Thread names (a trace's, to share its codes)."""

    @classmethod
    def from_rows(cls, rows: Sequence[tuple]) -> LockHolds:
        holds = cls(max(len(rows), 1))
        holds.pending.extend(rows)
        return holds

    def _encode(self, rows: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        locks, frames, threads, starts, ends = zip(*rows, strict=True)
        ints = empty((len(rows), 3), np.int64)
        ints[:, 0] = [self.locks.code(lock) for lock in locks]
        ints[:, 1] = frames
        ints[:, 2] = [self.threads.code(t) for t in threads]
        return ints, np.array([starts, ends], dtype=np.float64).T

    def _decode(self, ints: np.ndarray, times: np.ndarray) -> list[tuple]:
        locks, threads = self.locks.names, self.threads.names
        return [
            (locks[k], f, threads[t], s, e)
            for (k, f, t), (s, e) in zip(ints.tolist(), times.tolist(), strict=True)
        ]
