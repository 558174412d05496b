"""Invariants checked at the end of every run: cheap facts that must always hold.

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
with status 3.  The trace checks are vectorised (numpy) at the end of the run, the partition
checks compiled per frame; their cost is measured in ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType

import numpy as np

from simsrv.errors import InvariantViolation  # noqa: F401  (raised here, re-exported)
from simsrv.machine.trace import LockHolds

CHECKS = (
    "message_conservation",
    "entity_partition",
    "cpu_exclusive",
    "lock_exclusive",
    "costs_accounted",
)
REL_TOLERANCE = 1e-9  # sums of the same costs added in another order, and us -> s
ABS_TOLERANCE_S = 1e-12


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
    (:mod:`simsrv.invariant_kernels`): well under a microsecond a frame."""
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
    """Raise the ``entity_partition`` violation a kernel of :mod:`simsrv.invariant_kernels`
    returned (``code`` and its three numbers) for ``frame``; nothing when ``code`` is 0 (for
    compiled callers that run the kernel themselves)."""
    if code:
        raise InvariantViolation("entity_partition", frame, _partition_message(code, a, b, c))


@cache
def _kernels() -> ModuleType:
    """The compiled kernels, imported on first use (numba loads in ~0.3 s; runs of strategies
    that check no partition do not pay it)."""
    from simsrv import invariant_kernels

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
) -> None:
    """``cpu_exclusive`` and ``costs_accounted`` on the complete trace (one array entry per
    row, times in s; ``thread_of(row)`` names a row's thread; ``charged_s[f]`` is frame
    ``f``'s charged CPU time; ``slowest_speed`` the SMT throughput, 1 without SMT)."""
    b = np.flatnonzero(busy)
    cpus = int(cpu.max()) + 1 if len(cpu) and cpu.min() >= 0 else 0
    in_order = cpus > 0 and _kernels().listed_in_order_without_overlap(
        b, cpu, start_s, end_s, cpus, False
    )
    pair = (
        None
        if in_order
        else _first_overlap(b[np.lexsort((start_s[b], cpu[b]))], cpu, start_s, end_s)
    )
    if pair is not None:
        first, second = pair
        raise InvariantViolation(
            "cpu_exclusive",
            int(frame[second]),
            f"cpu {cpu[first]} runs thread {thread_of(first)} (frame {frame[first]}, until "
            f"{end_s[first]:.9f} s) and thread {thread_of(second)} (from {start_s[second]:.9f} "
            f"s) at once",
        )
    frames = len(charged_s)
    if len(frame) and frame.max() >= frames:
        raise InvariantViolation(
            "costs_accounted", int(frame.max()), "trace rows of a frame that was never planned"
        )
    traced = np.bincount(frame[b], weights=end_s[b] - start_s[b], minlength=frames)
    slack = REL_TOLERANCE * charged_s + ABS_TOLERANCE_S
    low = traced < charged_s - slack
    high = traced > charged_s / slowest_speed + slack
    if (low | high).any():
        f = int(np.flatnonzero(low | high)[0])
        raise InvariantViolation(
            "costs_accounted",
            f,
            f"the plan charged {charged_s[f] * 1e6:.6f} us of CPU time but the trace holds "
            f"{traced[f] * 1e6:.6f} us",
        )


def check_locks(holds: LockHolds | Sequence[tuple]) -> None:
    """``lock_exclusive``: per lock, its critical sections ``(lock, frame, thread, start_us,
    end_us)`` do not overlap (vectorised: sorted by lock code, then start)."""
    if not isinstance(holds, LockHolds):
        holds = LockHolds.from_rows(list(holds))
    if len(holds) < 2:
        return
    ints, times = holds.columns()
    codes, start, end = ints[:, 0], times[:, 0], times[:, 1]
    rows = np.arange(len(codes))
    locks = int(codes.max()) + 1  # codes are >= 0 (interned names)
    if _kernels().listed_in_order_without_overlap(rows, codes, start, end, locks, True):
        return
    pair = _first_overlap(np.lexsort((end, start, codes)), codes, start, end)
    if pair is not None:
        (lock, frame, thread, _, until), (_, second_frame, other, since, _) = map(holds.row, pair)
        raise InvariantViolation(
            "lock_exclusive",
            second_frame,
            f"lock {lock!r} held by thread {thread} (frame {frame}) "
            f"until {until:.3f} us and taken by thread {other} at {since:.3f} us",
        )


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
