"""``team``: players move in squads that follow a leader.

Players ``0, s, 2s, ...`` (squad size ``s``) are leaders and walk as random waypoint walkers;
each follower heads for a point at a fixed offset (uniform within ``spread`` units, drawn
once) from its leader's current position, re-aimed every tick, and pauses only when its
leader pauses.  Followers start around their leader.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from simsrv.world.mobility.random_waypoint import settle
from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind, TickActions
from simsrv.world.mobility.walker import Walker, WalkerParams


class TeamParams(WalkerParams):
    """Squads following leaders."""

    squad_size: int = Field(4, ge=1, le=10_000, description="players per squad, leader included")
    spread: float = Field(96.0, ge=0.0, le=65536.0, description="follower offset from leader")
    settle_s: float = Field(60.0, ge=0.0, le=36_000.0, description="discarded warm-up, s")


class TeamWalker(Walker):
    """Leaders walk random waypoints; followers keep their offset from the leader."""

    def __init__(self, params, game_map, count, speed, rng) -> None:
        everyone = np.arange(count)
        self.leader = everyone - everyone % params.squad_size
        self.offset = rng.uniform(-params.spread, params.spread, size=(count, 2))
        self.offset[self.leader == everyone] = 0.0
        super().__init__(params, game_map, count, speed, rng)
        self.speed = np.maximum(self.speed, self.speed[self.leader])  # followers keep up

    def start_positions(self, count: int) -> np.ndarray:
        leaders = super().start_positions(count)[self.leader]
        return self.map.standing_at(self.free_points_near(leaders, self.params.spread))

    def destinations(self, idx: np.ndarray) -> np.ndarray:
        out = self.uniform_points(len(idx))
        follower = self.leader[idx] != idx
        lead = self.leader[idx[follower]]
        out[follower] = self.positions[lead, :2] + self.offset[idx[follower]]
        return out

    def step(self, dt_s: float) -> TickActions:
        followers = np.flatnonzero(self.leader != np.arange(len(self.leader)))
        self.target[followers] = self.destinations(followers)  # re-aim at the moving leader
        self.pause_s[followers] = self.pause_s[self.leader[followers]]
        return super().step(dt_s)

    def pauses(self, idx: np.ndarray) -> np.ndarray:
        pause = super().pauses(idx)
        pause[self.leader[idx] != idx] = 0.0  # a follower waits only with its leader
        return pause


def create_team_walkers(params, game_map, count, speed, rng) -> TeamWalker:
    """Factory registered as ``team``: creates the squads and lets them settle."""
    walkers = TeamWalker(params, game_map, count, speed, rng)
    settle(walkers, params.settle_s)
    return walkers


MOBILITY_MODELS.register("team", MobilityKind("team", TeamParams, create_team_walkers))
