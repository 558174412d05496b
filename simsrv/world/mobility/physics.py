"""Vertical motion shared by mobility models: jumps and falls under gravity onto the ground."""

from __future__ import annotations

import numpy as np

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
    airborne = (vz != 0.0) | (z > ground)
    if not airborne.any():
        return vz, np.maximum(z, ground)
    new_z = z + vz * dt_s
    new_vz = np.where(airborne, vz - GRAVITY * dt_s, 0.0)
    rising = np.flatnonzero(airborne & (vz > 0.0))
    if len(rising):
        moved = positions[rising].copy()
        moved[:, 2] = new_z[rising]
        bumped = rising[game_map.in_solid(moved)]
        new_z[bumped] = z[bumped]
        new_vz[bumped] = 0.0
    landed = airborne & (new_z <= ground)
    new_vz[landed] = 0.0
    return new_vz, np.where(airborne, np.maximum(new_z, ground), np.maximum(z, ground))
