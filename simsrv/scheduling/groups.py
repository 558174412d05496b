"""Groups of interacting entities in one frame [P §4, T §3.2.3].

For every packet of the frame, its client ``a`` and the entities of ``a``'s action-range list
``L_a`` (at the tick the packet was sent) are vertices of a graph ``G`` with an edge ``a - b``
for each ``b`` in ``L_a``.  Groups are the connected components of ``G``: an event of one group
can only change entities of the same group, so groups run in parallel without locks.  A job is
one group; its weight is its number of entities.

Groups are numbered by their smallest entity id, so the numbering is deterministic.

Components are found by hooking and pointer jumping in numpy (:func:`component_roots`): a
frame's graph has tens to thousands of vertices, where scipy's ``connected_components`` spent
~5x longer building and checking sparse matrices than finding the components (the result is
the same partition; tests check it against networkx).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from simsrv.ragged import select_rows
from simsrv.world.proximity import Neighbours


class FrameGroups(NamedTuple):
    """The connected components of a frame's interaction graph.

    Attributes
    ----------
    entities:
        Vertex entity ids, ascending (active clients and everything in their ``L_a``).
    entity_group:
        Group of each vertex (aligned with ``entities``).
    message_group:
        Group of each packet of the frame (aligned with the frame's messages).
    sizes:
        Entities per group (the job weights), indexed by group.
    edges:
        Directed edges ``a -> b`` examined (sum of ``|L_a|`` over the packets).
    source, target:
        The graph's edges as positions in ``entities`` (``source[i] - target[i]``; the self
        loops of the senders first), for graph-aware balancers and pictures; None when not kept.
    """

    entities: np.ndarray
    entity_group: np.ndarray
    message_group: np.ndarray
    sizes: np.ndarray
    edges: int
    source: np.ndarray | None = None
    target: np.ndarray | None = None

    @property
    def count(self) -> int:
        """Number of groups."""
        return len(self.sizes)


def frame_groups(
    clients: np.ndarray, ticks: np.ndarray, neighbours_at: Callable[[int], Neighbours]
) -> FrameGroups:
    """Groups of the frame whose packets come from ``clients`` sent at ``ticks``.

    ``neighbours_at(tick)`` gives the action-range lists of that tick.
    """
    if len(clients) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return FrameGroups(empty, empty, empty, empty, 0)
    sources, targets = [clients.astype(np.int64)], [clients.astype(np.int64)]  # self loops
    for tick in _distinct(ticks):
        senders = clients[ticks == tick]
        indptr, indices = neighbours_at(tick)
        which, in_range = select_rows(indptr, indices, senders)  # every L_a, sender by sender
        if len(which):
            sources.append(senders[which].astype(np.int64))
            targets.append(in_range.astype(np.int64))
    source, target = np.concatenate(sources), np.concatenate(targets)
    edges = len(source) - len(clients)
    entities, compact = _compact(np.concatenate([source, target]))
    roots = component_roots(compact[: len(source)], compact[len(source) :], len(entities))
    # roots are the smallest vertex of their component and entities ascend: rank the roots
    leaders = np.flatnonzero(roots == np.arange(len(roots)))
    entity_group = np.searchsorted(leaders, roots)
    sizes = np.bincount(entity_group, minlength=len(leaders))
    message_group = entity_group[compact[: len(clients)]]  # the self loops come first
    return FrameGroups(
        entities,
        entity_group,
        message_group,
        sizes,
        edges,
        compact[: len(source)],
        compact[len(source) :],
    )


def _distinct(ticks: np.ndarray) -> list[int]:
    """The distinct ticks, ascending: a frame's packets were sent over a few consecutive client
    ticks, so the range between the first and the last is cheaper than a sort."""
    first, last = int(ticks.min()), int(ticks.max())
    if last - first > 16:
        return np.unique(ticks).tolist()
    present = np.zeros(last - first + 1, dtype=bool)
    present[ticks - first] = True
    return (np.flatnonzero(present) + first).tolist()


def _compact(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` for non-negative ids, by a presence mask
    over ``0 .. max(ids)`` (entity ids are dense: ~4x faster than sorting at a frame's sizes)."""
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    index = np.cumsum(present) - 1
    return np.flatnonzero(present), index[ids]


def component_roots(source: np.ndarray, target: np.ndarray, vertices: int) -> np.ndarray:
    """The smallest vertex of each vertex's connected component, (vertices,) int.

    Undirected edges ``source[i] - target[i]`` over vertices ``0 .. vertices - 1``.  Every
    vertex points to a smaller or equal one (so there are no cycles); each round hooks the
    larger root of every edge whose ends have different roots onto the smaller one, then
    jumps pointers until every vertex points at a root.  Rounds shrink the number of
    components spanning an unresolved edge; the paper and scale scenarios need 2-4 (measured).
    """
    parent = np.arange(vertices)
    while True:
        a, b = parent[source], parent[target]
        differ = a != b
        if not differ.any():
            return parent
        a, b = a[differ], b[differ]
        np.minimum.at(parent, np.maximum(a, b), np.minimum(a, b))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
