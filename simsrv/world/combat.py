"""Deaths and respawns: a shot that hits an opponent in range kills it; it respawns next tick.

Optional (``players.respawn``).  Model, per client tick:

1. Players killed in the previous tick respawn: each is moved to a spawn point of the map drawn
   uniformly (QuakeWorld's deathmatch ``SelectSpawnPoint`` picks a random spot), or to a uniform
   free floor point on a map without spawn points.  Its mobility state (heading, destination)
   is kept: it walks on from the spawn point.
2. After the players move, every player that shot this tick aims at the nearest other *player*
   in its action range ``L_a`` (Euclidean distance; map entities are not targets) and hits it
   with probability ``players.hit_chance``.  A player hit by several shots dies once; shooters
   killed in the same tick still fire (simultaneous moves).

Draws come from the run's ``combat`` stream, so turning respawn on does not change the
players' own paths until the first death.
"""

from __future__ import annotations

import numpy as np

from simsrv.ragged import select_rows
from simsrv.world.maps.base import GameMap
from simsrv.world.proximity import Neighbours
from simsrv.world.spawn import spawn_positions


class Combat:
    """Resolves shots into deaths and moves the dead to spawn points one tick later."""

    def __init__(self, game_map: GameMap, hit_chance: float, rng: np.random.Generator) -> None:
        self.map = game_map
        self.hit_chance = hit_chance
        self.rng = rng
        self.pending = np.zeros(0, dtype=np.int64)

    def respawn(self, positions: np.ndarray) -> np.ndarray:
        """Move the players killed last tick to spawn points (in place); returns who moved."""
        dead, self.pending = self.pending, np.zeros(0, dtype=np.int64)
        if len(dead) == 0:
            return dead
        points = self.map.spawn_points
        if len(points):
            positions[dead] = points[self.rng.integers(0, len(points), len(dead))]
        else:
            positions[dead] = spawn_positions(self.map, len(dead), self.rng)
        return dead

    def shoot(self, positions: np.ndarray, shot: np.ndarray, neighbours: Neighbours) -> np.ndarray:
        """Players killed by this tick's shots, (N,) bool; they respawn at the next tick."""
        killed = np.zeros(len(positions), dtype=bool)
        _, aimed = aim(positions, shot, neighbours)
        if len(aimed) == 0:
            return killed
        hit = self.rng.random(len(aimed)) < self.hit_chance
        killed[aimed[hit]] = True
        self.pending = np.flatnonzero(killed)
        return killed


def aim(
    positions: np.ndarray, shot: np.ndarray, neighbours: Neighbours
) -> tuple[np.ndarray, np.ndarray]:
    """``(shooters, targets)``: each player that shot this tick and has another player in its
    action range ``L_a``, ascending, and the nearest such player (Euclidean distance; ties:
    the lowest index).  Map entities are not targets."""
    n = len(positions)
    none = np.zeros(0, dtype=np.int64)
    shooters = np.flatnonzero(shot)
    if len(shooters) == 0:
        return none, none
    which, target = select_rows(neighbours.indptr, neighbours.indices, shooters)
    owner, target = shooters[which], target.astype(np.int64)
    players = target < n
    owner, target = owner[players], target[players]
    if len(owner) == 0:
        return none, none
    distance = np.linalg.norm(positions[target] - positions[owner], axis=1)
    order = np.lexsort((target, distance, owner))  # per shooter: nearest first, then lowest id
    owner, target = owner[order], target[order]
    first = np.ones(len(owner), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    return owner[first], target[first]
