"""Compiled per-box walks of the areanode tree (:mod:`simsrv.world.areanode`), one box at a time.

The same answers as :class:`~simsrv.world.areanode.AreanodeTree`'s vectorised numpy methods
(which stay the reference; the tests compare the two), for compiled loops that handle a few
hundred boxes per call, where numpy's per-call overhead dominated: a box is given by its
corners ``(x0, y0)``-``(x1, y1)``, units; the tree by its arrays (``axis``, ``dist``, ``lo``,
``hi``) and ``depth``.  Every comparison is the numpy method's, on the same float64 values, so
the results are the same integers.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.uninitialised import empty


@borrowing
def node_depth(node):
    """Depth of ``node`` (root 0): ``floor(log2(node + 1))``, by bit length."""
    depth, up = 0, (node + 1) >> 1
    while up:
        depth += 1
        up >>= 1
    return depth


@borrowing
def link_box(axis, dist, depth, x0, y0, x1, y1):
    """The node ``SV_LinkEdict`` links the box to (:meth:`AreanodeTree.link`): down from the
    root, to the child above the split when the box is entirely above it, below when entirely
    below, stopping at a leaf or a node whose split the box straddles (at most ``depth``
    steps)."""
    node = 0
    for _ in range(depth):
        a = axis[node]
        if a < 0:
            break
        d = dist[node]
        low, high = (x0, x1) if a == 0 else (y0, y1)
        if low > d:
            node = 2 * node + 1
        elif high < d:
            node = 2 * node + 2
        else:
            break
    return node


@borrowing
def contains_box(lo, hi, node, x0, y0, x1, y1):
    """Whether ``node``'s region contains the whole box, boundaries included
    (:meth:`AreanodeTree.contains`)."""
    return lo[node, 0] <= x0 and lo[node, 1] <= y0 and x1 <= hi[node, 0] and y1 <= hi[node, 1]


@borrowing
def overlaps_box(lo, hi, node, x0, y0, x1, y1):
    """Whether the box meets ``node``'s region, boundaries included
    (:meth:`AreanodeTree.overlaps`)."""
    return x0 <= hi[node, 0] and y0 <= hi[node, 1] and x1 >= lo[node, 0] and y1 >= lo[node, 1]


@borrowing
def covering_box(lo, hi, depth, start, x0, y0, x1, y1):
    """``(node, steps)``: up from ``start`` to the first node containing the box (the root
    when none smaller does), at most ``depth`` parent steps (:meth:`AreanodeTree.covering`)."""
    node, steps = start, 0
    for _ in range(depth):
        if node <= 0 or contains_box(lo, hi, node, x0, y0, x1, y1):
            break
        node = (node - 1) // 2
        steps += 1
    return node, steps


@compiled
def link_rows(axis, dist, depth, box_min, box_max):
    """:func:`link_box` of every row's box (``box_min``, ``box_max``: (N, 2+)), (N,) int64."""
    n = len(box_min)
    node = empty(n, np.int64)
    for i in range(n):
        node[i] = link_box(
            axis, dist, depth, box_min[i, 0], box_min[i, 1], box_max[i, 0], box_max[i, 1]
        )
    return node


@compiled
def covering_rows(lo, hi, depth, start, box_min, box_max):
    """:func:`covering_box` of every row: ``(node, steps)``, (N,) int64 each."""
    n = len(box_min)
    node, steps = empty(n, np.int64), empty(n, np.int64)
    for i in range(n):
        node[i], steps[i] = covering_box(
            lo, hi, depth, start[i], box_min[i, 0], box_min[i, 1], box_max[i, 0], box_max[i, 1]
        )
    return node, steps


@compiled
def overlaps_rows(lo, hi, nodes, box_min, box_max):
    """:func:`overlaps_box` of every row's box and every node of ``nodes``, (N, K) bool."""
    n, k = len(box_min), len(nodes)
    meets = empty((n, k), np.bool_)
    for i in range(n):
        x0, y0, x1, y1 = box_min[i, 0], box_min[i, 1], box_max[i, 0], box_max[i, 1]
        for j in range(k):
            meets[i, j] = overlaps_box(lo, hi, nodes[j], x0, y0, x1, y1)
    return meets
