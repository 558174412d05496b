"""The potentially visible set (PVS) proxy that sizes replies and prices building them.

QuakeWorld builds a client's reply from the entities in the *potentially visible set* of the
client's leaf (``SV_WriteEntitiesToClient``): it decompresses the leaf's PVS row and tests
entities against it [MODEL §1].  The proxy: a map is a set of rooms (leaves); a player sees

* every player and map entity in the rooms its room can see (``GameMap.room_visible``: the
  same room and rooms seen through doorways),
* and, when ``visibility_range > 0``, only those within that Euclidean distance (units).

Per reply it reports the visible entities (the reply's size and per-entity cost) and the rooms
in the player's PVS row (the PVS work: ``reply_per_pvs_room``).  Small rooms seen through many
doorways thus make the PVS work costlier but the replies smaller; an open map the opposite.
A player in no room sees nothing and has an empty PVS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
from simsrv.world.maps.base import GameMap


class Visibility(NamedTuple):
    """Per player: ``entities`` visible (self excluded), ``rooms`` in its PVS row; (N,) int."""

    entities: np.ndarray
    rooms: np.ndarray


def visibility(game_map: GameMap, players: np.ndarray, visibility_range: float = 0.0) -> Visibility:
    """Visible entities and PVS rooms of each player (see the module docstring)."""
    rooms = game_map.room_of(players)
    if visibility_range > 0:
        row_size = np.where(rooms >= 0, game_map.pvs_row_rooms[rooms], 0)
        return Visibility(_seen_within(game_map, players, rooms, visibility_range), row_size)
    entity_rooms = game_map.entity_rooms if len(game_map.entities) else rooms[:0]
    seen, row = empty(len(rooms), np.int64), empty(len(rooms), np.int64)
    _seen_in_rooms(rooms, entity_rooms, game_map.room_visible, game_map.pvs_row_rooms, seen, row)
    return Visibility(seen, row)


@compiled
def _seen_in_rooms(
    rooms, entity_rooms, room_visible, row_rooms, seen, row
):  # pragma: no cover - compiled
    """Per player (room ``rooms``, -1: none): the players and map entities (rooms
    ``entity_rooms``) in the rooms its room sees, self excluded, to ``seen``, and its PVS
    row's length, to ``row``; 0 and 0 in no room.  Each room's count is summed once, over the
    occupied rooms."""
    n_rooms = len(room_visible)
    per_room = np.zeros(n_rooms, np.int64)
    for r in rooms:
        if r >= 0:
            per_room[r] += 1
    for r in entity_rooms:
        if r >= 0:
            per_room[r] += 1
    occupied = np.flatnonzero(per_room)
    seen_from = np.full(n_rooms, -1, np.int64)
    for i in range(len(rooms)):
        r = rooms[i]
        if r < 0:
            seen[i] = 0
            row[i] = 0
            continue
        if seen_from[r] < 0:
            total = 0
            for o in occupied:
                if room_visible[r, o]:
                    total += per_room[o]
            seen_from[r] = total
        seen[i] = seen_from[r] - 1
        row[i] = row_rooms[r]


def _seen_within(
    game_map: GameMap, players: np.ndarray, rooms: np.ndarray, distance: float
) -> np.ndarray:
    """Entities in visible rooms within ``distance`` units of each player (k-d tree pairs)."""
    from scipy.spatial import cKDTree  # here: runs without a visibility distance skip scipy

    n = len(players)
    entities = game_map.entities
    points = players if len(entities) == 0 else np.vstack([players, entities])
    room = rooms if len(entities) == 0 else np.concatenate([rooms, game_map.entity_rooms])
    pairs = cKDTree(points).query_pairs(r=distance, output_type="ndarray")
    a, b = pairs[:, 0], pairs[:, 1]  # a < b, so a is always a player
    ra, rb = room[a], room[b]
    both = (ra >= 0) & (rb >= 0)
    a_sees_b = both & (a < n) & game_map.room_visible[np.maximum(ra, 0), np.maximum(rb, 0)]
    b_sees_a = both & (b < n) & game_map.room_visible[np.maximum(rb, 0), np.maximum(ra, 0)]
    return np.bincount(a[a_sees_b], minlength=n) + np.bincount(b[b_sees_a], minlength=n)[:n]
