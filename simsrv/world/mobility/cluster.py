"""``cluster``: VAST's cluster movement model [MODEL §9].

``ceil(1.5 ln N)`` attractor points, uniform over the map (seeded, drawn by the model: they
are the model's, not the map's concentration areas).  At each waypoint a player heads for a
random attractor with probability ``jump_probability`` (0.2), else for the attractor nearest
to it; the destination is uniform in the box of half-side ``sqrt(W x H / attractors) / 3``
around that attractor.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from simsrv.world.mobility.random_waypoint import settle
from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind
from simsrv.world.mobility.walker import Walker, WalkerParams
from simsrv.world.spawn import spawn_positions


class ClusterParams(WalkerParams):
    """VAST cluster movement."""

    jump_probability: float = Field(
        0.2, ge=0.0, le=1.0, description="chance to head for a random attractor"
    )
    attractors_per_ln_n: float = Field(1.5, gt=0.0, le=100.0, description="attractors / ln N")
    settle_s: float = Field(60.0, ge=0.0, le=36_000.0, description="discarded warm-up, s")


class ClusterWalker(Walker):
    """Walkers moving between VAST attractors (see module docstring)."""

    def __init__(self, params, game_map, count, speed, rng) -> None:
        k = max(1, math.ceil(params.attractors_per_ln_n * math.log(max(count, 2))))
        self.points = spawn_positions(game_map, k, rng)  # the attractors, (k, 3)
        width, depth = (game_map.extent_max - game_map.extent_min)[:2]
        self.half_side = math.sqrt(width * depth / k) / 3
        super().__init__(params, game_map, count, speed, rng)

    def destinations(self, idx: np.ndarray) -> np.ndarray:
        n = len(idx)
        nearest = np.argmin(
            ((self.positions[idx, None, :2] - self.points[None, :, :2]) ** 2).sum(axis=2), axis=1
        )
        jump = self.rng.random(n) < self.params.jump_probability
        which = np.where(jump, self.rng.integers(0, len(self.points), n), nearest)
        return self.free_points_near(self.points[which], np.full(n, self.half_side))


def create_cluster_walkers(params, game_map, count, speed, rng) -> ClusterWalker:
    """Factory registered as ``cluster``: creates the walkers and lets them settle."""
    walkers = ClusterWalker(params, game_map, count, speed, rng)
    settle(walkers, params.settle_s)
    return walkers


MOBILITY_MODELS.register("cluster", MobilityKind("cluster", ClusterParams, create_cluster_walkers))
