"""``load-aware``: recursive bisection at the players' medians, redone every
``cluster.rebalance_s`` seconds (the borders move between frames, at a migration cost).

Rule.  A rectangle with ``k`` zones to make (the extent with ``k = nodes`` first) is cut in
two across ``axis``, ``k_low = floor(k / 2)`` zones below the cut and ``k - k_low`` above.
The axes alternate with the depth, starting with the extent's longer side (x when x is
strictly longer, else y): the areanode tree's axes (``SV_CreateAreaNode``), so the cut lines
are those of an areanode-like tree moved to where the players are.  The cut sits between the
``m``-th and ``(m+1)``-th of the rectangle's ``n`` players sorted on ``axis``, ``m =
floor(n k_low / k + 1/2)`` (midway between the two coordinates; at the edge of the rectangle
and the first or last player when ``m`` is 0 or ``n``; at ``k_low / k`` of the side when the
rectangle holds no player).  Players with equal coordinates stay together (above the cut), so
a zone can be off by the players stacked on its border.

Timing.  Before any player position (building the zones), the cuts split the area
(``k_low / k`` of each side).  :meth:`LoadAwareZoning.rebalance` recomputes every cut from the
positions of the tick at ``t = 0, rebalance_s, 2 rebalance_s, ...`` (the first tick at or
after each multiple): the balancer sees the true positions of that tick, with no delay and no
cost (it stands for the nodes' reports of their player counts, a few bytes per node per
period).  A player whose owner changes because a border moved is handed over exactly as a
player that walks across a border (:mod:`simsrv.pipeline.cluster.router`: its client state, its
queued packets, ``handoff_bytes``): that is the migration cost.  Map entities change owner with the
border at no cost (every node loads the whole map).
"""

from __future__ import annotations

import math

import numpy as np

from simsrv.pipeline.cluster.zoning.base import ZONINGS, ZoningKind, setting
from simsrv.pipeline.cluster.zoning.cuts import Cut, CutZoning
from simsrv.world.maps.base import GameMap

REBALANCE_S = 1.0
"""Default period of the border moves, s (``cluster.rebalance_s``)."""


def first_axis(low: np.ndarray, high: np.ndarray) -> int:
    """0 (x) when the extent is strictly longer in x, else 1 (y): the areanode rule."""
    size = np.asarray(high, float)[:2] - np.asarray(low, float)[:2]
    return 0 if size[0] > size[1] else 1


def bisect(low: np.ndarray, high: np.ndarray, nodes: int, xy: np.ndarray, axis0: int) -> Cut | int:
    """The cut tree of the rule for players at ``xy`` ((N, 2+), units) in ``[low, high]``."""
    zone = 0

    def split(lo: np.ndarray, hi: np.ndarray, k: int, pts: np.ndarray, depth: int) -> Cut | int:
        nonlocal zone
        if k == 1:
            zone += 1
            return zone - 1
        axis = axis0 if depth % 2 == 0 else 1 - axis0
        k_low = k // 2
        at = cut_position(lo[axis], hi[axis], pts[:, axis], k_low / k)
        below = pts[:, axis] < at
        below_hi, above_lo = hi.copy(), lo.copy()
        below_hi[axis] = above_lo[axis] = at
        low_side = split(lo, below_hi, k_low, pts[below], depth + 1)
        high_side = split(above_lo, hi, k - k_low, pts[~below], depth + 1)
        return Cut(axis, at, low_side, high_side)

    lo, hi = np.asarray(low, float)[:2].copy(), np.asarray(high, float)[:2].copy()
    pts = np.clip(np.asarray(xy, float)[:, :2], lo, hi)
    return split(lo, hi, nodes, pts, 0)


def cut_position(lo: float, hi: float, values: np.ndarray, share: float) -> float:
    """Where to cut ``[lo, hi]`` to leave ``share`` of ``values`` below (module docstring)."""
    n = len(values)
    if n == 0:
        return lo + (hi - lo) * share
    v = np.sort(values)
    m = math.floor(n * share + 0.5)
    left = lo if m == 0 else float(v[m - 1])
    right = hi if m == n else float(v[m])
    return 0.5 * (left + right)


class LoadAwareZoning(CutZoning):
    """Median bisection (module docstring), recomputed every ``period_s`` s."""

    def __init__(
        self, low: np.ndarray, high: np.ndarray, nodes: int, border: float, period_s: float
    ) -> None:
        self.axis0 = first_axis(low, high)
        self.period_s = period_s
        self.moves = 0
        """Border moves so far; the next is due at ``moves * period_s`` s (no float drift)."""
        root = bisect(low, high, nodes, np.zeros((0, 2)), self.axis0)
        super().__init__(low, high, nodes, border, root)

    def rebalance(self, t_s: float, xy: np.ndarray) -> bool:
        if self.nodes == 1 or t_s < self.moves * self.period_s:
            return False
        self.moves = max(self.moves + 1, math.floor(t_s / self.period_s) + 1)
        before = self.cuts()
        self.set_root(bisect(self.low, self.high, self.nodes, xy, self.axis0))
        return self.cuts() != before


def build(game_map: GameMap, nodes: int, border: float, cluster: object = None) -> LoadAwareZoning:
    """The load-aware zones over ``game_map``'s extent; ``cluster.rebalance_s`` (default
    :data:`REBALANCE_S`)."""
    period = setting(cluster, "rebalance_s", REBALANCE_S)
    return LoadAwareZoning(game_map.extent_min, game_map.extent_max, nodes, border, period)


ZONINGS.register("load-aware", ZoningKind("load-aware", build))
