"""Invariants checked in every run: cheap facts that must always hold.

=======================  ====================================================================
``message_conservation`` every packet sent is lost, in flight, dropped, processed or queued
                         (the end-of-run accounting balances), and the processed packets are
                         the packets the frames read
``entity_partition``     every active entity of a frame is in exactly one group and every
                         group on exactly one worker (``bsp-group``, checked every frame);
                         every packet on one existing thread (``area-quadrant``, checked
                         every frame: a packet goes to the thread of its sender's area at
                         its tick, so a player crossing a border within a frame has packets
                         on two threads, as in [R §3]); ``abdelkhalek`` and ``sequential``
                         give each client to one thread by a fixed rule (``c mod T``; one
                         thread), so it holds by construction and is not re-checked
``cpu_exclusive``        no CPU runs two busy intervals at once (waits do not hold a CPU)
``lock_exclusive``       the critical sections of a lock never overlap
``costs_accounted``      every frame's trace holds exactly the CPU time its plan charged
                         (``Compute`` costs; with SMT, between the cost and the cost divided
                         by the SMT throughput)
=======================  ====================================================================

A violation raises :class:`InvariantViolation`: one line naming the invariant, the frame and
the entities involved (threads, packets, entities or the lock).  ``simsrv`` prints it and exits
with status 3.  The trace checks are vectorised (numpy) and take the trace in blocks as the run
goes (:class:`TraceChecks`, fed by :mod:`simsrv.pipeline.trace_stream`), the partition checks are
compiled per frame; their cost is measured in ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType

import numpy as np

from simsrv.core.errors import InvariantViolation  # noqa: F401  (raised here, re-exported)
from simsrv.core.uninitialised import empty
from simsrv.machine.trace import US, LockHolds

CHECKS = (
    "message_conservation",
    "entity_partition",
    "cpu_exclusive",
    "lock_exclusive",
    "costs_accounted",
)
REL_TOLERANCE = 1e-9  # sums of the same costs added in another order, and us -> s
ABS_TOLERANCE_S = 1e-12
ROUNDING_ULPS_PER_ROW = 2
"""How far a busy row's traced length may be from the cost it traces, in ulps of its end time.
The machine keeps absolute times in us as doubles and computes a row's end from its start
(``start + cost``, or from the remaining cost of a computation a preemption split): each
rounding is at most half an ulp of the end, and the length ``end - start`` of two nearby doubles
is exact (Sterbenz), so a row is within one ulp of its end, counted twice for margin.  A frame
may differ from its charged time by the sum over its rows.  The ulp grows with the time: 3.8e-6
us at 20,000 s, where a frame of a few rows drifts past any fixed relative tolerance."""


def check_conservation(accounting: dict[str, int], frame_messages: int) -> None:
    """The end-of-run packet balance, and processed = packets read by the frames."""
    a = accounting
    accounted = a["lost"] + a["in_flight"] + a["dropped"] + a["processed"] + a["queued"]
    if a["sent"] != accounted or min(a.values()) < 0:
        raise InvariantViolation(
            "message_conservation",
            None,
            f"packets sent {a['sent']} != lost {a['lost']} + in flight {a['in_flight']} + "
            f"dropped {a['dropped']} + processed {a['processed']} + queued {a['queued']}",
        )
    if a["processed"] != frame_messages:
        raise InvariantViolation(
            "message_conservation",
            None,
            f"{a['processed']} packets processed but the frames read {frame_messages}",
        )


def check_partition(
    frame: int,
    senders: np.ndarray,
    entities: np.ndarray,
    entity_group: np.ndarray,
    sizes: np.ndarray,
    assignment: np.ndarray,
    workers: int,
) -> None:
    """``entity_partition`` of one frame of a strategy that groups entities and assigns groups
    to workers: its packets' ``senders`` (every one must be an active entity), its active
    ``entities`` (sorted, each once), the group of each (``entity_group``), the groups'
    ``sizes`` and the worker of each group (``assignment``, in ``0..workers - 1``).  Compiled
    (:mod:`simsrv.machine.invariant_kernels`): well under a microsecond a frame."""
    code, a, b, c = _kernels().partition_kernel(
        senders, entities, entity_group, sizes, assignment, workers
    )
    if code:
        raise InvariantViolation("entity_partition", frame, _partition_message(code, a, b, c))


def check_packet_workers(frame: int, worker: np.ndarray, workers: int) -> None:
    """``entity_partition`` of one frame of a thread strategy that deals packets to threads:
    every packet executed by one worker ``worker[p]`` in ``0..workers - 1``.  Compiled, as
    :func:`check_partition`."""
    report_partition(frame, *_kernels().packet_workers_kernel(worker, workers))


def report_partition(frame: int, code: int, a: int, b: int, c: int) -> None:
    """Raise the ``entity_partition`` violation a kernel of :mod:`simsrv.machine.invariant_kernels`
    returned (``code`` and its three numbers) for ``frame``; nothing when ``code`` is 0 (for
    compiled callers that run the kernel themselves)."""
    if code:
        raise InvariantViolation("entity_partition", frame, _partition_message(code, a, b, c))


@cache
def _kernels() -> ModuleType:
    """The compiled kernels, imported on first use (numba loads in ~0.3 s; runs of strategies
    that check no partition do not pay it)."""
    from simsrv.machine import invariant_kernels

    return invariant_kernels


def _partition_message(code: int, a: int, b: int, c: int) -> str:
    k = _kernels()
    return {
        k.LISTED_TWICE: f"entity {a} is listed twice (in more than one group)",
        k.SENDER_IN_NO_GROUP: f"entity {a} sent a packet but is in no group",
        k.BAD_GROUP: "an entity has no group or a group that does not exist",
        k.WRONG_SIZE: f"group {a} holds {b} entities but is sized {c}",
        k.BAD_WORKER: "a group is on no worker or on one that does not exist",
        k.PACKET_ON_BAD_WORKER: f"packet {a} is on worker {b}, which does not exist",
    }[code]


def check_trace(
    frame: np.ndarray,
    cpu: np.ndarray,
    thread_of: Callable[[int], str],
    start_s: np.ndarray,
    end_s: np.ndarray,
    busy: np.ndarray,
    charged_s: np.ndarray,
    slowest_speed: float,
    by_machine: np.ndarray | None = None,
) -> None:
    """``cpu_exclusive`` and ``costs_accounted`` on the complete trace (one array entry per
    row, times in s; ``thread_of(row)`` names a row's thread; ``charged_s[f]`` is frame
    ``f``'s charged CPU time; ``slowest_speed`` the SMT throughput, 1 without SMT;
    ``by_machine``: per row, CPU time the machine charges itself, in no plan's cost)."""
    b = np.flatnonzero(busy)
    check_cpus(frame, cpu, start_s, end_s, b, thread_of)
    frames = len(charged_s)
    if len(frame) and frame.max() >= frames:
        raise InvariantViolation(
            "costs_accounted", int(frame.max()), "trace rows of a frame that was never planned"
        )
    if by_machine is not None:
        b = np.flatnonzero(busy & ~by_machine)
    traced = np.bincount(frame[b], weights=end_s[b] - start_s[b], minlength=frames)
    ulps = np.spacing(np.abs(end_s[busy] / US)) * US  # as recorded: us
    rounding = np.bincount(frame[busy], weights=ulps, minlength=frames)
    check_costs(traced, charged_s, slowest_speed, rounding_s=rounding)


def check_cpus(
    frame: np.ndarray,
    cpu: np.ndarray,
    start_s: np.ndarray,
    end_s: np.ndarray,
    rows: np.ndarray,
    thread_of: Callable[[int], str],
) -> None:
    """``cpu_exclusive`` on the busy ``rows`` (indices into the other arrays, listed in the
    order the machine recorded them)."""
    cpus = int(cpu.max()) + 1 if len(cpu) and cpu.min() >= 0 else 0
    in_order = cpus > 0 and _kernels().listed_in_order_without_overlap(
        rows, cpu, start_s, end_s, cpus, False
    )
    pair = (
        None
        if in_order
        else _first_overlap(rows[np.lexsort((start_s[rows], cpu[rows]))], cpu, start_s, end_s)
    )
    if pair is not None:
        first, second = pair
        raise InvariantViolation(
            "cpu_exclusive",
            int(frame[second]),
            f"cpu {cpu[first]} runs thread {thread_of(first)} (frame {frame[first]}, until "
            f"{end_s[first]:.9f} s) and thread {thread_of(second)} (from "
            f"{start_s[second]:.9f} s) at once",
        )


def check_costs(
    traced_s: np.ndarray,
    charged_s: np.ndarray,
    slowest_speed: float,
    first_frame: int = 0,
    rounding_s: np.ndarray | float = 0.0,
) -> None:
    """``costs_accounted``: frame ``first_frame + i`` traced ``traced_s[i]`` s of busy time
    and its plan charged ``charged_s[i]`` s (with SMT at ``slowest_speed``, a computation may
    last up to its cost divided by it), within a relative tolerance for the order of the sums
    and :data:`ROUNDING_ULPS_PER_ROW` times ``rounding_s[i]``, the sum of one ulp of the end of
    each of the frame's busy rows (s)."""
    slack = REL_TOLERANCE * charged_s + ABS_TOLERANCE_S + ROUNDING_ULPS_PER_ROW * rounding_s
    low = traced_s < charged_s - slack
    high = traced_s > charged_s / slowest_speed + slack
    if (low | high).any():
        i = int(np.flatnonzero(low | high)[0])
        raise InvariantViolation(
            "costs_accounted",
            first_frame + i,
            f"the plan charged {charged_s[i] * 1e6:.6f} us of CPU time but the trace holds "
            f"{traced_s[i] * 1e6:.6f} us",
        )


def check_locks(holds: LockHolds | Sequence[tuple]) -> None:
    """``lock_exclusive``: per lock, its critical sections ``(lock, frame, thread, start_us,
    end_us)`` do not overlap (vectorised: sorted by lock code, then start)."""
    if not isinstance(holds, LockHolds):
        holds = LockHolds.from_rows(list(holds))
    if len(holds) < 2:
        return
    ints, times = holds.columns()
    check_lock_rows(ints, times, holds.locks.names, holds.threads.names)


def check_lock_rows(ints: np.ndarray, times_us: np.ndarray, locks: list, threads: list) -> None:
    """``lock_exclusive`` on lock-hold rows (:class:`~simsrv.machine.trace.LockHolds`
    columns: lock code, frame, thread code; start and end, us) in the order they were logged;
    ``locks`` and ``threads`` name the codes."""
    if len(ints) < 2:
        return
    codes, start, end = ints[:, 0], times_us[:, 0], times_us[:, 1]
    rows = np.arange(len(codes))
    owners = int(codes.max()) + 1  # codes are >= 0 (interned names)
    if _kernels().listed_in_order_without_overlap(rows, codes, start, end, owners, True):
        return
    pair = _first_overlap(np.lexsort((end, start, codes)), codes, start, end)
    if pair is not None:
        first, second = pair
        lock, frame, thread = locks[codes[first]], ints[first, 1], threads[ints[first, 2]]
        raise InvariantViolation(
            "lock_exclusive",
            int(ints[second, 1]),
            f"lock {lock!r} held by thread {thread} (frame {frame}) "
            f"until {end[first]:.3f} us and taken by thread {threads[ints[second, 2]]} at "
            f"{start[second]:.3f} us",
        )


class TraceChecks:
    """``cpu_exclusive``, ``costs_accounted`` and ``lock_exclusive`` on a machine's trace and
    lock holds taken in blocks as the run goes (:mod:`simsrv.pipeline.trace_stream`), with the same
    verdicts as the whole-trace checks above.

    A block is every row recorded since the last one, in recording order, with a horizon: no
    row recorded later starts before it (``trace_horizon_us`` for intervals,
    ``holds_horizon_us`` for critical sections), and every frame before ``complete_frames``
    has all its rows in.  Kept between blocks: the busy intervals and critical sections that
    end after the horizon (only they can overlap a later one), the busy time traced by the
    frames not complete yet, and their charged CPU time; nothing grows with the run.

    ``threads``, ``locks`` name the stores' codes (:class:`~simsrv.machine.trace.Names`,
    shared with the machine's stores); ``slowest_speed`` as in :func:`check_trace`.
    """

    def __init__(self, threads: list, locks: list, slowest_speed: float) -> None:
        self.threads, self.locks, self.speed = threads, locks, slowest_speed
        self._busy = empty((0, 3), np.int64)  # frame, cpu, thread of busy rows kept
        self._busy_us = empty((0, 2))
        self._pending: list[tuple[np.ndarray, ...]] = []  # blocks since the last horizon
        self._last_start_s = np.zeros(0)  # per CPU: the latest busy row's start ...
        self._last_end_s = np.zeros(0)  # ... and the latest end, s
        self._holds = empty((0, 3), np.int64)
        self._holds_us = empty((0, 2))
        self._first_open = 0  # frames before it are checked and forgotten
        self._traced_us = np.zeros(0)  # busy time of frames _first_open.., us
        self._rounding_us = np.zeros(0)  # one ulp of each busy row's end, summed per frame, us
        self._charged_us: list[float] = []  # charged CPU time of frames _first_open.., us
        self._last_frame = -1  # the largest frame of any row

    def add(
        self,
        ints: np.ndarray,
        times_us: np.ndarray,
        busy: np.ndarray,
        holds_ints: np.ndarray,
        holds_us: np.ndarray,
        charged_us: list[float],
        by_machine: np.ndarray | None = None,
    ) -> None:
        """A block: trace rows (``ints`` frame, cpu, thread code, activity code; ``times_us``;
        ``busy`` per row), lock-hold rows and the CPU time charged by the frames executed
        since the last block (in execution order).  ``by_machine`` (per row, optional): busy
        rows the machine charges itself (a thread library's signals, a spinlock's spin), which
        hold a CPU but are not part of any plan's cost."""
        self._charged_us += charged_us
        if len(ints):
            self._last_frame = max(self._last_frame, int(ints[:, 0].max()))
            if not self._scan(ints, times_us, busy):
                self._check_exactly(ints, times_us, busy)
            if by_machine is not None and by_machine.any():
                rows = by_machine & busy
                self._add_traced(ints[rows, 0], times_us[rows, 0] - times_us[rows, 1], 0.0)
        self._holds = np.concatenate([self._holds, holds_ints])
        self._holds_us = np.concatenate([self._holds_us, holds_us])
        check_lock_rows(self._holds, self._holds_us, self.locks, self.threads)

    def _scan(self, ints: np.ndarray, times_us: np.ndarray, busy: np.ndarray) -> bool:
        """The compiled pass (:func:`simsrv.machine.invariant_kernels.scan_busy_rows`): True when
        the block's busy rows are listed in order per CPU after the earlier ones (their busy
        time then added to their frames); False: not known."""
        cpus = int(ints[:, 1].max()) + 1
        if cpus > len(self._last_start_s):
            grow = np.full(cpus - len(self._last_start_s), -np.inf)
            self._last_start_s = np.concatenate([self._last_start_s, grow])
            self._last_end_s = np.concatenate([self._last_end_s, grow])
        traced = np.zeros(max(self._last_frame - self._first_open + 1, 0))
        rounding = np.zeros(len(traced))
        kernels = _kernels()
        code, _ = kernels.scan_busy_rows(
            ints, times_us, busy, US, self._last_start_s, self._last_end_s, self._first_open,
            traced, rounding,
        )  # fmt: skip
        if code == kernels.NOT_KNOWN:
            return False
        if code == kernels.EARLY_FRAME:
            self._raise_early(ints[busy, 0])
        self._grow(len(traced))
        self._traced_us[: len(traced)] += traced
        self._rounding_us[: len(traced)] += rounding
        self._pending.append((ints, times_us, busy))
        return True

    def _check_exactly(self, ints: np.ndarray, times_us: np.ndarray, busy: np.ndarray) -> None:
        """The block's busy rows sorted with the kept ones and checked (the rows out of order
        per CPU, or on no CPU)."""
        self._keep_pending(-np.inf)
        b = np.flatnonzero(busy)
        kept = len(self._busy)
        new = np.concatenate([self._busy, ints[b, :3]])
        new_us = np.concatenate([self._busy_us, times_us[b]])
        self._busy, self._busy_us = new, new_us
        frame, cpu, thread = new[:, 0], new[:, 1], new[:, 2]
        start_s, end_s = new_us[:, 0] * US, new_us[:, 1] * US  # as the whole-trace check:
        # a frame's start is its seconds times 1e6, which may fall an ulp before the previous
        # frame's last end in us; in seconds they compare equal
        names = self.threads
        rows = np.arange(len(frame))
        check_cpus(frame, cpu, start_s, end_s, rows, lambda r: names[thread[r]])
        on_cpu = cpu >= 0  # the latest start and end per CPU, for the next compiled pass
        np.maximum.at(self._last_start_s, cpu[on_cpu], start_s[on_cpu])
        np.maximum.at(self._last_end_s, cpu[on_cpu], end_s[on_cpu])
        self._add_traced(frame[kept:], new_us[kept:, 1] - new_us[kept:, 0], new_us[kept:, 1])

    def _keep_pending(self, horizon_us: float) -> None:
        """The busy rows of the blocks scanned since the last horizon that end after
        ``horizon_us`` join the kept ones."""
        for ints, times_us, busy in self._pending:
            b = np.flatnonzero(busy & (times_us[:, 1] > horizon_us))
            self._busy = np.concatenate([self._busy, ints[b, :3]])
            self._busy_us = np.concatenate([self._busy_us, times_us[b]])
        self._pending.clear()

    def _raise_early(self, frame: np.ndarray) -> None:
        raise InvariantViolation(
            "costs_accounted",
            int(frame.min()),
            "trace rows of a frame recorded after it was complete",
        )

    def _add_traced(
        self, frame: np.ndarray, length_us: np.ndarray, end_us: np.ndarray | float
    ) -> None:
        """Busy time of new rows added to their frames' sums, and one ulp of their ends
        (``end_us``; 0.0: rows whose ends are already counted)."""
        if len(frame) == 0:
            return
        index = frame - self._first_open
        if index.min() < 0:
            self._raise_early(frame)
        self._grow(int(index.max()) + 1)
        size = len(self._traced_us)
        self._traced_us += np.bincount(index, weights=length_us, minlength=size)
        if not np.isscalar(end_us):
            ulps = np.spacing(np.abs(end_us))
            self._rounding_us += np.bincount(index, weights=ulps, minlength=size)

    def _grow(self, frames: int) -> None:
        if frames > len(self._traced_us):
            more = np.zeros(frames - len(self._traced_us))
            self._traced_us = np.concatenate([self._traced_us, more])
            self._rounding_us = np.concatenate([self._rounding_us, more])

    def advance(
        self, trace_horizon_us: float, holds_horizon_us: float, complete_frames: int
    ) -> None:
        """Check the frames now complete and forget what no later block can contradict (see
        the class docstring)."""
        keep = self._busy_us[:, 1] > trace_horizon_us
        self._busy, self._busy_us = self._busy[keep], self._busy_us[keep]
        self._keep_pending(trace_horizon_us)
        keep = self._holds_us[:, 1] > holds_horizon_us
        self._holds, self._holds_us = self._holds[keep], self._holds_us[keep]
        done = min(complete_frames - self._first_open, len(self._charged_us))
        if done <= 0:
            return
        self._grow(done)
        charged_s = np.array(self._charged_us[:done]) * US
        traced_s = self._traced_us[:done] * US
        rounding_s = self._rounding_us[:done] * US
        check_costs(traced_s, charged_s, self.speed, self._first_open, rounding_s)
        self._traced_us = self._traced_us[done:]
        self._rounding_us = self._rounding_us[done:]
        del self._charged_us[:done]
        self._first_open += done

    def finish(self) -> None:
        """After the last block (the trace complete): every frame's costs checked, and no row
        of a frame that was never planned."""
        planned = self._first_open + len(self._charged_us)
        if self._last_frame >= planned:
            raise InvariantViolation(
                "costs_accounted", self._last_frame, "trace rows of a frame that was never planned"
            )
        self.advance(np.inf, np.inf, planned)


def _first_overlap(
    order: np.ndarray, owner: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[int, int] | None:
    """The first two intervals of one owner (a CPU, a lock) that overlap: ``order`` sorts the
    intervals by owner, then start; returns their indices, or None when none overlap."""
    same = owner[order[1:]] == owner[order[:-1]]
    overlap = same & (start[order[1:]] < end[order[:-1]])
    if not overlap.any():
        return None
    i = int(np.flatnonzero(overlap)[0])
    return int(order[i]), int(order[i + 1])
