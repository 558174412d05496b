"""The per-tick player tables of ``area-quadrant``, in one compiled call.

:meth:`simsrv.strategies.area_quadrant.AreaQuadrant._player_areas` gives, for every player
at one tick, the stage-2 step and thread of its packets (the
:func:`~simsrv.strategies.area_quadrant.request_schedule` of the node its box is linked to)
and the areas its action range meets.  :func:`area_tables` computes them box by box with the
compiled tree walks of :mod:`simsrv.world.areanode_kernels`: the same integers as the numpy
composition (``AreanodeTree.link``, ``request_schedule``, ``AreanodeTree.overlaps``,
``np.packbits``), which the tests keep as the reference.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.uninitialised import empty
from simsrv.world.areanode_kernels import link_box, node_depth, overlaps_box

STAGE2_CODES = {"basic": 0, "optimized": 1, "sequential": 2}
"""``stage2`` option -> the code :func:`area_tables` takes."""


@borrowing
def schedule_of(own, threads, stage2, area_depth):
    """``(step, thread)`` of a packet whose sender is linked to node ``own``: one element of
    :func:`~simsrv.strategies.area_quadrant.request_schedule` (``stage2`` coded as in
    :data:`STAGE2_CODES`; ``area_depth``: the depth of the areas)."""
    if threads == 1 or stage2 == 2:
        return 0, 0
    depth = node_depth(own)
    first = (1 << area_depth) - 1  # the first area
    if stage2 == 0:  # basic: the areas, then the boundary queue on thread 0
        if depth < area_depth:
            return 1, 0
        return 0, (((own + 1) >> (depth - area_depth)) - 1 - first) % threads
    level = min(depth, area_depth)  # optimized: the areas, then one step per level above
    node = ((own + 1) >> (depth - level)) - 1
    return area_depth - level, (node - ((1 << level) - 1)) % threads


@compiled
def area_tables(
    axis, dist, lo, hi, depth, origins, mins, maxs, half_range, areas, threads, stage2,
    area_depth,
):  # fmt: skip
    """Every player's area facts at one tick (the tree's arrays and ``depth``; ``origins``
    (N, 3+), units; the player box ``mins``, ``maxs``; ``half_range``: half the action-range
    edge, units; ``areas``: the area nodes; ``threads``; ``stage2`` (:data:`STAGE2_CODES`);
    ``area_depth``).  Returns the step and the thread of its packets, (N,) int64 each; the
    areas its action range meets as packed bits, (N, ceil(areas / 8)) uint8 (area ``j``: bit
    ``7 - j % 8`` of byte ``j // 8``, as ``np.packbits``); and how many they are, (N,) int64."""
    n, k = len(origins), len(areas)
    step, thread = empty(n, np.int64), empty(n, np.int64)
    packed = np.zeros((n, (k + 7) // 8), np.uint8)
    held = np.zeros(n, np.int64)
    for i in range(n):
        x, y = origins[i, 0], origins[i, 1]
        own = link_box(axis, dist, depth, x + mins[0], y + mins[1], x + maxs[0], y + maxs[1])
        step[i], thread[i] = schedule_of(own, threads, stage2, area_depth)
        x0, y0, x1, y1 = x - half_range, y - half_range, x + half_range, y + half_range
        for j in range(k):
            if overlaps_box(lo, hi, areas[j], x0, y0, x1, y1):
                packed[i, j >> 3] |= np.uint8(1 << (7 - (j & 7)))
                held[i] += 1
    return step, thread, packed, held
