"""Zones as the leaves of a tree of axis-aligned cuts (a k-d partition of the map's extent).

Shared by the ``areanode`` and ``load-aware`` rules.  A :class:`Cut` splits a rectangle at
``x = at`` (``axis`` 0) or ``y = at`` (``axis`` 1); a point on the cut belongs to the ``high``
side (as the grid's floor rule); points outside the extent belong to the zone whose rectangle,
extended outwards, holds them: the nearest zone.  The leaves (zone numbers) tile the extent:
every point of the plane is in exactly one zone, and each zone is one rectangle
(``zone_min``, ``zone_max``, units), so :meth:`CutZoning.near` measures the distance to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
from simsrv.pipeline.cluster.zoning.rectangles import RectangleZoning


@dataclass(frozen=True)
class Cut:
    """An inner node: ``low`` below ``at`` on ``axis`` (0 = x, 1 = y), ``high`` at or above;
    each side is a :class:`Cut` or a zone number."""

    axis: int
    at: float
    low: Cut | int
    high: Cut | int


class CutZoning(RectangleZoning):
    """The zones of a cut tree ``root`` over ``[low, high]`` (xy, units); ``border`` units."""

    def __init__(
        self, low: np.ndarray, high: np.ndarray, nodes: int, border: float, root: Cut | int
    ) -> None:
        self.nodes = nodes
        self.border = border
        self.low = np.asarray(low, dtype=float)[:2].copy()
        self.high = np.asarray(high, dtype=float)[:2].copy()
        self.set_root(root)

    def set_root(self, root: Cut | int) -> None:
        """Use the tree ``root`` (its leaves must be the zones ``0..nodes-1``, once each)."""
        self.root = root
        axis, at, low, high = [], [], [], []
        zone_min = np.full((self.nodes, 2), np.nan)
        zone_max = np.full((self.nodes, 2), np.nan)

        def walk(node: Cut | int, lo: np.ndarray, hi: np.ndarray) -> int:
            """Code of ``node``: its row (>= 0) or ``-zone - 1``."""
            if not isinstance(node, Cut):
                if not np.isnan(zone_min[node, 0]):
                    raise ValueError(f"zone {node} is two leaves of the cut tree")
                zone_min[node], zone_max[node] = lo, hi
                return -int(node) - 1
            row = len(axis)
            axis.append(node.axis)
            at.append(node.at)
            low.append(0)
            high.append(0)
            below_hi, above_lo = hi.copy(), lo.copy()
            below_hi[node.axis] = above_lo[node.axis] = node.at
            low[row] = walk(node.low, lo, below_hi)
            high[row] = walk(node.high, above_lo, hi)
            return row

        self._root_code = walk(root, self.low, self.high)
        if np.isnan(zone_min).any():
            raise ValueError("a zone is not a leaf of the cut tree")
        self.axis = np.array(axis, dtype=np.int64)
        self.at = np.array(at, dtype=float)
        self.child_low = np.array(low, dtype=np.int64)
        self.child_high = np.array(high, dtype=np.int64)
        self.set_rectangles(zone_min, zone_max)

    def zone_of(self, xy: np.ndarray) -> np.ndarray:
        return _descend(
            np.asarray(xy, dtype=np.float64),
            self._root_code,
            self.axis,
            self.at,
            self.child_low,
            self.child_high,
        )

    def cuts(self) -> list[tuple[int, float]]:
        """``(axis, at)`` of every cut, depth first (low side first): equal lists mean equal
        borders."""
        return list(zip(self.axis.tolist(), self.at.tolist(), strict=True))


@compiled
def _descend(xy, root, axis, at, child_low, child_high):  # pragma: no cover - compiled
    """The zone of each point: down the cut tree from ``root`` (a row, or ``-zone - 1``),
    to the ``high`` child when the point's coordinate is at or above the cut."""
    zone = empty(len(xy), np.int64)
    for n in range(len(xy)):
        code = root
        while code >= 0:
            code = child_high[code] if xy[n, axis[code]] >= at[code] else child_low[code]
        zone[n] = -code - 1
    return zone
