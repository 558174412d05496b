"""``death32c-like``: an open arena with concentration areas, standing in for *death32c*.

The BSP-group calibration [P §5.2, T §4.3] used id Software's *death32c*, a deathmatch map
with concentration areas (places that attract players and form big groups); the map is not
among the GPL builds we have.  This preset gives the two properties that matter to the
strategies: players gather around ``hotspots`` attractors (with a mobility model that honours
attractors, e.g. ``quake-bot`` with ``attraction > 0``), and visibility is local (a grid of
rooms, each seeing its own and the eight surrounding rooms, like a map of small rooms and
corridors).  The defaults are the calibration runs' values (``scenarios/cordeiro2007/``);
how its group statistics compare with death32c's is in ``docs/maps.md``.

Layout: a square arena of side ``size`` with no inner walls; ``hotspots`` attractor centres
drawn uniformly (seeded) at least ``hotspot_radius`` from the edges; ``map_entities`` map
entities (doors, lifts) at seeded uniform positions on the floor.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from simsrv.core.strict_model import StrictModel
from simsrv.world.maps.attractors import fixed_attractors
from simsrv.world.maps.base import PLAYER_MINS, GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind


class Death32cLikeParams(StrictModel):
    """Parameters of the death32c stand-in (units are Quake units)."""

    size: float = Field(2048.0, ge=256.0, le=65536.0, description="side of the square arena")
    height: float = Field(256.0, ge=64.0, le=8192.0, description="floor-to-ceiling height")
    hotspots: int = Field(2, ge=0, le=1000, description="number of concentration areas")
    hotspot_radius: float = Field(320.0, gt=0.0, description="radius of a concentration area")
    rooms_per_side: int = Field(6, ge=1, le=64, description="visibility grid: rooms per side")
    map_entities: int = Field(8, ge=0, le=100_000, description="map entities (doors, lifts)")

    @model_validator(mode="after")
    def _hotspots_fit(self) -> Death32cLikeParams:
        if self.hotspots and 2 * self.hotspot_radius >= self.size:
            raise ValueError(
                f"hotspot_radius: must be below half the size ({self.size / 2:g}), "
                f"got {self.hotspot_radius:g}"
            )
        return self


def build_death32c_like(params: Death32cLikeParams, rng: np.random.Generator) -> GameMap:
    """Build the arena; attractor and entity positions come from ``rng``."""
    s, h, r = params.size, params.height, params.hotspot_radius
    floor = -PLAYER_MINS[2]
    # no hotspots: no draw (numpy refuses the bounds when the unused radius exceeds half the size)
    centres = (
        rng.uniform(r, s - r, size=(params.hotspots, 2)) if params.hotspots else np.zeros((0, 2))
    )
    attractors = np.column_stack([centres, np.full(len(centres), floor)])
    entities = np.column_stack(
        [
            rng.uniform(16, s - 16, size=(params.map_entities, 2)),
            np.full(params.map_entities, floor),
        ]
    )
    k = params.rooms_per_side
    edges = np.linspace(0.0, s, k + 1)
    cells = [(i, j) for j in range(k) for i in range(k)]
    room_min = np.array([(edges[i], edges[j], 0.0) for i, j in cells])
    room_max = np.array([(edges[i + 1], edges[j + 1], h) for i, j in cells])
    grid = np.array(cells)
    visible = np.abs(grid[:, None, :] - grid[None, :, :]).max(axis=2) <= 1
    return GameMap(
        kind="death32c-like",
        extent_min=np.zeros(3),
        extent_max=np.array([s, s, h]),
        solid_min=np.zeros((0, 3)),
        solid_max=np.zeros((0, 3)),
        room_min=room_min,
        room_max=room_max,
        room_visible=visible,
        spawn_points=attractors.copy() if len(attractors) else np.array([(s / 2, s / 2, floor)]),
        entities=entities,
        attractors=fixed_attractors(attractors, r),
    )


MAP_KINDS.register(
    "death32c-like", MapKind("death32c-like", Death32cLikeParams, build_death32c_like)
)
