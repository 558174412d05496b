"""Invariants checked at the end of every run: cheap facts that must always hold.

=======================  ====================================================================
``message_conservation`` every packet sent is lost, in flight, dropped, processed or queued
                         (the end-of-run accounting balances), and the processed packets are
                         the packets the frames read
``entity_partition``     every active entity of a frame is in exactly one group and every
                         group on exactly one worker (strategies that partition entities:
                         ``bsp-group``; trivially true for the others)
``cpu_exclusive``        no CPU runs two busy intervals at once (waits do not hold a CPU)
``lock_exclusive``       the critical sections of a lock never overlap
``costs_accounted``      every frame's trace holds exactly the CPU time its plan charged
                         (``Compute`` costs; with SMT, between the cost and the cost divided
                         by the SMT throughput)
=======================  ====================================================================

A violation raises :class:`InvariantViolation`: one line naming the invariant, the frame and
the entities involved (threads, packets, entities or the lock).  ``simsrv`` prints it and exits
with status 3.  The checks are vectorised over the trace (numpy); their cost is measured in
``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from simsrv.errors import InvariantViolation  # noqa: F401  (raised here, re-exported)

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


class PartitionLog:
    """``entity_partition`` for a strategy that groups entities and assigns groups to workers:
    :meth:`add` keeps each frame's arrays (no work per frame), :meth:`check` checks every frame
    at once at the end of the run (vectorised: a few microseconds a frame)."""

    CHECK_EVERY = 1 << 20  # entities kept before checking early (bounds the memory)

    def __init__(self) -> None:
        self._frames: list[tuple] = []
        self._kept = 0

    def add(
        self,
        frame: int,
        senders: np.ndarray,
        entities: np.ndarray,
        entity_group: np.ndarray,
        sizes: np.ndarray,
        assignment: np.ndarray,
        workers: int,
    ) -> None:
        """Frame ``frame``: its packets' ``senders`` (every one must be an active entity), its
        active ``entities`` (each once), the group of each (``entity_group``), the groups'
        ``sizes`` and the worker of each group (``assignment``, in ``0..workers - 1``)."""
        self._frames.append((frame, senders, entities, entity_group, sizes, assignment, workers))
        self._kept += len(entities) + len(senders)
        if self._kept > self.CHECK_EVERY:
            self.check()

    def check(self) -> None:
        """Raise :class:`InvariantViolation` naming the first bad frame and entities."""
        if not self._frames:
            return
        frame_ids, senders, entities, entity_group, sizes, assignment, workers = zip(
            *self._frames, strict=True
        )
        self._frames.clear()
        self._kept = 0
        frame_ids = np.asarray(frame_ids, dtype=np.int64)
        n_entities = np.fromiter(map(len, entities), np.int64, len(entities))
        n_senders = np.fromiter(map(len, senders), np.int64, len(senders))
        all_entities = np.concatenate(entities).astype(np.int64)
        all_senders = np.concatenate(senders).astype(np.int64)
        # keys (frame position, entity): one entity of one frame
        span = 1 + max(all_entities.max(initial=0), all_senders.max(initial=0))
        at = np.repeat(np.arange(len(entities)), n_entities)
        keys = at * span + all_entities
        if len(keys) > 1 and not (np.diff(keys) > 0).all():
            i = int(np.flatnonzero(np.diff(keys) <= 0)[0]) + 1
            raise InvariantViolation(
                "entity_partition",
                int(frame_ids[at[i]]),
                f"entity {keys[i] % span} is listed twice (in more than one group)",
            )
        sender_keys = np.repeat(np.arange(len(senders)), n_senders) * span + all_senders
        found = np.searchsorted(keys, sender_keys)
        missing = (found >= len(keys)) | (keys[np.minimum(found, len(keys) - 1)] != sender_keys)
        if missing.any():
            key = int(sender_keys[np.flatnonzero(missing)[0]])
            raise InvariantViolation(
                "entity_partition",
                int(frame_ids[key // span]),
                f"entity {key % span} sent a packet but is in no group",
            )
        n_groups = np.fromiter(map(len, sizes), np.int64, len(sizes))
        offsets = np.concatenate([[0], np.cumsum(n_groups)[:-1]])
        groups = np.concatenate(entity_group).astype(np.int64)
        if len(groups) != len(keys) or (
            len(groups) and ((groups < 0) | (groups >= np.repeat(n_groups, n_entities))).any()
        ):
            raise InvariantViolation(
                "entity_partition", None, "an entity has no group or a group that does not exist"
            )
        counted = np.bincount(groups + np.repeat(offsets, n_entities), minlength=n_groups.sum())
        all_sizes = np.concatenate(sizes)
        if not np.array_equal(counted, all_sizes):
            g = int(np.flatnonzero(counted != all_sizes)[0])
            f = int(np.searchsorted(offsets, g, side="right")) - 1
            raise InvariantViolation(
                "entity_partition",
                int(frame_ids[f]),
                f"group {g - offsets[f]} holds {counted[g]} entities but is sized {all_sizes[g]}",
            )
        assigned = np.concatenate(assignment).astype(np.int64)
        limit = np.repeat(np.asarray(workers), n_groups)
        bad = (np.fromiter(map(len, assignment), np.int64, len(sizes)) != n_groups).any() or (
            len(assigned) and ((assigned < 0) | (assigned >= limit)).any()
        )
        if bad:
            raise InvariantViolation(
                "entity_partition", None, "a group is on no worker or on one that does not exist"
            )


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
    order = b[np.lexsort((start_s[b], cpu[b]))]
    same_cpu = cpu[order[1:]] == cpu[order[:-1]]
    overlap = same_cpu & (start_s[order[1:]] < end_s[order[:-1]])
    if overlap.any():
        i = int(np.flatnonzero(overlap)[0])
        first, second = int(order[i]), int(order[i + 1])
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


def check_locks(holds: Sequence[tuple]) -> None:
    """``lock_exclusive``: per lock, its critical sections ``(lock, frame, thread, start_us,
    end_us)`` do not overlap (vectorised: the locks are numbered, then sorted by start)."""
    if len(holds) < 2:
        return
    locks, frames, threads, starts, ends = zip(*holds, strict=True)
    codes = pd.factorize(pd.Series(locks, dtype=object))[0]
    start, end = np.array(starts, dtype=float), np.array(ends, dtype=float)
    order = np.lexsort((end, start, codes))
    same = codes[order[1:]] == codes[order[:-1]]
    overlap = same & (start[order[1:]] < end[order[:-1]])
    if overlap.any():
        i = int(np.flatnonzero(overlap)[0])
        first, second = int(order[i]), int(order[i + 1])
        raise InvariantViolation(
            "lock_exclusive",
            frames[second],
            f"lock {locks[first]!r} held by thread {threads[first]} (frame {frames[first]}) "
            f"until {ends[first]:.3f} us and taken by thread {threads[second]} at "
            f"{starts[second]:.3f} us",
        )
