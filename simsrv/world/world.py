"""The world: a map plus players moved by a mobility model, advanced one client tick at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.registry import Mobility, TickActions
from simsrv.world.proximity import range_counts, visible_counts


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
    actions:
        What each player did this tick.
    """

    tick: int
    positions: np.ndarray
    range_count: np.ndarray
    visible_count: np.ndarray
    actions: TickActions


class World:
    """Map + players; :meth:`advance` moves everyone one tick and measures proximity."""

    def __init__(self, game_map: GameMap, mobility: Mobility, action_range: float) -> None:
        self.map = game_map
        self.mobility = mobility
        self.action_range = action_range
        self.tick = 0

    @property
    def players(self) -> int:
        """Number of players."""
        return len(self.mobility.positions)

    @property
    def entity_count(self) -> int:
        """Entities simulated by world physics: players plus map entities."""
        return self.players + len(self.map.entities)

    def advance(self, dt_s: float) -> TickState:
        """Move every player by one tick of ``dt_s`` seconds and return the new state."""
        actions = self.mobility.step(dt_s)
        positions = self.mobility.positions.copy()
        state = TickState(
            tick=self.tick,
            positions=positions,
            range_count=range_counts(positions, self.map.entities, self.action_range),
            visible_count=visible_counts(self.map, positions),
            actions=actions,
        )
        self.tick += 1
        return state
