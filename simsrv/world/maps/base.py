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

from simsrv.core.compiled import borrowing, compiled, row_kernel
from simsrv.core.row_split import split_rows
from simsrv.core.uninitialised import empty
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.box_index import BoxIndex, cell_range

PLAYER_MINS = np.array([-16.0, -16.0, -24.0])
"""Player bounding box relative to the origin, Quake's hull 1 (units)."""
PLAYER_MAXS = np.array([16.0, 16.0, 32.0])
"""Upper corner of the player bounding box relative to the origin (units)."""
PLAYER_HALF_WIDTH = float(PLAYER_MAXS[0])
"""Half a player's box width on x and y, units: floor points are drawn this far inside the
extent, so a map's extent is wider than twice it."""

STEP_HEIGHT = 18.0
"""Highest ledge a walking player climbs (Quake's ``STEPSIZE``), units."""

FEW_ROOMS = 8
"""Rooms up to which :meth:`GameMap.room_of` tests every room instead of the grid's."""


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
        (N,) bool.  Cost O(N x solids per grid cell) (:class:`BoxIndex`), compiled.
        """
        out = empty(len(origins), np.bool_)
        split_rows(
            _in_solid,
            len(origins),
            np.ascontiguousarray(origins, dtype=np.float64),
            PLAYER_MINS,
            PLAYER_MAXS,
            np.asarray(self.extent_min, dtype=np.float64),
            np.asarray(self.extent_max, dtype=np.float64),
            np.ascontiguousarray(self.solid_min),  # one compiled signature for every map
            np.ascontiguousarray(self.solid_max),
            *self.solid_index.grid,
            out,
        )
        return out

    def ground_z(self, origins: np.ndarray) -> np.ndarray:
        """Origin height of a player standing under each origin, (N,) units.

        The ground is the highest solid top under the player's box that is no higher than a
        step (``STEP_HEIGHT``) above its feet, or the extent's floor.  Walking off a ledge thus
        leaves the player above its ground (it falls); a ledge higher than a step is a wall.
        """
        floor = np.full(len(origins), self.floor_z)
        if len(self.solid_min) == 0 or (not self.has_ledges and np.all(np.isfinite(origins[:, 2]))):
            return floor  # no solid, or only full-height walls a walker never stands on
        return _ground_z(
            np.ascontiguousarray(origins, dtype=np.float64),
            floor,
            PLAYER_MINS,
            PLAYER_MAXS,
            STEP_HEIGHT,
            np.ascontiguousarray(self.solid_min),  # one compiled signature for every map
            np.ascontiguousarray(self.solid_max),
            *self.solid_index.grid,
        )

    def standing_at(self, xy: np.ndarray) -> np.ndarray:
        """Origins of players dropped from above at each (x, y): on the highest surface, (n, 3).

        A point over a wall stands on its top and so pokes out of the map (``blocked``).
        """
        origins = empty((len(xy), 3))  # dropped from infinitely high, then where they land
        origins[:, :2] = xy
        origins[:, 2] = np.inf
        origins[:, 2] = self.ground_z(origins)
        return origins

    def floor_xy(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` candidate floor points (x, y), uniform over the extent (a player's half width
        in, :data:`PLAYER_HALF_WIDTH`).

        Callers keep the candidates where a player can stand (:func:`simsrv.world.spawn`).
        """
        lo = self.extent_min[:2] + PLAYER_HALF_WIDTH
        hi = self.extent_max[:2] - PLAYER_HALF_WIDTH
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
        """Index of the first room containing each point, -1 where none does. (N,) int.

        Up to :data:`FEW_ROOMS` rooms every room is tested (cheaper than finding the point's
        cell in the grid index, and the same answer: the grid lists every room containing a
        point in the point's cell)."""
        out = empty(len(points), np.int64)
        points = np.ascontiguousarray(points, dtype=np.float64)
        room_min = np.ascontiguousarray(self.room_min)
        room_max = np.ascontiguousarray(self.room_max)
        if len(room_min) <= FEW_ROOMS:
            _room_of_few(points, room_min, room_max, out)
        else:
            _room_of(points, room_min, room_max, *self.room_index.grid, out)
        return out

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


@row_kernel
def _in_solid(
    lo,
    hi,
    origins,
    mins,
    maxs,
    extent_min,
    extent_max,
    solid_min,
    solid_max,
    ox,
    oy,
    cell,
    nx,
    ny,
    indptr,
    boxes,
    out,
):  # pragma: no cover - compiled
    """:meth:`GameMap.in_solid` of origins ``lo .. hi``: the box ``origin + mins .. origin +
    maxs`` sticks out of the extent or strictly overlaps a solid of a grid cell its (x, y)
    footprint covers, to ``out`` (N,) bool."""
    for i in range(lo, hi):
        lo_x, hi_x = origins[i, 0] + mins[0], origins[i, 0] + maxs[0]
        lo_y, hi_y = origins[i, 1] + mins[1], origins[i, 1] + maxs[1]
        lo_z, hi_z = origins[i, 2] + mins[2], origins[i, 2] + maxs[2]
        hit = (lo_x < extent_min[0]) | (hi_x > extent_max[0])  # (one chain of six compiles
        hit |= (lo_y < extent_min[1]) | (hi_y > extent_max[1])  # to code ~4x slower)
        hit |= (lo_z < extent_min[2]) | (hi_z > extent_max[2])
        if not hit and len(solid_min):
            x0, x1 = cell_range(lo_x, hi_x, ox, cell, nx)
            y0, y1 = cell_range(lo_y, hi_y, oy, cell, ny)
            for cx in range(x0, x1 + 1):
                for cy in range(y0, y1 + 1):
                    c = cx * ny + cy
                    for j in range(indptr[c], indptr[c + 1]):
                        b = boxes[j]
                        if (
                            lo_x < solid_max[b, 0]
                            and hi_x > solid_min[b, 0]
                            and lo_y < solid_max[b, 1]
                            and hi_y > solid_min[b, 1]
                            and lo_z < solid_max[b, 2]
                            and hi_z > solid_min[b, 2]
                        ):
                            hit = True
                            break
                    if hit:
                        break
                if hit:
                    break
        out[i] = hit


@compiled
def _ground_z(
    origins, floor, mins, maxs, step, solid_min, solid_max, ox, oy, cell, nx, ny, indptr, boxes
):  # pragma: no cover - compiled
    """:meth:`GameMap.ground_z`: the highest solid top under each box (its (x, y) footprint
    strictly overlapping) no higher than ``step`` above the feet, as an origin height, or
    ``floor``; (N,) units."""
    out = floor.copy()
    for i in range(len(origins)):
        lo_x = origins[i, 0] + mins[0]
        lo_y = origins[i, 1] + mins[1]
        hi_x = origins[i, 0] + maxs[0]
        hi_y = origins[i, 1] + maxs[1]
        feet = origins[i, 2] + mins[2]
        top = -np.inf
        x0, x1 = cell_range(lo_x, hi_x, ox, cell, nx)
        y0, y1 = cell_range(lo_y, hi_y, oy, cell, ny)
        for cx in range(x0, x1 + 1):
            for cy in range(y0, y1 + 1):
                c = cx * ny + cy
                for b in boxes[indptr[c] : indptr[c + 1]]:
                    if (
                        lo_x < solid_max[b, 0]
                        and hi_x > solid_min[b, 0]
                        and lo_y < solid_max[b, 1]
                        and hi_y > solid_min[b, 1]
                        and solid_max[b, 2] <= feet + step
                        and solid_max[b, 2] > top
                    ):
                        top = solid_max[b, 2]
        ground = top - mins[2]
        if ground > out[i]:
            out[i] = ground
    return out


@borrowing
def _in_room(x, y, z, room_min, room_max, r):  # pragma: no cover - compiled
    """Whether ``(x, y, z)`` is in room ``r``'s closed box."""
    return (
        x >= room_min[r, 0]
        and x <= room_max[r, 0]
        and y >= room_min[r, 1]
        and y <= room_max[r, 1]
        and z >= room_min[r, 2]
        and z <= room_max[r, 2]
    )


@compiled
def _room_of(
    points, room_min, room_max, ox, oy, cell, nx, ny, indptr, boxes, out
):  # pragma: no cover - compiled
    """:meth:`GameMap.room_of`: the lowest-numbered room of the point's grid cell whose closed
    box contains the point, -1 if none; to ``out`` (N,) int.  The cell is
    :func:`cell_range` of the point (one cell)."""
    for i in range(len(points)):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        c = cell_range(x, x, ox, cell, nx)[0] * ny + cell_range(y, y, oy, cell, ny)[0]
        best = len(room_min)
        for j in range(indptr[c], indptr[c + 1]):
            r = boxes[j]
            if r < best and _in_room(x, y, z, room_min, room_max, r):
                best = r
        out[i] = best if best < len(room_min) else -1


@compiled
def _room_of_few(points, room_min, room_max, out):  # pragma: no cover - compiled
    """:meth:`GameMap.room_of` on a map of a few rooms: the lowest-numbered room whose closed
    box contains the point, -1 if none, testing every room; to ``out`` (N,) int."""
    for i in range(len(points)):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        best = -1
        for r in range(len(room_min)):
            if _in_room(x, y, z, room_min, room_max, r):
                best = r
                break
        out[i] = best
