"""Compiled kernels of the invariants (:mod:`simsrv.machine.invariants`): the per-frame ones of
``entity_partition``, and the end-of-run interval scan of ``cpu_exclusive`` and
``lock_exclusive`` (:func:`listed_in_order_without_overlap`).

Compiled with :func:`simsrv.core.compiled.compiled` (numba, cached on disk): the first process after
an install compiles them (about a second), later processes load the cache.  Each kernel
returns ``(code, a, b, c)``: ``code`` 0 when the frame is sound, else which rule broke, with
the entity, group or packet and the counts involved; :mod:`simsrv.machine.invariants` turns that
into the one-line message.  A frame costs well under a microsecond plus a few nanoseconds an
entity.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled

OK = 0
LISTED_TWICE = 1  # a: entity
SENDER_IN_NO_GROUP = 2  # a: entity
BAD_GROUP = 3  # an entity has no group or one that does not exist
WRONG_SIZE = 4  # a: group, b: entities counted, c: size
BAD_WORKER = 5  # a group is on no worker or on one that does not exist
PACKET_ON_BAD_WORKER = 6  # a: packet, b: its worker


@compiled
def partition_kernel(senders, entities, entity_group, sizes, assignment, workers):
    """Entities sorted and unique, every sender an entity, every entity in one existing group,
    groups sized as their entities, every group on one existing worker."""
    n = entities.shape[0]
    for i in range(1, n):
        if entities[i] <= entities[i - 1]:
            return LISTED_TWICE, entities[i], 0, 0
    groups = sizes.shape[0]
    if entity_group.shape[0] != n:
        return BAD_GROUP, 0, 0, 0
    counted = np.zeros(groups, np.int64)
    for i in range(n):
        g = entity_group[i]
        if g < 0 or g >= groups:
            return BAD_GROUP, 0, 0, 0
        counted[g] += 1
    for s in range(senders.shape[0]):
        j = np.searchsorted(entities, senders[s])
        if j >= n or entities[j] != senders[s]:
            return SENDER_IN_NO_GROUP, senders[s], 0, 0
    for g in range(groups):
        if counted[g] != sizes[g]:
            return WRONG_SIZE, g, counted[g], sizes[g]
    if assignment.shape[0] != groups:
        return BAD_WORKER, 0, 0, 0
    for g in range(groups):
        if assignment[g] < 0 or assignment[g] >= workers:
            return BAD_WORKER, 0, 0, 0
    return OK, 0, 0, 0


@compiled
def packet_workers_kernel(worker, workers):
    """Every packet on one existing worker."""
    for p in range(worker.shape[0]):
        if worker[p] < 0 or worker[p] >= workers:
            return PACKET_ON_BAD_WORKER, p, worker[p], 0
    return OK, 0, 0, 0


@compiled
def listed_in_order_without_overlap(rows, owner, start, end, owners, by_end):
    """Whether the intervals ``rows`` (indices into ``owner``, ``start``, ``end``) are listed,
    per owner (a CPU, a lock; ``owners`` of them), in the order of their start (then of their
    end, with ``by_end``), and none starts before the previous one of its owner ends.  Then
    sorting them by owner and start (and end), as the exact check does, keeps each owner's
    order, and that check finds no overlap either.  False: not known, sort and check (the
    machine records mostly in time order, so the sort is rarely needed)."""
    last_start = np.full(owners, -np.inf)
    last_end = np.full(owners, -np.inf)
    for r in rows:
        o, s, e = owner[r], start[r], end[r]
        if s < last_start[o] or (by_end and s == last_start[o] and e < last_end[o]):
            return False  # out of order
        if s < last_end[o]:
            return False  # an overlap: the exact check reports it
        last_start[o], last_end[o] = s, e
    return True


NOT_KNOWN = 1  # the rows are not listed in order per CPU: the exact check decides
EARLY_FRAME = 2  # a: a busy row of a frame already complete


@compiled
def scan_busy_rows(ints, times_us, busy, to_s, last_start, last_end, first_open, traced,
                   rounding):  # fmt: skip
    """One pass over a block of trace rows (``ints`` frame, cpu, thread, activity;
    ``times_us``), for ``cpu_exclusive`` and ``costs_accounted`` as the run goes.

    The busy rows must be listed, per CPU, in the order of their start (in seconds:
    ``times_us * to_s``), none starting before the previous one of its CPU ends, the previous
    ones being those of earlier blocks (``last_start``, ``last_end``: per CPU, s); else
    :data:`NOT_KNOWN` (nothing changed).  Then each busy row's length (us) is added to
    ``traced[frame - first_open]`` in row order, and the spacing of doubles at its end (one
    ulp, us) to ``rounding[frame - first_open]`` (:data:`EARLY_FRAME` with the row when its
    frame is before ``first_open``), and the per-CPU state is advanced.  Returns ``(code,
    row)``."""
    cpus = last_start.shape[0]
    starts = last_start.copy()
    ends = last_end.copy()
    for r in range(ints.shape[0]):
        if not busy[r]:
            continue
        c = ints[r, 1]
        if c < 0 or c >= cpus:
            return NOT_KNOWN, r
        s, e = times_us[r, 0] * to_s, times_us[r, 1] * to_s
        if s < starts[c] or s < ends[c]:
            return NOT_KNOWN, r
        starts[c], ends[c] = s, e
    for r in range(ints.shape[0]):
        if busy[r]:
            f = ints[r, 0] - first_open
            if f < 0:
                return EARLY_FRAME, r
            traced[f] += times_us[r, 1] - times_us[r, 0]
            rounding[f] += np.spacing(times_us[r, 1])
    last_start[:] = starts
    last_end[:] = ends
    return OK, 0
