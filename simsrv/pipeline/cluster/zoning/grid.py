"""``grid``: a static grid of equal rectangular zones over the map's extent (xy).

``nodes`` zones in ``rows x cols`` with ``rows * cols = nodes`` and the grid as square as the
divisors allow (4 -> 2 x 2, 8 -> 2 x 4, 7 -> 1 x 7); columns split x, rows split y.  A point
on a zone boundary belongs to the zone above it (floor); points outside the extent belong to
the nearest zone.  Zones never move.
"""

from __future__ import annotations

import numpy as np

from simsrv.pipeline.cluster.zoning.base import ZONINGS, Zoning, ZoningKind
from simsrv.world.maps.base import GameMap


def grid_shape(nodes: int) -> tuple[int, int]:
    """``(rows, cols)``: the most square factorisation of ``nodes`` with ``rows <= cols``."""
    rows = max(r for r in range(1, int(nodes**0.5) + 1) if nodes % r == 0)
    return rows, nodes // rows


class GridZoning(Zoning):
    """Equal rectangles over ``[low, high]`` (xy, units); ``border`` units."""

    def __init__(self, low: np.ndarray, high: np.ndarray, nodes: int, border: float) -> None:
        self.nodes = nodes
        self.rows, self.cols = grid_shape(nodes)
        self.low = np.asarray(low, dtype=float)[:2]
        self.size = (np.asarray(high, dtype=float)[:2] - self.low) / (self.cols, self.rows)
        self.border = border
        index = np.arange(nodes)
        col, row = index % self.cols, index // self.cols
        self.zone_min = self.low + np.stack([col, row], axis=1) * self.size
        self.zone_max = self.zone_min + self.size

    def zone_of(self, xy: np.ndarray) -> np.ndarray:
        cell = np.floor((xy[:, :2] - self.low) / self.size).astype(np.int64)
        col = np.clip(cell[:, 0], 0, self.cols - 1)
        row = np.clip(cell[:, 1], 0, self.rows - 1)
        return row * self.cols + col

    def near(self, xy: np.ndarray) -> np.ndarray:
        p = xy[:, None, :2]
        gap = np.maximum(np.maximum(self.zone_min[None] - p, p - self.zone_max[None]), 0.0)
        return np.hypot(gap[..., 0], gap[..., 1]) < self.border


def build(game_map: GameMap, nodes: int, border: float, cluster: object = None) -> GridZoning:
    """The grid over ``game_map``'s extent."""
    return GridZoning(game_map.extent_min, game_map.extent_max, nodes, border)


ZONINGS.register("grid", ZoningKind("grid", build))
