"""The machine's records taken as the run goes: digested, checked, and kept only when asked.

A thread strategy records ~20-30 trace rows a frame and ~2,000 frames a simulated second at
160 clients; kept whole, the trace was most of a run's memory and grew with its length
(``docs/performance.md``).  :class:`TraceStream` takes the rows out of the machine's stores
(:meth:`simsrv.machine.trace.Columns.take`) in blocks of at least :data:`BLOCK_ROWS` rows,
at frame boundaries, with the horizon before which the machine says its records are
complete (``settled_us``: the next frame's start, or the earliest start of an interval a
live thread has not recorded yet), and gives each block to

* the digest of the summary's trace metrics (:class:`simsrv.metrics.trace_digest.TraceDigest`),
* the machine invariants (:class:`simsrv.machine.invariants.TraceChecks`),
* the kept trace: the rows that overlap the window asked for
  (:class:`~simsrv.pipeline.keep_window.KeepWindow`), if any.

The frames whose rows are all digested are closed (:attr:`TraceStream.closed_frames`): the run
may take them out of its frame table (:mod:`simsrv.pipeline.frame_stream`); the stream reads the
times of the frames after them from the table.

Whatever the blocks, the metrics are equal to the bit and the checks give the same verdicts
(``tests/test_trace_stream.py``).  The simpy reference engine says nothing while a thread
is alive: with threads outliving every frame, it gives everything in one block at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsrv.machine.invariants import TraceChecks
from simsrv.machine.trace import MACHINE_CHARGED, US, Settled, trace_frame, wait_codes
from simsrv.metrics.trace_digest import ALL_FRAMES, TraceDigest
from simsrv.pipeline.keep_window import KeepWindow, WindowEnd
from simsrv.workload.frame_table import FrameTable

BLOCK_ROWS = 1 << 16
"""Trace rows at least in a block (~3 MB of trace; ~30 simulated ms of a thread strategy at
160 clients): fewer, larger blocks cost less per row."""
RETRY_ROWS = 1 << 12
"""Rows recorded before the machine is asked again when it had settled nothing new (threads
alive across frames; asking costs a pass over its live threads and locks)."""
US_PER_S = 1e6


class TraceStream:
    """A run's trace rows taken from ``machine`` in blocks (see the module docstring).

    Parameters
    ----------
    machine:
        The run's machine (an engine of :mod:`simsrv.machine.engines`).
    frames:
        The run's frame table (the frames from :attr:`closed_frames` on are still in it).
    window:
        The measured window ``(t0_s, t1_s)`` of the digest.
    slowest_speed:
        The slowest speed a computation may run at (``costs_accounted``).
    keep:
        The rows to keep as the run's trace DataFrame, or None (the default of a run).
    block_rows:
        Rows at least in a block (default :data:`BLOCK_ROWS`).
    """

    def __init__(
        self,
        machine: Any,
        frames: FrameTable,
        window: tuple[float, float],
        slowest_speed: float,
        keep: KeepWindow | None = None,
        block_rows: int | None = None,
    ) -> None:
        self.machine, self.frames, self.keep, self.window = machine, frames, keep, window
        self.block_rows = BLOCK_ROWS if block_rows is None else block_rows
        trace, holds = machine.trace, machine.lock_holds
        self.digest = TraceDigest(*window, machine.cpus)
        self.checks = TraceChecks(trace.threads.names, holds.locks.names, slowest_speed)
        self.closed_frames = 0
        """Frames before it are closed in the digest: the stream no longer needs them."""
        self._horizon_us = -np.inf  # the last block's trace horizon
        self._next_try = self.block_rows  # rows in the stores at which to ask the machine again
        self._kept: list[tuple[np.ndarray, np.ndarray]] = []
        self._keep_end = WindowEnd(keep) if keep is not None else None
        self._seen = 0  # frames before it were seen by the keep window's end
        self.blocks = 0
        """Blocks taken (a diagnostic)."""

    def drain(self, now_s: float) -> None:
        """At a frame boundary (the next frame starts at ``now_s`` or later): take the rows
        when there are :attr:`block_rows` of them and the machine has settled further than at
        the last block."""
        rows = len(self.machine.trace)
        if rows < self._next_try:
            return
        settled = self.machine.settled_us(now_s * US_PER_S)
        if settled.trace_us <= self._horizon_us:  # nothing settled since the last block
            self._next_try = rows + RETRY_ROWS  # threads still alive: ask again later
            return
        complete = self.frames.size if settled.open_frame is None else settled.open_frame
        self._take(complete, settled, now_s)

    def close(self) -> dict[str, Any]:
        """At the end of the run (every frame in the table): the last rows taken, the threads
        that outlive the last frame run to their end (their rows are checked but not part of
        the run's metrics or kept trace) and every check done.  Returns the summary's trace
        metrics."""
        self._take(self.frames.size, None, np.inf)
        self.machine.finish()
        ints, times = self.machine.trace.take()
        holds_ints, holds_us = self.machine.lock_holds.take()
        self._check(ints, times, holds_ints, holds_us)
        self.checks.finish()
        return self.digest.summary()

    def kept_trace(self) -> pd.DataFrame | None:
        """The rows kept so far (with the machine's rows not taken yet, filtered the same way)
        as the trace DataFrame (:func:`simsrv.machine.trace.trace_frame`); None when the run
        keeps no trace."""
        if self.keep is None:
            return None
        trace = self.machine.trace
        blocks = [*self._kept, self._kept_rows(*trace.columns())]
        ints = np.concatenate([b[0] for b in blocks])
        times = np.concatenate([b[1] for b in blocks])
        return trace_frame(ints, times, trace.threads.names, trace.activities.names)

    def _take(self, complete: int, settled: Settled | None, now_s: float) -> None:
        """One block: every row recorded so far; the frames before ``complete`` have all
        theirs; ``settled`` says how far the records are complete (None: the run is over, the
        checks wait for the threads that outlive it)."""
        self.blocks += 1
        self._next_try = self.block_rows
        trace = self.machine.trace
        ints, times = trace.take()
        holds_ints, holds_times = self.machine.lock_holds.take()
        base, frame_times = self.frames.base, self.frames.stored_times()
        if self._keep_end is not None:  # first: a violation found below keeps the rows
            self._keep_end.see(frame_times[self._seen - base :])  # showing it
            self._seen = base + len(frame_times)
            self._kept.append(self._kept_rows(ints, times))
        self._check(ints, times, holds_ints, holds_times)
        if settled is not None:
            self._horizon_us = settled.trace_us
            self.checks.advance(settled.trace_us, settled.holds_us, complete)
        self.digest.add(ints, times, trace.threads.names, trace.activities.names)
        horizon_s, closed = digest_horizon(frame_times, base, complete, settled, now_s)
        first = self.closed_frames
        frames = pd.DataFrame(
            {
                "frame": np.arange(first, base + len(frame_times)),
                "start_s": frame_times[first - base :, 0],
                "end_s": frame_times[first - base :, 1],
            }
        )
        self.digest.advance(horizon_s, closed, frames)
        self.closed_frames = max(first, closed)

    def _check(
        self, ints: np.ndarray, times: np.ndarray, holds_ints: np.ndarray, holds_us: np.ndarray
    ) -> None:
        """A block of trace and lock-hold rows to the checks, with the frames' charged time."""
        self.checks.add(
            ints, times, self._busy(ints), holds_ints, holds_us, self._charged(),
            self._by_machine(ints),
        )  # fmt: skip

    def _busy(self, ints: np.ndarray) -> np.ndarray:
        return ~wait_codes(self.machine.trace.activities.names)[ints[:, 3]]

    def _by_machine(self, ints: np.ndarray) -> np.ndarray | None:
        """Per row: CPU time the machine charges itself (a signal, a spin), None when no
        activity of the block is one."""
        names = self.machine.trace.activities.names
        charged = np.isin(np.asarray(names, dtype=object), MACHINE_CHARGED)
        if not charged.any():
            return None
        rows = charged[ints[:, 3]]
        return rows if rows.any() else None

    def _charged(self) -> list[float]:
        """The CPU time charged by the frames executed since the last block, taken from the
        machine (its list emptied)."""
        charged = self.machine.charged_us
        taken = charged[:]
        charged.clear()
        return taken

    def _kept_rows(self, ints: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keep = self._keep_end.overlaps(times[:, 0] * US, times[:, 1] * US)
        return ints[keep], times[keep]


def digest_horizon(
    frame_times: np.ndarray, base: int, complete: int, settled: Settled | None, now_s: float
) -> tuple[float, int]:
    """The digest's horizon, s, and the frames it closes, from the machine's ``settled``
    (None: the run is over) with the next frame at ``now_s`` or later and the frames before
    ``complete`` complete; ``frame_times`` holds the frames from number ``base`` on (the
    frames before it are closed: no later horizon is before their ends).

    The digest (:meth:`TraceDigest.advance`) needs, in its own units: no row added later
    starts before the horizon (rows are converted ``us * 1e-6``, so the settled ``trace_us``
    converted the same way bounds them); no frame it does not close starts before it (frame
    times are the frame table's seconds, which the machine divided by ``1e6``: ``now_s`` and
    the first open frame's start bound them); and every frame it closes ends by it.  A frame
    may be complete yet end an ulp after the converted horizon: it closes at a later block,
    and the horizon stops at its start."""
    frames = base + len(frame_times)
    if settled is None:
        return np.inf, ALL_FRAMES
    horizon_s = min(settled.trace_us * US, now_s)
    if complete < frames:
        horizon_s = min(horizon_s, float(frame_times[complete - base, 0]))
    ends = frame_times[: complete - base, 1]
    closed = base + int(np.searchsorted(ends, horizon_s, side="right"))
    if closed < frames:
        horizon_s = min(horizon_s, float(frame_times[closed - base, 0]))
    return horizon_s, closed
