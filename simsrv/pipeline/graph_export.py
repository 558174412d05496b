"""A snapshot's interaction graph with positions, written as GraphML (Gephi, Cytoscape,
networkx read it).

Vertices are the frame's entities (its senders and everything in their action-range lists;
:mod:`simsrv.strategies.grouping.interaction_graph`), each with ``kind`` (``player`` or ``map
entity``), ``group`` (its BSP group), ``sent`` (a player that sent a packet in the frame) and ``x``,
``y``, ``z`` (position, map units).  Edges are the action-range interactions, ``weight`` = packets.
"""

from __future__ import annotations

from pathlib import Path

from simsrv.pipeline.snapshot import Snapshot
from simsrv.strategies.grouping.interaction_graph import interaction_graph
from simsrv.world.maps.base import GameMap


def snapshot_graph(game_map: GameMap, snap: Snapshot):
    """The networkx graph of ``snap``'s frame (module docstring)."""
    if snap.groups is None:
        raise ValueError("the snapshot was taken without its groups")
    graph = interaction_graph(snap.groups)
    players = len(snap.positions)
    for entity, data in graph.nodes(data=True):
        is_player = entity < players
        where = snap.positions[entity] if is_player else game_map.entities[entity - players]
        data.update(
            kind="player" if is_player else "map entity",
            sent=bool(is_player and snap.active[entity]),
            x=float(where[0]),
            y=float(where[1]),
            z=float(where[2]),
        )
    graph.graph.update(time_s=float(snap.time_s), players=players)
    return graph


def write_graphml(game_map: GameMap, snap: Snapshot, path: Path) -> tuple[int, int]:
    """Write ``snap``'s graph to ``path`` as GraphML; (vertices, edges)."""
    import networkx as nx

    graph = snapshot_graph(game_map, snap)
    nx.write_graphml(graph, path)
    return graph.number_of_nodes(), graph.number_of_edges()
