"""Vertical motion shared by mobility models: jumps and falls under gravity onto the ground."""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled, row_kernel
from simsrv.core.row_split import split_rows
from simsrv.core.uninitialised import empty
from simsrv.world.maps.base import GameMap

GRAVITY = 800.0
"""``sv_gravity``, units/s^2."""


def fall(
    game_map: GameMap, positions: np.ndarray, vz: np.ndarray, dt_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """One tick of vertical motion: returns the new vertical speeds and origin heights.

    A player is airborne while it moves up or stands above its ground (it jumped, or walked
    off a ledge); it then falls under ``GRAVITY`` and lands on the ground (speed 0).  A rising
    player whose box would enter a solid (a low ceiling) stays at its height and loses its
    upward speed.  A player on the ground below its ground height (it walked onto a step,
    ``GameMap.ground_z`` looks one step up) climbs onto it.
    """
    z = positions[:, 2]
    ground = game_map.ground_z(positions)
    n = len(z)
    heights, up = empty(n), empty(n, np.bool_)
    split_rows(_grounded, n, z, vz, ground, heights, up)
    if not up.any():  # everyone on the ground: the heights only
        return vz, heights
    new_z, new_vz, rising = empty(n), empty(n), empty(n, np.int64)
    risen = _airborne(z, vz, up, dt_s, GRAVITY, new_z, new_vz, rising)
    rising = rising[:risen]
    if len(rising):
        moved = positions[rising].copy()
        moved[:, 2] = new_z[rising]
        bumped = rising[game_map.in_solid(moved)]
        new_z[bumped] = z[bumped]
        new_vz[bumped] = 0.0
    _land(ground, up, new_z, new_vz, heights)
    return new_vz, heights


@row_kernel
def _grounded(lo, hi, z, vz, ground, heights, up):  # pragma: no cover - compiled
    """For players ``lo .. hi``: the height each has after the tick if it is on the ground
    (never below its ground), to ``heights`` (:func:`_land` writes the airborne players'),
    and whether it is airborne (moving up or down, or above its ground), to ``up``."""
    for i in range(lo, hi):
        heights[i] = _maximum(z[i], ground[i])
        up[i] = (vz[i] != 0.0) | (z[i] > ground[i])


@compiled
def _airborne(z, vz, up, dt_s, gravity, new_z, new_vz, rising):  # pragma: no cover - compiled
    """Where each player would be after ``dt_s`` and its speed then (airborne, ``up``: less
    gravity; else 0), to ``new_z`` and ``new_vz``; the rising players (airborne, moving up),
    in index order, to the start of ``rising``.  Returns how many rise."""
    n = len(z)
    pull = gravity * dt_s
    count = 0
    for i in range(n):
        new_z[i] = z[i] + vz[i] * dt_s
        new_vz[i] = vz[i] - pull if up[i] else 0.0
        if up[i] and vz[i] > 0.0:
            rising[count] = i
            count += 1
    return count


@compiled
def _land(ground, up, new_z, new_vz, heights):  # pragma: no cover - compiled
    """The heights after the tick of the airborne players (``up``; never below the ground),
    to ``heights`` (the others' are already there: :func:`_grounded`); an airborne player
    that reaches its ground lands (its speed becomes 0, in ``new_vz``)."""
    for i in range(len(ground)):
        if up[i]:
            if new_z[i] <= ground[i]:
                new_vz[i] = 0.0
            heights[i] = _maximum(new_z[i], ground[i])


@compiled
def _maximum(a, b):  # pragma: no cover - compiled
    """``np.maximum`` of two floats (a NaN wins, the first on ties)."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b
