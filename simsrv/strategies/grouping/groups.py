"""Groups of interacting entities in one frame [P §4, T §3.2.3].

For every packet of the frame, its client ``a`` and the entities of ``a``'s action-range list
``L_a`` (at the tick the packet was sent) are vertices of a graph ``G`` with an edge ``a - b``
for each ``b`` in ``L_a``.  Groups are the connected components of ``G``: an event of one group
can only change entities of the same group, so groups run in parallel without locks.  A job is
one group; its weight is its number of entities.

Groups are numbered by their smallest entity id, so the numbering is deterministic.

The vertices are numbered densely and the components found in one compiled call
(:func:`components`: union-find whose root is always the smallest vertex): a frame's graph has
tens to thousands of vertices, where numpy's hooking and pointer jumping paid ~15 array
operations a frame and scipy's ``connected_components`` spent ~5x longer building and checking
sparse matrices than finding the components (the result is the same partition; tests check it
against networkx).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
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
        none = np.zeros(0, dtype=np.int64)
        return FrameGroups(none, none, none, none, 0)
    clients = clients.astype(np.int64)
    ticks = ticks.astype(np.int64)
    sources, targets = [], []
    for tick in _distinct(ticks).tolist():
        indptr, indices = neighbours_at(tick)
        source, target = action_lists(clients, ticks, tick, indptr, indices)
        if len(source):
            sources.append(source)
            targets.append(target)
    if len(sources) == 1:
        source, target = sources[0], targets[0]
    elif sources:
        source, target = np.concatenate(sources), np.concatenate(targets)
    else:
        source = target = np.zeros(0, dtype=np.int64)
    entities, entity_group, message_group, sizes, source, target = components(
        clients, source, target
    )
    return FrameGroups(
        entities, entity_group, message_group, sizes, len(target) - len(clients), source, target
    )


@compiled
def _distinct(ticks):
    """The distinct ticks, ascending: a frame's packets were sent over a few consecutive client
    ticks, so a mask over the range between the first and the last is cheaper than a sort."""
    first, last = ticks.min(), ticks.max()
    if last - first > 16:
        return np.unique(ticks)
    present = np.zeros(last - first + 1, np.bool_)
    for tick in ticks:
        present[tick - first] = True
    return np.flatnonzero(present) + first


@compiled
def action_lists(clients, ticks, tick, indptr, indices):
    """The edges ``a - b`` for each ``b`` in ``L_a`` of the packets sent at ``tick`` (``a``:
    their clients, in packet order; ``L_a``: row ``a`` of the CSR lists ``indptr``,
    ``indices``): ``(source, target)``, int64."""
    edges = 0
    for i in range(len(clients)):
        if ticks[i] == tick:
            edges += indptr[clients[i] + 1] - indptr[clients[i]]
    source = empty(edges, np.int64)
    target = empty(edges, np.int64)
    at = 0
    for i in range(len(clients)):
        if ticks[i] == tick:
            a = clients[i]
            for j in range(indptr[a], indptr[a + 1]):
                source[at] = a
                target[at] = indices[j]
                at += 1
    return source, target


@compiled
def components(clients, source, target):
    """The connected components of the graph of self loops ``clients[i] - clients[i]`` and
    edges ``source[i] - target[i]`` (entity ids >= 0, int64): ``(entities, entity_group,
    message_group, sizes, source, target)`` as :class:`FrameGroups` holds them (the edges as
    positions in ``entities``, the self loops first).

    Entity ids are dense: a presence mask over ``0 .. max id`` numbers the vertices in id
    order.  Union-find hooks the larger of two roots onto the smaller, so every root is its
    component's smallest vertex, and groups are numbered in the order of their roots."""
    loops, edges = len(clients), len(source)
    largest = clients.max()
    if edges:
        largest = max(largest, source.max(), target.max())
    number = np.full(largest + 1, -1, np.int64)  # -1: not a vertex
    for i in range(loops):
        number[clients[i]] = 0
    for i in range(edges):
        number[source[i]] = 0
        number[target[i]] = 0
    vertices = 0
    for entity in range(largest + 1):
        if number[entity] == 0:
            number[entity] = vertices
            vertices += 1
    entities = empty(vertices, np.int64)
    for entity in range(largest + 1):
        if number[entity] >= 0:
            entities[number[entity]] = entity
    ends_a = empty(loops + edges, np.int64)
    ends_b = empty(loops + edges, np.int64)
    for i in range(loops):
        ends_a[i] = ends_b[i] = number[clients[i]]
    for i in range(edges):
        ends_a[loops + i] = number[source[i]]
        ends_b[loops + i] = number[target[i]]
    parent = np.arange(vertices)
    for i in range(loops, loops + edges):
        a, b = _root(parent, ends_a[i]), _root(parent, ends_b[i])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    entity_group = empty(vertices, np.int64)
    groups = 0
    for v in range(vertices):  # a root precedes the rest of its component
        root = _root(parent, v)
        if root == v:
            entity_group[v] = groups
            groups += 1
        else:
            entity_group[v] = entity_group[root]
    sizes = np.zeros(groups, np.int64)
    for v in range(vertices):
        sizes[entity_group[v]] += 1
    message_group = empty(loops, np.int64)
    for i in range(loops):
        message_group[i] = entity_group[ends_a[i]]
    return entities, entity_group, message_group, sizes, ends_a, ends_b


@compiled
def _root(parent, v):
    """The root of ``v``, halving the path on the way."""
    while parent[v] != v:
        parent[v] = parent[parent[v]]
        v = parent[v]
    return v
