"""Initial player placement."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from simsrv.core.errors import InputError
from simsrv.core.uninitialised import empty

if TYPE_CHECKING:  # the maps import this module (map entities are placed with it)
    from simsrv.world.maps.base import GameMap


def spawn_positions(game_map: GameMap, count: int, rng: np.random.Generator) -> np.ndarray:
    """Place ``count`` players at free start positions (rejection sampling).

    Candidates come from ``GameMap.spawn_xy`` (uniform over the floor on parametric maps,
    around the spawn points on BSP maps); players start standing on the surface there, at
    points whose bounding box overlaps no solid.

    Returns
    -------
    (count, 3) float array of origins, units.
    """
    return free_floor_positions(
        game_map, count, lambda n: game_map.spawn_xy(n, rng), "free start positions"
    )


def floor_positions(game_map: GameMap, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` free standing origins spread over the whole floor (``GameMap.floor_xy``)."""
    return free_floor_positions(
        game_map, count, lambda n: game_map.floor_xy(n, rng), "free floor positions"
    )


def free_floor_positions(
    game_map: GameMap,
    count: int,
    sample_xy: Callable[[int], np.ndarray],
    what: str,
    field: str = "players.count",
) -> np.ndarray:
    """``count`` standing origins whose box overlaps no solid, by rejection sampling.

    A candidate stands on the highest surface under it (the floor, or the top of a solid such
    as an upper floor); one that stands on a wall pokes out of the map and is rejected.

    ``sample_xy(n)`` draws ``n`` candidate (x, y) points; ``what`` names them in the error,
    which is an input error of ``field`` (the scenario field that asked for them).
    """
    out = empty((count, 3))
    filled = 0
    for _ in range(1000):
        need = count - filled
        if need == 0:
            break
        xy = sample_xy(2 * need + 8)
        cand = game_map.standing_at(xy)
        free = cand[~game_map.blocked(cand)][:need]
        out[filled : filled + len(free)] = free
        filled += len(free)
    if filled < count:
        raise InputError(
            f"{field}: could not find {count} {what} (the map's free floor is too small or "
            f"walled in)"
        )
    return out
