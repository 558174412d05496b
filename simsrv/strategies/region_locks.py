"""The areanode locks of one AB04 request: which nodes, and how many the walk visits.

[P §3.2] (MODEL.md §3): "for each message consumed by a thread, the server finds the client
that sent the message, locates the leaf in the Areanode tree that contains this client (based
in its position) and acquires a lock in each node from leaf to root until the region
determined by the current node contains all the entities that can be modified by the execution
of this message."  The lock set of a request is therefore a *path*: the leaf holding the
sender's origin, its parent, and so on up to the first node whose region contains the
request's region (the action-range box, or the mover's own box under the semantic
optimisation).  Two requests whose regions overlap always share a node of their paths, so
they exclude each other; paths are taken bottom-up and released top-down, which cannot
deadlock (two paths of a tree meet in a common upper part, taken in the same order).

``two-nodes`` is the earlier reading kept for the ablation: only the node the sender is linked
to (``SV_LinkEdict``) and the covering node, two locks at most, which does not exclude every
pair of overlapping regions.

Costs [P §3.3: "the lock acquire operation [is] time-consuming, since the Areanode must be
traversed from leaf to root"]: the walk visits ``depth(leaf)`` nodes down from the root to
find the leaf plus the steps up to the covering node (``lock_per_node`` each); each lock costs
``lock_acquire``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
from simsrv.world.areanode import AreanodeTree
from simsrv.world.areanode_kernels import covering_box, link_box, node_depth

LockScope = Literal["leaf-to-root", "two-nodes"]


def path_locks(
    tree: AreanodeTree, origin: np.ndarray, region_min: np.ndarray, region_max: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per sender: the leaf holding its origin and the first node up from it containing its
    region, (N,) int each.  The lock path is every node from the first to the second
    (:func:`path_nodes`)."""
    leaf = tree.link(origin, origin)
    top, _ = tree.covering(leaf, region_min, region_max)
    return leaf, top


def path_nodes(leaf: int, top: int) -> tuple[int, ...]:
    """The nodes from ``leaf`` up to ``top`` (an ancestor of ``leaf`` or itself), bottom-up."""
    nodes = [leaf]
    while nodes[-1] != top:
        if nodes[-1] == 0:
            raise ValueError(f"node {top} is not an ancestor of node {leaf}")
        nodes.append((nodes[-1] - 1) // 2)
    return tuple(nodes)


def walked_nodes(start: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Nodes the acquiring walk visits: down from the root to ``start``, then up to ``top``."""
    depth = AreanodeTree.node_depth(start)
    return depth + depth - AreanodeTree.node_depth(top)


@compiled
def lock_tables(axis, dist, lo, hi, depth, origins, mins, maxs, half_range, leaf_to_root):
    """Every player's lock facts at one tick, in one call (the tree's arrays and ``depth``;
    ``origins`` (N, 3+), units; the player box ``mins``, ``maxs``; ``half_range``: half the
    action-range edge, units).  Returns six (N,) int64 arrays: where the lock walk of the
    action range starts, the node covering the range, the nodes the walk visits
    (:func:`walked_nodes`); the same for the player's own box (the region of a packet that
    can only modify its mover).

    ``leaf_to_root``: the walks start at the leaf holding the origin (:func:`path_locks`);
    both regions' walks start there.  Otherwise (``two-nodes``) both start at the node the
    player's box is linked to, which is its own box's covering node.  The integers are those
    of the numpy methods of :class:`AreanodeTree`."""
    n = len(origins)
    start, scope, walked = empty(n, np.int64), empty(n, np.int64), empty(n, np.int64)
    own_start, own, own_walked = (
        empty(n, np.int64),
        empty(n, np.int64),
        empty(n, np.int64),
    )
    for i in range(n):
        x, y = origins[i, 0], origins[i, 1]
        bx0, by0, bx1, by1 = x + mins[0], y + mins[1], x + maxs[0], y + maxs[1]
        rx0, ry0, rx1, ry1 = x - half_range, y - half_range, x + half_range, y + half_range
        if leaf_to_root:
            first = link_box(axis, dist, depth, x, y, x, y)
            mine = covering_box(lo, hi, depth, first, bx0, by0, bx1, by1)[0]
        else:
            first = mine = link_box(axis, dist, depth, bx0, by0, bx1, by1)
        top = covering_box(lo, hi, depth, first, rx0, ry0, rx1, ry1)[0]
        below = node_depth(first)
        start[i], scope[i], walked[i] = first, top, below + below - node_depth(top)
        own_start[i], own[i], own_walked[i] = first, mine, below + below - node_depth(mine)
    return start, scope, walked, own_start, own, own_walked
