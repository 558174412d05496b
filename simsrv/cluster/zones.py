"""The world seen through the zoning: who owns each player, tick by tick.

:class:`ZonedWorld` stands where the client stream expects the world (it has ``players`` and
``advance``); each tick it records the zone of every player (its owner node) and the mirror
matrix (entities near another zone, :meth:`~simsrv.cluster.zoning.Zoning.mirror_counts`),
players and map entities together.  Map entities never move: their part is computed once.

A frame at time ``t`` s uses the state of tick ``floor(t * rate_hz)``, clipped to the ticks
kept (the world is generated ahead of the server; the last ``keep_ticks`` ticks are kept).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from simsrv.cluster.zoning import Zoning
from simsrv.world.world import TickState, World


class ZonedWorld:
    """A :class:`World` plus its zoning; ticks ``rate_hz`` per simulated second."""

    def __init__(self, world: World, zoning: Zoning, rate_hz: float, keep_ticks: int) -> None:
        self.world = world
        self.zoning = zoning
        self.rate_hz = rate_hz
        self.keep_ticks = keep_ticks
        entities = world.map.entities
        owner = zoning.zone_of(entities) if len(entities) else np.zeros(0, dtype=np.int64)
        self.map_owned = np.bincount(owner, minlength=zoning.nodes)
        self.map_mirror = zoning.mirror_counts(entities, owner)
        self._owner: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mirror: OrderedDict[int, np.ndarray] = OrderedDict()
        self.owned_history: list[np.ndarray] = []
        """Players in each zone, one (nodes,) array per tick from tick 0."""

    @property
    def players(self) -> int:
        """Number of players (the client stream's clients)."""
        return self.world.players

    def advance(self, dt_s: float) -> TickState:
        """Advance the world one tick and record the zones."""
        state = self.world.advance(dt_s)
        owner = self.zoning.zone_of(state.positions)
        self._owner[state.tick] = owner
        self._mirror[state.tick] = self.zoning.mirror_counts(state.positions, owner)
        self.owned_history.append(np.bincount(owner, minlength=self.zoning.nodes))
        while len(self._owner) > self.keep_ticks:
            self._owner.popitem(last=False)
            self._mirror.popitem(last=False)
        return state

    def owner_at(self, tick: int) -> np.ndarray | None:
        """(players,) owner node of each player at ``tick``, or None if not kept."""
        return self._owner.get(tick)

    def tick_at(self, t_s: float) -> int:
        """The kept tick whose state a frame at ``t_s`` uses."""
        first, last = next(iter(self._owner)), next(reversed(self._owner))
        return min(max(math.floor(t_s * self.rate_hz), first), last)

    def mirror_at(self, t_s: float) -> np.ndarray:
        """(nodes, nodes) mirror matrix (players and map entities) at time ``t_s``."""
        return self._mirror[self.tick_at(t_s)] + self.map_mirror

    def mirrored_players_at(self, node: int, t_s: float) -> int:
        """Players of other zones mirrored onto node ``node`` at ``t_s``."""
        return int(self._mirror[self.tick_at(t_s)][:, node].sum())

    def entities_at(self, node: int, t_s: float) -> int:
        """Entities node ``node``'s world physics simulates at ``t_s``: the players and map
        entities in its zone plus those mirrored onto it."""
        tick = self.tick_at(t_s)
        owned = int(np.count_nonzero(self._owner[tick] == node)) + int(self.map_owned[node])
        return owned + int(self.mirror_at(t_s)[:, node].sum())
