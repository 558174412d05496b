"""``hotspot``: destinations drawn near the map's concentration areas, by weight, with dwells.

With probability ``hotspot_share`` a destination is a uniform point of an attractor's disc,
the attractor chosen by weight (at the attractor's position at that time, so moving areas
are followed); otherwise it is uniform over the map.  At a destination inside an area the
player dwells ``min_dwell_s``..``max_dwell_s``; elsewhere it pauses up to ``max_pause_s``.
On a map without attractors every destination is uniform (random waypoint).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from simsrv.world.mobility.random_waypoint import settle
from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind
from simsrv.world.mobility.walker import Walker, WalkerParams


class HotspotMobilityParams(WalkerParams):
    """Walkers drawn to concentration areas."""

    hotspot_share: float = Field(0.8, ge=0.0, le=1.0, description="destinations in an area")
    min_dwell_s: float = Field(5.0, ge=0.0, le=36_000.0, description="shortest stay in an area")
    max_dwell_s: float = Field(20.0, ge=0.0, le=36_000.0, description="longest stay in an area")
    settle_s: float = Field(60.0, ge=0.0, le=36_000.0, description="discarded warm-up, s")

    @model_validator(mode="after")
    def _dwell_order(self) -> HotspotMobilityParams:
        if self.max_dwell_s < self.min_dwell_s:
            raise ValueError(
                f"max_dwell_s: must be >= min_dwell_s ({self.min_dwell_s:g}), "
                f"got {self.max_dwell_s:g}"
            )
        return self


class HotspotWalker(Walker):
    """Destinations near attractors chosen by weight (see module docstring)."""

    def destinations(self, idx: np.ndarray) -> np.ndarray:
        areas = self.map.attractors
        out = self.uniform_points(len(idx))
        if len(areas) == 0:
            return out
        hot = self.rng.random(len(idx)) < self.params.hotspot_share
        if hot.any():
            centres = areas.at(self.time_s, self.map.extent_min, self.map.extent_max)
            which = areas.choose(int(hot.sum()), self.rng)
            out[hot] = self.free_points_near(centres[which], areas.radius[which] / np.sqrt(2))
        return out

    def pauses(self, idx: np.ndarray) -> np.ndarray:
        areas = self.map.attractors
        pause = super().pauses(idx)
        if len(areas) == 0:
            return pause
        centres = areas.at(self.time_s, self.map.extent_min, self.map.extent_max)
        near = areas.nearest(self.positions[idx], centres)
        gap = np.hypot(*(self.positions[idx, :2] - centres[near, :2]).T)
        inside = gap <= areas.radius[near]
        p = self.params
        pause[inside] = self.rng.uniform(p.min_dwell_s, p.max_dwell_s, int(inside.sum()))
        return pause


def create_hotspot_walkers(params, game_map, count, speed, rng) -> HotspotWalker:
    """Factory registered as ``hotspot``: creates the walkers and lets them settle."""
    walkers = HotspotWalker(params, game_map, count, speed, rng)
    settle(walkers, params.settle_s)
    return walkers


MOBILITY_MODELS.register(
    "hotspot", MobilityKind("hotspot", HotspotMobilityParams, create_hotspot_walkers)
)
