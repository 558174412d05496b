"""Static map geometry shared by every map kind.

Units are Quake units (1 unit ~ 1 inch); z is up.  A map is a set of axis-aligned solid boxes
(walls, brushes) inside an extent, a set of rooms (axis-aligned boxes used for visibility and
room ids), spawn points, map entities (items, doors, lifts: they join the action-range lists
and cost world-physics time) and attractors (concentration areas).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

PLAYER_MINS = np.array([-16.0, -16.0, -24.0])
"""Player bounding box relative to the origin, Quake's hull 1 (units)."""
PLAYER_MAXS = np.array([16.0, 16.0, 32.0])
"""Upper corner of the player bounding box relative to the origin (units)."""


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
        (A, 3) centres of concentration areas (places that draw players), units.
    attractor_radius:
        Radius of each concentration area, units.
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
    attractors: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    attractor_radius: float = 0.0

    @property
    def floor_z(self) -> float:
        """Height of a standing player's origin on the floor (units)."""
        return float(self.extent_min[2] - PLAYER_MINS[2])

    def blocked(self, origins: np.ndarray) -> np.ndarray:
        """Whether a player box at each origin is outside the extent or overlaps a solid.

        Parameters
        ----------
        origins:
            (N, 3) player origins, units.

        Returns
        -------
        (N,) bool.  Cost O(N x B) for B solid boxes.
        """
        lo = origins + PLAYER_MINS
        hi = origins + PLAYER_MAXS
        outside = np.any(lo < self.extent_min, axis=1) | np.any(hi > self.extent_max, axis=1)
        if len(self.solid_min) == 0:
            return outside
        overlap = np.all(
            (lo[:, None, :] < self.solid_max[None]) & (hi[:, None, :] > self.solid_min[None]),
            axis=2,
        )
        return outside | overlap.any(axis=1)

    def room_of(self, points: np.ndarray) -> np.ndarray:
        """Index of the first room containing each point, -1 where none does. (N,) int."""
        p = points[:, None, :]
        inside = np.all((p >= self.room_min[None]) & (p <= self.room_max[None]), axis=2)
        found = inside.any(axis=1)
        return np.where(found, inside.argmax(axis=1), -1)
