"""A frame's interaction graph as a networkx graph (for graph partitioning and for export).

Vertices are entity ids (the frame's senders and everything in their action-range lists
``L_a``), each with its ``group`` (:func:`simsrv.strategies.grouping.groups.frame_groups`); an edge
``a - b`` for each ``b`` in ``L_a`` of a packet of ``a``, its ``weight`` the number of packets
that gave it (the senders' self loops are left out).  Every vertex is one entity, so a
partition's vertex counts are its entity counts.

networkx is imported when a graph is built, not at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simsrv.strategies.grouping.groups import FrameGroups

if TYPE_CHECKING:
    import networkx as nx


def interaction_graph(groups: FrameGroups) -> nx.Graph:
    """The graph of ``groups`` (module docstring); needs its ``source`` and ``target``."""
    import networkx as nx

    if groups.source is None or groups.target is None:
        raise ValueError("the frame's groups were built without their edges")
    graph = nx.Graph()
    ids = groups.entities.tolist()
    graph.add_nodes_from(
        (entity, {"group": int(group)})
        for entity, group in zip(ids, groups.entity_group.tolist(), strict=True)
    )
    keep = groups.source != groups.target
    pairs = np.stack([groups.source[keep], groups.target[keep]], axis=1)
    pairs.sort(axis=1)  # undirected: a - b and b - a are one edge
    unique, counts = np.unique(pairs, axis=0, return_counts=True)
    graph.add_edges_from(
        (ids[a], ids[b], {"weight": int(n)})
        for (a, b), n in zip(unique.tolist(), counts.tolist(), strict=True)
    )
    return graph
