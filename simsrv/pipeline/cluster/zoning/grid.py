"""``grid``: a static grid of equal rectangular zones over the map's extent (xy).

``nodes`` zones in ``rows x cols`` with ``rows * cols = nodes`` and the grid as square as the
divisors allow (4 -> 2 x 2, 8 -> 2 x 4, 7 -> 1 x 7); columns split x, rows split y.  A point
on a zone boundary belongs to the zone above it (floor); points outside the extent belong to
the nearest zone.  Zones never move.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
from simsrv.pipeline.cluster.zoning.base import ZONINGS, ZoningKind
from simsrv.pipeline.cluster.zoning.rectangles import RectangleZoning
from simsrv.world.maps.base import GameMap


def grid_shape(nodes: int) -> tuple[int, int]:
    """``(rows, cols)``: the most square factorisation of ``nodes`` with ``rows <= cols``."""
    rows = max(r for r in range(1, int(nodes**0.5) + 1) if nodes % r == 0)
    return rows, nodes // rows


class GridZoning(RectangleZoning):
    """Equal rectangles over ``[low, high]`` (xy, units); ``border`` units."""

    def __init__(self, low: np.ndarray, high: np.ndarray, nodes: int, border: float) -> None:
        self.nodes = nodes
        self.rows, self.cols = grid_shape(nodes)
        self.low = np.asarray(low, dtype=float)[:2]
        self.size = (np.asarray(high, dtype=float)[:2] - self.low) / (self.cols, self.rows)
        self.border = border
        index = np.arange(nodes)
        col, row = index % self.cols, index // self.cols
        zone_min = self.low + np.stack([col, row], axis=1) * self.size
        self.set_rectangles(zone_min, zone_min + self.size)

    def zone_of(self, xy: np.ndarray) -> np.ndarray:
        return _zone_of(np.asarray(xy, dtype=np.float64), self.low, self.size, self.rows, self.cols)


@compiled
def _zone_of(xy, low, size, rows, cols):  # pragma: no cover - compiled
    """The cell of each point, ``floor((p - low) / size)``, clipped to the grid."""
    zone = empty(len(xy), np.int64)
    for n in range(len(xy)):
        col = min(max(int(np.floor((xy[n, 0] - low[0]) / size[0])), 0), cols - 1)
        row = min(max(int(np.floor((xy[n, 1] - low[1]) / size[1])), 0), rows - 1)
        zone[n] = row * cols + col
    return zone


def build(game_map: GameMap, nodes: int, border: float, cluster: object = None) -> GridZoning:
    """The grid over ``game_map``'s extent."""
    return GridZoning(game_map.extent_min, game_map.extent_max, nodes, border)


ZONINGS.register("grid", ZoningKind("grid", build))
