"""Initial player placement."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simsrv.world.maps.base import GameMap


def spawn_positions(game_map: GameMap, count: int, rng: np.random.Generator) -> np.ndarray:
    """Place ``count`` players uniformly at random on free floor positions (rejection sampling).

    Players start standing on the floor (origin z = floor height) at points whose bounding box
    overlaps no solid.  Real servers spawn at spawn points; with 160 players on a map made for
    32, uniform placement avoids stacking dozens of players on one point at t = 0.

    Returns
    -------
    (count, 3) float array of origins, units.
    """
    lo = game_map.extent_min[:2] + 16.0
    hi = game_map.extent_max[:2] - 16.0
    return free_floor_positions(
        game_map, count, lambda n: rng.uniform(lo, hi, size=(n, 2)), "free floor positions"
    )


def free_floor_positions(
    game_map: GameMap, count: int, sample_xy: Callable[[int], np.ndarray], what: str
) -> np.ndarray:
    """``count`` standing origins whose box overlaps no solid, by rejection sampling.

    A candidate stands on the highest surface under it (the floor, or the top of a solid such
    as an upper floor); one that stands on a wall pokes out of the map and is rejected.

    ``sample_xy(n)`` draws ``n`` candidate (x, y) points; ``what`` names them in the error.
    """
    out = np.empty((count, 3))
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
        raise RuntimeError(f"could not find {what} for all players")
    return out
