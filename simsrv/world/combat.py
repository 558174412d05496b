"""Deaths and respawns: a shot that hits an opponent in range kills it; it respawns later.

Optional (``players.respawn``).  Model, per client tick:

1. Players due to respawn move to a spawn point of the map (or to a uniform free floor point
   on a map without spawn points).  Which point (``players.spawn_select``):

   - ``random``: drawn uniformly, each dead player independently.
   - ``quake``: QuakeWorld's deathmatch ``SelectSpawnPoint`` (``QW/progs/client.qc``): the
     points with no player within 84 units (``findradius`` from the point to a player's box
     centre, 4 units above its origin) are the free ones, one is drawn uniformly among them;
     when none is free, one is drawn uniformly among all.  The dead respawn one after another
     in client order, each seeing the ones placed before it.  (QuakeWorld then telefrags a
     player standing on the point, ``spawn_tdeath``: not modelled.)

   Its mobility state (heading, destination) is kept: it walks on from the spawn point.
2. When the dead respawn (``players.respawn_wait``):

   - ``next-tick``: at the tick after the death.
   - ``button``: as QuakeWorld's ``PlayerDeathThink``: the body lies where it died (its
     moves are ignored) until the player has released every button for a tick and then
     presses fire or jump (the bot's ``shot`` or ``jumped`` action); it respawns at the next
     tick.  A dead player neither shoots nor is shot.
3. After the players move, every living player that shot this tick aims at the nearest other
   living *player* in its action range ``L_a`` (Euclidean distance; map entities are not
   targets) and hits it with probability ``players.hit_chance``.  A player hit by several shots
   dies once; shooters killed in the same tick still fire (simultaneous moves).

Draws come from the run's ``combat`` stream, so turning respawn on does not change the
players' own paths until the first death.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.ragged import select_rows
from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.registry import TickActions
from simsrv.world.proximity import Neighbours
from simsrv.world.spawn import spawn_positions

SPOT_RADIUS = 84.0
"""``SelectSpawnPoint``: a spawn point with a player within this distance is occupied, units."""

BOX_CENTRE_Z = 4.0
"""Height of a player's box centre above its origin (hull -24..+32), units: ``findradius``
measures from the point to ``origin + (mins + maxs) / 2``."""


class Combat:
    """Resolves shots into deaths and moves the dead to spawn points.

    ``select``: ``"random"`` or ``"quake"``; ``wait``: ``"next-tick"`` or ``"button"`` (see the
    module).
    """

    def __init__(
        self,
        game_map: GameMap,
        hit_chance: float,
        rng: np.random.Generator,
        select: str = "random",
        wait: str = "next-tick",
    ) -> None:
        if select not in ("random", "quake"):
            raise ValueError(f"select: random or quake, got {select!r}")
        if wait not in ("next-tick", "button"):
            raise ValueError(f"wait: next-tick or button, got {wait!r}")
        self.map = game_map
        self.hit_chance = hit_chance
        self.rng = rng
        self.select = select
        self.wait = wait
        self.pending = np.zeros(0, dtype=np.int64)
        # ``button`` only: who is dead, where the body lies, who released every button since
        self.dead = np.zeros(0, dtype=bool)
        self.released = np.zeros(0, dtype=bool)
        self.body = np.zeros((0, 3))

    def respawn(self, positions: np.ndarray) -> np.ndarray:
        """Move the players due to respawn to spawn points (in place); returns who moved."""
        dead, self.pending = self.pending, np.zeros(0, dtype=np.int64)
        if len(dead) == 0:
            return dead
        if len(self.dead):
            self.dead[dead] = False
        points = self.map.spawn_points
        if not len(points):
            positions[dead] = spawn_positions(self.map, len(dead), self.rng)
        elif self.select == "quake":
            for p in dead:
                positions[p] = points[self._quake_spot(positions)]
        else:
            positions[dead] = points[self.rng.integers(0, len(points), len(dead))]
        return dead

    def _quake_spot(self, positions: np.ndarray) -> int:
        """Index of the spawn point ``SelectSpawnPoint`` picks with players at ``positions``."""
        points = self.map.spawn_points
        centres = positions + np.array([0.0, 0.0, BOX_CENTRE_Z])
        gap = np.linalg.norm(centres[None, :, :] - points[:, None, :], axis=2)
        free = np.flatnonzero(~(gap <= SPOT_RADIUS).any(axis=1))
        if len(free):
            return int(free[self.rng.integers(0, len(free))])
        return int(self.rng.integers(0, len(points)))

    def hold(self, positions: np.ndarray, actions: TickActions) -> None:
        """After the players moved: the dead bodies stay where they died (in place), and the
        dead that pressed a button after releasing them all are due to respawn next tick
        (``button``; nothing to do with ``next-tick``)."""
        if self.wait != "button" or not len(self.dead):
            return
        dead = self.dead
        positions[dead] = self.body[dead]
        pressed = actions.shot | actions.jumped
        self.pending = np.flatnonzero(dead & self.released & pressed)
        self.released |= dead & ~pressed

    def shoot(self, positions: np.ndarray, shot: np.ndarray, neighbours: Neighbours) -> np.ndarray:
        """Players killed by this tick's shots, (N,) bool."""
        n = len(positions)
        if self.wait == "button" and len(self.dead) != n:
            self.dead = np.zeros(n, dtype=bool)
            self.released = np.zeros(n, dtype=bool)
            self.body = np.zeros((n, 3))
        killed = np.zeros(n, dtype=bool)
        _, aimed = aim(positions, shot, neighbours, ~self.dead if len(self.dead) else None)
        if len(aimed) == 0:
            return killed
        hit = self.rng.random(len(aimed)) < self.hit_chance
        killed[aimed[hit]] = True
        if self.wait == "button":
            self.dead |= killed
            self.released[killed] = False
            self.body[killed] = positions[killed]
        else:
            self.pending = np.flatnonzero(killed)
        return killed


def aim(
    positions: np.ndarray,
    shot: np.ndarray,
    neighbours: Neighbours,
    alive: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(shooters, targets)``: each living player that shot this tick and has another living
    player in its action range ``L_a``, ascending, and the nearest such player (Euclidean
    distance; ties: the lowest index).  Map entities are not targets; ``alive`` (N,) bool,
    ``None``: everyone."""
    n = len(positions)
    none = np.zeros(0, dtype=np.int64)
    shooters = np.flatnonzero(shot if alive is None else shot & alive)
    if len(shooters) == 0:
        return none, none
    which, target = select_rows(neighbours.indptr, neighbours.indices, shooters)
    owner, target = shooters[which], target.astype(np.int64)
    players = target < n
    owner, target = owner[players], target[players]
    if alive is not None:
        living = alive[target]
        owner, target = owner[living], target[living]
    if len(owner) == 0:
        return none, none
    distance = np.linalg.norm(positions[target] - positions[owner], axis=1)
    order = np.lexsort((target, distance, owner))  # per shooter: nearest first, then lowest id
    owner, target = owner[order], target[order]
    first = np.ones(len(owner), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    return owner[first], target[first]
