"""``random-waypoint``: uniform destinations, per-player speed with a floor above zero, pauses.

The classic model has a known start-up transient (players drift towards the centre and slow
down over time); :attr:`RandomWaypointParams.settle_s` simulated seconds are run when the
players are created and discarded, so a run starts near the stationary distribution.  The
minimum speed (``min_speed_fraction`` > 0) avoids the model's speed decay to zero.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind
from simsrv.world.mobility.walker import Walker, WalkerParams

SETTLE_STEP_S = 0.1
"""Time step of the discarded settling phase, s."""


class RandomWaypointParams(WalkerParams):
    """Random-waypoint walkers."""

    settle_s: float = Field(60.0, ge=0.0, le=36_000.0, description="discarded warm-up, s")


class RandomWaypoint(Walker):
    """Destinations uniform over the free floor."""

    def destinations(self, idx: np.ndarray) -> np.ndarray:
        return self.uniform_points(len(idx))


def create_random_waypoint(params, game_map, count, speed, rng) -> RandomWaypoint:
    """Factory registered as ``random-waypoint``: creates the walkers and lets them settle."""
    walkers = RandomWaypoint(params, game_map, count, speed, rng)
    settle(walkers, params.settle_s)
    return walkers


def settle(walkers: Walker, seconds: float) -> None:
    """Run ``seconds`` of motion in ``SETTLE_STEP_S`` steps and forget the clock."""
    for _ in range(int(round(seconds / SETTLE_STEP_S))):
        walkers.step(SETTLE_STEP_S)
    walkers.time_s = 0.0


MOBILITY_MODELS.register(
    "random-waypoint",
    MobilityKind("random-waypoint", RandomWaypointParams, create_random_waypoint),
)
