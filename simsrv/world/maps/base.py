"""Static map geometry shared by every map kind.

Units are Quake units (1 unit ~ 1 inch); z is up.  A map is a set of axis-aligned solid boxes
(walls, brushes) inside an extent, a set of rooms (axis-aligned boxes used for visibility and
room ids), spawn points, map entities (items, doors, lifts: they join the action-range lists
and cost world-physics time) and attractors (concentration areas).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from simsrv.compiled import compiled
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.box_index import BoxIndex

PLAYER_MINS = np.array([-16.0, -16.0, -24.0])
"""Player bounding box relative to the origin, Quake's hull 1 (units)."""
PLAYER_MAXS = np.array([16.0, 16.0, 32.0])
"""Upper corner of the player bounding box relative to the origin (units)."""
STEP_HEIGHT = 18.0
"""Highest ledge a walking player climbs (Quake's ``STEPSIZE``), units."""


@dataclass(frozen=True)
class GameMap:
    """Geometry of one map.

    Attributes
    ----------
    kind:
        Registered map kind that built it.
    extent_min, extent_max:
        Corners of the playable volume, shape (3,), units.
    solid_min, solid_max:
        Solid boxes (walls), shape (B, 3) each, units.
    room_min, room_max:
        Rooms as boxes, shape (R, 3) each; a point belongs to the first room containing it.
    room_visible:
        (R, R) boolean matrix: room j is visible from room i (the PVS proxy).
    spawn_points:
        (S, 3) player origins where players (re)spawn.
    entities:
        (E, 3) positions of map entities.
    attractors:
        Concentration areas (places that draw players).
    doors:
        (D, 3) centres of the doorways between rooms, units (used to route walkers).
    door_rooms:
        (D, 2) the two rooms each doorway joins.
    """

    kind: str
    extent_min: np.ndarray
    extent_max: np.ndarray
    solid_min: np.ndarray
    solid_max: np.ndarray
    room_min: np.ndarray
    room_max: np.ndarray
    room_visible: np.ndarray
    spawn_points: np.ndarray
    entities: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    attractors: Attractors = field(default_factory=Attractors)
    doors: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    door_rooms: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    @property
    def floor_z(self) -> float:
        """Height of a standing player's origin on the floor (units)."""
        return float(self.extent_min[2] - PLAYER_MINS[2])

    def blocked(self, origins: np.ndarray) -> np.ndarray:
        """Whether a walking player cannot move to each origin: :meth:`in_solid` here (maps
        with stairs also let a player climb a step), (N,) bool."""
        return self.in_solid(origins)

    def in_solid(self, origins: np.ndarray) -> np.ndarray:
        """Whether a player box at each origin is outside the extent or overlaps a solid.

        Parameters
        ----------
        origins:
            (N, 3) player origins, units.

        Returns
        -------
        (N,) bool.  Cost O(N x solids per grid cell) (:class:`BoxIndex`).
        """
        outside = _outside(
            np.ascontiguousarray(origins, dtype=np.float64),
            PLAYER_MINS,
            PLAYER_MAXS,
            np.asarray(self.extent_min, dtype=np.float64),
            np.asarray(self.extent_max, dtype=np.float64),
        )
        if len(self.solid_min) == 0:
            return outside
        lo = origins + PLAYER_MINS
        hi = origins + PLAYER_MAXS
        who, solid = self.solid_index.candidates(lo, hi)
        overlap = np.all(
            (lo[who] < self.solid_max[solid]) & (hi[who] > self.solid_min[solid]), axis=1
        )
        hit = np.zeros(len(origins), dtype=bool)
        hit[who[overlap]] = True
        return outside | hit

    def ground_z(self, origins: np.ndarray) -> np.ndarray:
        """Origin height of a player standing under each origin, (N,) units.

        The ground is the highest solid top under the player's box that is no higher than a
        step (``STEP_HEIGHT``) above its feet, or the extent's floor.  Walking off a ledge thus
        leaves the player above its ground (it falls); a ledge higher than a step is a wall.
        """
        floor = np.full(len(origins), self.floor_z)
        if len(self.solid_min) == 0 or (not self.has_ledges and np.all(np.isfinite(origins[:, 2]))):
            return floor  # no solid, or only full-height walls a walker never stands on
        lo = origins[:, :2] + PLAYER_MINS[:2]
        hi = origins[:, :2] + PLAYER_MAXS[:2]
        feet = origins[:, 2] + PLAYER_MINS[2]
        who, solid = self.solid_index.candidates(lo, hi)
        top = self.solid_max[solid, 2]
        under = np.all(
            (lo[who] < self.solid_max[solid, :2]) & (hi[who] > self.solid_min[solid, :2]), axis=1
        ) & (top <= feet[who] + STEP_HEIGHT)
        tops = np.full(len(origins), -np.inf)
        np.maximum.at(tops, who[under], top[under])
        return np.maximum(floor, tops - PLAYER_MINS[2])

    def standing_at(self, xy: np.ndarray) -> np.ndarray:
        """Origins of players dropped from above at each (x, y): on the highest surface, (n, 3).

        A point over a wall stands on its top and so pokes out of the map (``blocked``).
        """
        above = np.column_stack([xy, np.full(len(xy), np.inf)])
        return np.column_stack([xy, self.ground_z(above)])

    def floor_xy(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` candidate floor points (x, y), uniform over the extent (16 units in).

        Callers keep the candidates where a player can stand (:func:`simsrv.world.spawn`).
        """
        lo = self.extent_min[:2] + 16.0
        hi = self.extent_max[:2] - 16.0
        return rng.uniform(lo, hi, size=(count, 2))

    def spawn_xy(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` candidate start points (x, y): :meth:`floor_xy` (uniform placement).

        With 160 players on a map made for 32, uniform placement avoids stacking dozens of
        players on one spawn point at t = 0; maps with real spawn points override this.
        """
        return self.floor_xy(count, rng)

    def teleport(self, positions: np.ndarray) -> np.ndarray:
        """Move players standing in a teleporter (in place); returns who moved (none here)."""
        return np.zeros(0, dtype=np.int64)

    @cached_property
    def has_ledges(self) -> bool:
        """Whether some solid stops below the ceiling (a floor one can stand on)."""
        return bool(np.any(self.solid_max[:, 2] < self.extent_max[2]))

    @cached_property
    def room_next_door(self) -> np.ndarray:
        """(R, R) doorway to take from room i towards room j (-1: same room or unreachable).

        Shortest path in doorways (breadth-first search from every room, doorways in index
        order, so ties resolve deterministically): walkers route through doors, not into walls.
        """
        r = len(self.room_min)
        nxt = np.full((r, r), -1, dtype=np.int64)
        adjacency: list[list[tuple[int, int]]] = [[] for _ in range(r)]
        for d, (a, b) in enumerate(self.door_rooms):
            adjacency[a].append((int(b), d))
            adjacency[b].append((int(a), d))
        for target in range(r):
            seen = {target}
            frontier = [target]
            while frontier:
                following = []
                for room in frontier:
                    for other, d in adjacency[room]:
                        if other not in seen:
                            seen.add(other)
                            nxt[other, target] = d
                            following.append(other)
                frontier = following
        return nxt

    def room_of(self, points: np.ndarray) -> np.ndarray:
        """Index of the first room containing each point, -1 where none does. (N,) int."""
        who, room = self.room_index.candidates(points, points)
        inside = np.all(
            (points[who] >= self.room_min[room]) & (points[who] <= self.room_max[room]), axis=1
        )
        first = np.full(len(points), len(self.room_min), dtype=np.int64)
        np.minimum.at(first, who[inside], room[inside])
        return np.where(first < len(self.room_min), first, -1)

    @cached_property
    def entity_rooms(self) -> np.ndarray:
        """Room of each map entity (-1: none), (E,) int; map entities do not move."""
        return self.room_of(self.entities)

    @cached_property
    def pvs_row_rooms(self) -> np.ndarray:
        """Rooms each room sees (the length of its PVS row), (R,) int."""
        return self.room_visible.sum(axis=1)

    @cached_property
    def solid_index(self) -> BoxIndex:
        """Grid index of the solid boxes (see :class:`BoxIndex`)."""
        return BoxIndex.build(self.solid_min, self.solid_max, self.extent_min, self.extent_max)

    @cached_property
    def room_index(self) -> BoxIndex:
        """Grid index of the rooms (see :class:`BoxIndex`)."""
        return BoxIndex.build(self.room_min, self.room_max, self.extent_min, self.extent_max)


@compiled
def _outside(origins, mins, maxs, extent_min, extent_max):  # pragma: no cover - compiled
    """Whether the player box at each origin sticks out of the extent, (N,) bool (the same
    additions and comparisons as ``origins + mins < extent_min`` etc., one pass)."""
    out = np.zeros(len(origins), np.bool_)
    for i in range(len(origins)):
        for k in range(3):
            if origins[i, k] + mins[k] < extent_min[k] or origins[i, k] + maxs[k] > extent_max[k]:
                out[i] = True
                break
    return out
