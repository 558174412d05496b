"""The world: a map plus players moved by a mobility model, advanced one client tick at a time."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from simsrv.world.combat import Combat
from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.registry import Mobility, TickActions
from simsrv.world.proximity import Neighbours, neighbour_lists
from simsrv.world.visibility import visibility


@dataclass(frozen=True)
class TickState:
    """The world after one client tick.

    Attributes
    ----------
    tick:
        Tick index (time ``tick / rate_hz``).
    positions:
        (N, 3) player origins, units (a copy: later ticks do not change it).
    range_count:
        (N,) entities in each player's action range (self excluded).
    visible_count:
        (N,) entities in each player's visible set (self excluded).
    pvs_rooms:
        (N,) rooms in each player's PVS row (the PVS work of its reply).
    killed:
        (N,) bool, players killed by this tick's shots (they respawn later:
        :mod:`simsrv.world.combat`; all False without ``combat``).
    neighbours:
        Each player's action-range list ``L_a`` (``range_count`` is its length).
    actions:
        What each player did this tick.
    """

    tick: int
    positions: np.ndarray
    range_count: np.ndarray
    visible_count: np.ndarray
    pvs_rooms: np.ndarray
    killed: np.ndarray
    actions: TickActions
    neighbours: Neighbours


class World:
    """Map + players; :meth:`advance` moves everyone one tick and measures proximity."""

    def __init__(
        self,
        game_map: GameMap,
        mobility: Mobility,
        action_range: float,
        visibility_range: float = 0.0,
        combat: Combat | None = None,
    ) -> None:
        self.map = game_map
        self.mobility = mobility
        self.action_range = action_range
        self.visibility_range = visibility_range
        self.combat = combat
        self.tick = 0
        self._history: OrderedDict[int, tuple[Neighbours, np.ndarray]] = OrderedDict()
        self._history_ticks = 0

    def keep_neighbours(self, ticks: int) -> None:
        """Remember the action-range lists and positions of the last ``ticks`` ticks (for
        :meth:`neighbours` and :meth:`positions`).

        Strategies that need where players were call this: a frame's packets carry the tick of
        the world state they were sent in, and the world is generated ahead of the server.
        """
        self._history_ticks = max(self._history_ticks, ticks)

    def forget_before(self, tick: int) -> None:
        """Drop the kept lists and positions of the ticks before ``tick`` (no packet still to be
        read carries them): the history then spans the packets in flight and queued, not the
        :meth:`keep_neighbours` ticks, so a long run keeps what a short one does."""
        history = self._history
        while history and next(iter(history)) < tick:
            history.popitem(last=False)

    def neighbours(self, tick: int) -> Neighbours:
        """The action-range lists at ``tick`` (kept for the last :meth:`keep_neighbours` ticks)."""
        return self._kept(tick)[0]

    def positions(self, tick: int) -> np.ndarray:
        """(N, 3) player origins at ``tick`` (kept for the last :meth:`keep_neighbours` ticks)."""
        return self._kept(tick)[1]

    def _kept(self, tick: int) -> tuple[Neighbours, np.ndarray]:
        try:
            return self._history[tick]
        except KeyError:
            raise LookupError(
                f"tick {tick} is outside the kept history "
                f"({self._history_ticks} ticks up to {self.tick - 1})"
            ) from None

    @property
    def players(self) -> int:
        """Number of players."""
        return len(self.mobility.positions)

    @property
    def entity_count(self) -> int:
        """Entities simulated by world physics: players plus map entities."""
        return self.players + len(self.map.entities)

    def physics_entities(self, map_entities: bool) -> int:
        """The entities world physics charges per entity: :attr:`entity_count`, or the
        players only (``map_entities`` false: the platform's ``world_counts_map_entities``)."""
        return self.entity_count if map_entities else self.players

    def advance(self, dt_s: float) -> TickState:
        """Move every player by one tick of ``dt_s`` seconds and return the new state."""
        if self.combat is not None:
            self.combat.respawn(self.mobility.positions)
        actions = self.mobility.step(dt_s)
        self.map.teleport(self.mobility.positions)
        if self.combat is not None:
            self.combat.hold(self.mobility.positions, actions)
        positions = self.mobility.positions.copy()
        neighbours = neighbour_lists(positions, self.map.entities, self.action_range)
        if self.combat is not None:
            killed = self.combat.shoot(positions, actions.shot, neighbours)
        else:
            killed = np.zeros(len(positions), dtype=bool)
        seen = visibility(self.map, positions, self.visibility_range)
        state = TickState(
            tick=self.tick,
            positions=positions,
            range_count=neighbours.counts,
            visible_count=seen.entities,
            pvs_rooms=seen.rooms,
            killed=killed,
            actions=actions,
            neighbours=neighbours,
        )
        if self._history_ticks:
            self._history[self.tick] = (neighbours, positions)
            while len(self._history) > self._history_ticks:
                self._history.popitem(last=False)
        self.tick += 1
        return state
