"""Balancers: assign weighted jobs (groups) to processors.

Each balancer is a function ``(weights, initial_loads, groups=None) -> assignment`` registered
by name in :data:`BALANCERS`: ``weights`` are the jobs' weights in job order (groups by
smallest entity, or the order the strategy chose), ``initial_loads`` one starting load per
processor, ``groups`` the frame's :class:`~simsrv.strategies.grouping.groups.FrameGroups` (its
interaction graph, for graph-aware balancers; the others ignore it), and the result gives each
job's processor.  Ties go to the lowest-numbered processor, so every balancer
is deterministic.

``lpt``
    Longest Processing Time first, exactly as [T §3.3.2]: jobs sorted by decreasing weight
    (stable, so equal weights keep job order), each to the least-loaded processor.  Within
    ``4/3 - 1/(3m)`` of the optimal makespan on ``m`` identical processors from zero loads.
``list``
    Graham's list scheduling: jobs in the given order, each to the least-loaded processor
    (within ``2 - 1/m``).
``round-robin``
    Job ``j`` to processor ``j mod m``, ignoring weights.
``largest-differencing``
    Karmarkar-Karp's largest differencing method for ``m`` processors: repeatedly merge the two
    partial partitions with the largest spread, pairing the heaviest subset of one with the
    lightest of the other.  Initial loads are taken as pre-placed jobs of those weights.
``graph-partition``
    Recursive Kernighan-Lin bisection of the frame's interaction graph
    (:mod:`simsrv.strategies.grouping.graph_partition`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.registry import Registry
from simsrv.core.uninitialised import empty

Balancer = Callable[..., np.ndarray]
"""``(weights, initial_loads, groups=None) -> assignment`` (module docstring)."""

BALANCERS: Registry[Balancer] = Registry("balancer")


def _greedy(order: np.ndarray, weights: np.ndarray, initial_loads: Sequence[float]) -> np.ndarray:
    """Jobs in ``order``, each to the least-loaded processor (ties: the lowest-numbered)."""
    loads = np.array(initial_loads, dtype=np.float64)
    if len(loads) == 0 and len(order):
        raise ValueError("no processor to place jobs on")
    return _greedy_kernel(
        np.asarray(order, dtype=np.int64), np.asarray(weights, dtype=np.float64), loads
    )


@compiled
def _greedy_kernel(order, weights, loads):
    """:func:`_greedy` compiled; ``loads`` (the initial loads) is updated in place."""
    assignment = empty(len(weights), np.int64)
    for job in order:
        best = 0
        for p in range(1, len(loads)):
            if loads[p] < loads[best]:
                best = p
        assignment[job] = best
        loads[best] = loads[best] + weights[job]
    return assignment


def lpt(weights: np.ndarray, initial_loads: Sequence[float], groups: object = None) -> np.ndarray:
    """Longest processing time first (see the module docstring)."""
    return _greedy(np.argsort(-np.asarray(weights), kind="stable"), weights, initial_loads)


def list_scheduling(
    weights: np.ndarray, initial_loads: Sequence[float], groups: object = None
) -> np.ndarray:
    """Graham's list scheduling in job order."""
    return _greedy(np.arange(len(weights)), weights, initial_loads)


def round_robin(
    weights: np.ndarray, initial_loads: Sequence[float], groups: object = None
) -> np.ndarray:
    """Job ``j`` to processor ``j mod m``."""
    return np.arange(len(weights), dtype=np.int64) % len(initial_loads)


def largest_differencing(
    weights: np.ndarray, initial_loads: Sequence[float], groups: object = None
) -> np.ndarray:
    """Karmarkar-Karp largest differencing for ``m`` processors."""
    m = len(initial_loads)
    # a partial partition: m subsets as (sum, jobs); jobs -1 stand for the initial loads
    entries: list[tuple[float, int, list[tuple[float, list[int]]]]] = []
    for p, load in enumerate(initial_loads):
        if load:
            subsets = [(float(load), [-1 - p])] + [(0.0, []) for _ in range(m - 1)]
            entries.append((-float(load), len(entries), subsets))
    for job, w in enumerate(np.asarray(weights, dtype=float).tolist()):
        subsets = [(w, [job])] + [(0.0, []) for _ in range(m - 1)]
        entries.append((-w, len(entries), subsets))
    if not entries:
        return np.zeros(0, dtype=np.int64)
    heapq.heapify(entries)
    counter = len(entries)
    while len(entries) > 1:
        _, _, a = heapq.heappop(entries)
        _, _, b = heapq.heappop(entries)
        a = sorted(a, key=lambda s: -s[0])
        b = sorted(b, key=lambda s: s[0])
        merged = [(sa + sb, ja + jb) for (sa, ja), (sb, jb) in zip(a, b, strict=True)]
        spread = max(s for s, _ in merged) - min(s for s, _ in merged)
        heapq.heappush(entries, (-spread, counter, merged))
        counter += 1
    subsets = entries[0][2]
    # processors that had an initial load keep the subset holding it; others fill in order
    owner: dict[int, int] = {}
    free = [p for p in range(m)]
    for index, (_, jobs) in enumerate(subsets):
        pinned = [-1 - j for j in jobs if j < 0]
        if pinned:
            owner[index] = pinned[0]
            free.remove(pinned[0])
    for index in range(len(subsets)):
        if index not in owner:
            owner[index] = free.pop(0)
    assignment = empty(len(weights), dtype=np.int64)
    for index, (_, jobs) in enumerate(subsets):
        for j in jobs:
            if j >= 0:
                assignment[j] = owner[index]
    return assignment


def makespan(weights: np.ndarray, assignment: np.ndarray, initial_loads: Sequence[float]) -> float:
    """Largest processor load after the assignment."""
    loads = np.array(initial_loads, dtype=np.float64)
    if len(loads) == 0:
        return 0.0
    return _makespan_kernel(
        np.asarray(weights, dtype=np.float64), np.asarray(assignment, dtype=np.int64), loads
    )


@compiled
def _makespan_kernel(weights, assignment, loads):
    """:func:`makespan`: the weights added to ``loads`` in job order (as ``np.add.at``)."""
    for job in range(len(assignment)):
        loads[assignment[job]] += weights[job]
    return loads.max()


BALANCERS.register("lpt", lpt)
BALANCERS.register("list", list_scheduling)
BALANCERS.register("round-robin", round_robin)
BALANCERS.register("largest-differencing", largest_differencing)
