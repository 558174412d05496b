"""Map entities (items, doors, lifts): they join the action-range lists and cost world time."""

from __future__ import annotations

import numpy as np

from simsrv.world.maps.base import GameMap
from simsrv.world.spawn import free_floor_positions


def place_entities(game_map: GameMap, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` map-entity positions at seeded uniform free floor points, (count, 3) units."""
    if count == 0:
        return np.zeros((0, 3))
    lo, hi = game_map.extent_min[:2] + 16.0, game_map.extent_max[:2] - 16.0
    return free_floor_positions(
        game_map,
        count,
        lambda n: rng.uniform(lo, hi, size=(n, 2)),
        "map entity positions",
        field="map.map_entities",
    )
