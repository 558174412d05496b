"""The world seen through the zoning: who owns each player, tick by tick.

:class:`ZonedWorld` stands where the client stream expects the world (it has ``players`` and
``advance``); each tick it lets a dynamic zoning move its borders
(:meth:`~simsrv.pipeline.cluster.zoning.Zoning.rebalance`, recorded as a :class:`Rebalance`), then
records the zone of every player (its owner node) and the mirror matrix (entities near another
zone, :meth:`~simsrv.pipeline.cluster.zoning.Zoning.mirror_counts`), players and map entities
together.  Map entities never move: their part is computed again only when the borders move.
With ``shots`` it also records, per tick, the target of every shot (the nearest other player
in the shooter's action range, :func:`simsrv.world.combat.aim`) and its owner
(:mod:`simsrv.pipeline.cluster.actions`).

A frame at time ``t`` s uses the state of tick ``floor(t * rate_hz)``, clipped to the ticks
kept (the world is generated ahead of the server; the last ``keep_ticks`` ticks are kept).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from simsrv.core.uninitialised import empty
from simsrv.pipeline.cluster.zoning import Zoning
from simsrv.world.combat import aim
from simsrv.world.world import TickState, World

SHOT_TICKS = 64
"""Shot targets are kept this many times ``keep_ticks`` (a shot is looked up when its packet
is read, which an overloaded node does late)."""


@dataclass(frozen=True)
class Rebalance:
    """The borders moved at ``tick`` (``t_s`` s): ``migrated`` players changed owner because
    of the move (at the tick's positions); players per zone ``before`` and ``after`` it."""

    tick: int
    t_s: float
    migrated: int
    before: np.ndarray
    after: np.ndarray


class ZonedWorld:
    """A :class:`World` plus its zoning; ticks ``rate_hz`` per simulated second."""

    def __init__(
        self,
        world: World,
        zoning: Zoning,
        rate_hz: float,
        keep_ticks: int,
        shots: bool = False,
        history: bool = False,
    ) -> None:
        self.world = world
        self.zoning = zoning
        self.rate_hz = rate_hz
        self.keep_ticks = keep_ticks
        self.shots = shots
        self._map_part()
        self.owner_ring = empty((keep_ticks, world.players), np.int32)
        """Owner node of each player at each kept tick: row ``tick % keep_ticks`` (a row is
        written at its tick, before it is read; the rows never written take no memory)."""
        self.first_tick = 0
        """The kept ticks are ``first_tick .. last_tick`` (none while ``last_tick < 0``)."""
        self.last_tick = -1
        self._owned: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mirror: OrderedDict[int, np.ndarray] = OrderedDict()
        self._map_owned: OrderedDict[int, np.ndarray] = OrderedDict()
        self._map_mirror: OrderedDict[int, np.ndarray] = OrderedDict()
        self._targets: OrderedDict[int, dict[int, tuple[int, int]]] = OrderedDict()
        self.owned_history: list[np.ndarray] = []
        """Players in each zone, one (nodes,) array per tick from tick 0."""
        self.rebalances: list[Rebalance] = []
        self.owner_history: list[np.ndarray] | None = [] if history else None
        """With ``history``: every tick's (players,) owners (for tests)."""

    def _map_part(self) -> None:
        entities = self.world.map.entities
        zoning = self.zoning
        owner = zoning.zone_of(entities) if len(entities) else np.zeros(0, dtype=np.int64)
        self.map_owned = np.bincount(owner, minlength=zoning.nodes)
        self.map_mirror = zoning.mirror_counts(entities, owner)

    @property
    def players(self) -> int:
        """Number of players (the client stream's clients)."""
        return self.world.players

    def advance(self, dt_s: float) -> TickState:
        """Advance the world one tick, let the borders move, and record the zones."""
        state = self.world.advance(dt_s)
        zoning, positions = self.zoning, state.positions
        owner = zoning.zone_of(positions)
        if zoning.rebalance(state.tick / self.rate_hz, positions):
            before, owner = owner, zoning.zone_of(positions)
            self._map_part()
            self.rebalances.append(
                Rebalance(
                    state.tick,
                    state.tick / self.rate_hz,
                    int(np.count_nonzero(before != owner)),
                    np.bincount(before, minlength=zoning.nodes),
                    np.bincount(owner, minlength=zoning.nodes),
                )
            )
        self.owner_ring[state.tick % self.keep_ticks] = owner
        self.last_tick = state.tick
        self.first_tick = max(self.first_tick, state.tick - self.keep_ticks + 1)
        self._mirror[state.tick] = zoning.mirror_counts(positions, owner) + self.map_mirror
        self._map_owned[state.tick] = self.map_owned
        self._map_mirror[state.tick] = self.map_mirror
        owned = np.bincount(owner, minlength=zoning.nodes)
        self._owned[state.tick] = owned
        self.owned_history.append(owned)
        if self.owner_history is not None:
            self.owner_history.append(owner)
        while len(self._owned) > self.keep_ticks:
            self._owned.popitem(last=False)
            self._mirror.popitem(last=False)
            self._map_owned.popitem(last=False)
            self._map_mirror.popitem(last=False)
        if self.shots:
            shooters, targets = aim(positions, state.actions.shot, state.neighbours)
            aimed = zip(targets.tolist(), owner[targets].tolist(), strict=True)
            self._targets[state.tick] = dict(zip(shooters.tolist(), aimed, strict=True))
            while len(self._targets) > SHOT_TICKS * self.keep_ticks:
                self._targets.popitem(last=False)
        return state

    def owner_at(self, tick: int) -> np.ndarray | None:
        """(players,) owner node of each player at ``tick`` (a view of the ring, valid until
        the world advances ``keep_ticks`` more ticks), or None if not kept."""
        if not self.first_tick <= tick <= self.last_tick:
            return None
        return self.owner_ring[tick % self.keep_ticks]

    def target_of(self, tick: int, shooter: int) -> tuple[int, int] | None:
        """``(target, its owner)`` of ``shooter``'s shot at ``tick``, or None (no shot, no
        player in range, or the tick no longer kept)."""
        kept = self._targets.get(tick)
        return None if kept is None else kept.get(shooter)

    def tick_at(self, t_s: float) -> int:
        """The kept tick whose state a frame at ``t_s`` uses."""
        return min(max(math.floor(t_s * self.rate_hz), self.first_tick), self.last_tick)

    def mirror_at(self, t_s: float) -> np.ndarray:
        """(nodes, nodes) mirror matrix (players and map entities) at time ``t_s``."""
        return self._mirror[self.tick_at(t_s)]

    def mirrored_players_at(self, node: int, t_s: float) -> int:
        """Players of other zones mirrored onto node ``node`` at ``t_s`` (the mirror matrix
        less the map entities' part)."""
        tick = self.tick_at(t_s)
        return int((self._mirror[tick] - self._map_mirror[tick])[:, node].sum())

    def entities_at(self, node: int, t_s: float, map_entities: bool = True) -> int:
        """Entities node ``node``'s world physics simulates at ``t_s``: the players and map
        entities in its zone plus those mirrored onto it (``map_entities`` false: the
        players only, the platform's ``world_counts_map_entities``)."""
        tick = self.tick_at(t_s)
        owned = int(self._owned[tick][node])
        if not map_entities:
            mirrored = self._mirror[tick][:, node].sum() - self._map_mirror[tick][:, node].sum()
            return owned + int(mirrored)
        owned += int(self._map_owned[tick][node])
        return owned + int(self._mirror[tick][:, node].sum())
