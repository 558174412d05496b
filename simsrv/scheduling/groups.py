"""Groups of interacting entities in one frame [P §4, T §3.2.3].

For every packet of the frame, its client ``a`` and the entities of ``a``'s action-range list
``L_a`` (at the tick the packet was sent) are vertices of a graph ``G`` with an edge ``a - b``
for each ``b`` in ``L_a``.  Groups are the connected components of ``G``: an event of one group
can only change entities of the same group, so groups run in parallel without locks.  A job is
one group; its weight is its number of entities.

Groups are numbered by their smallest entity id, so the numbering is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

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
    """

    entities: np.ndarray
    entity_group: np.ndarray
    message_group: np.ndarray
    sizes: np.ndarray
    edges: int

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
    for tick in np.unique(ticks).tolist():
        senders = clients[ticks == tick]
        indptr, indices = neighbours_at(tick)
        which, in_range = select_rows(indptr, indices, senders)  # every L_a, sender by sender
        if len(which):
            sources.append(senders[which].astype(np.int64))
            targets.append(in_range.astype(np.int64))
    source, target = np.concatenate(sources), np.concatenate(targets)
    edges = len(source) - len(clients)
    entities, compact = np.unique(np.concatenate([source, target]), return_inverse=True)
    k = len(entities)
    graph = coo_matrix(
        (np.ones(len(source), dtype=np.int8), (compact[: len(source)], compact[len(source) :])),
        shape=(k, k),
    )
    _, labels = connected_components(graph, directed=False)
    # renumber groups by their smallest entity (entities are ascending: first occurrence)
    _, first = np.unique(labels, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    entity_group = rank[labels]
    sizes = np.bincount(entity_group, minlength=len(first))
    message_group = entity_group[np.searchsorted(entities, clients)]
    return FrameGroups(entities, entity_group, message_group, sizes, edges)
