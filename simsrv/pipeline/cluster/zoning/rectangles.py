"""Zones that are rectangles: the mirror counts, compiled, each entity tested against the few
zones that can be near it.

Every zoning rule's zones are axis-aligned rectangles (``zone_min``, ``zone_max``, (nodes, 2),
units) that tile the map's extent.  An entity of zone ``i`` is near zone ``j`` when its
distance to ``j``'s rectangle is below the border width (:meth:`Zoning.near`: the gap to the
rectangle on each axis, ``max(min_j - p, p - max_j, 0)``, then ``hypot``).  An entity inside
its own zone's rectangle is at least as far from zone ``j`` as the two rectangles are from each
other, so it is tested only against the zones whose rectangle lies within the border width of
its own (:func:`near_zones`: at most the 8 around it on a grid); an entity outside its zone's
rectangle (beyond the map's extent) is tested against every zone.  The test is the same
arithmetic as :meth:`Zoning.near`, so the counts are those of the dense (entities x zones)
computation.  Cost: O(entities x zones near a zone) per call, no (entities x zones) array.
"""

from __future__ import annotations

import math

import numpy as np

from simsrv.core.compiled import compiled, inlined
from simsrv.pipeline.cluster.zoning.base import Zoning

NEAR_SLACK = 1e-9
"""Relative widening of the border when listing the zones near a zone (a guard against
rounding: listing one zone too many costs a test, never a count)."""


class RectangleZoning(Zoning):
    """A zoning whose zones are the rectangles ``zone_min``, ``zone_max`` ((nodes, 2),
    units), with ``border`` units; a subclass sets them with :meth:`set_rectangles`."""

    zone_min: np.ndarray
    zone_max: np.ndarray
    border: float

    def set_rectangles(self, zone_min: np.ndarray, zone_max: np.ndarray) -> None:
        """The zones' rectangles (and the zones near each, for :meth:`mirror_counts`)."""
        self.zone_min, self.zone_max = zone_min, zone_max
        self._near = near_zones(zone_min, zone_max, self.border)

    def near(self, xy: np.ndarray) -> np.ndarray:
        p = xy[:, None, :2]
        gap = np.maximum(np.maximum(self.zone_min[None] - p, p - self.zone_max[None]), 0.0)
        return np.hypot(gap[..., 0], gap[..., 1]) < self.border

    def mirror_counts(self, xy: np.ndarray, owner: np.ndarray) -> np.ndarray:
        if self.nodes == 1 or len(xy) == 0:
            return np.zeros((self.nodes, self.nodes), dtype=np.int64)
        return mirror_counts(xy, owner, self.zone_min, self.zone_max, self.border, self._near)


def near_zones(zone_min: np.ndarray, zone_max: np.ndarray, border: float) -> tuple:
    """``(start, zones)``: the zones whose rectangle lies within ``border`` (widened by
    :data:`NEAR_SLACK`) of zone ``i``'s, other than ``i``, are ``zones[start[i]:start[i+1]]``
    (ascending)."""
    gap = np.maximum(
        np.maximum(zone_min[None] - zone_max[:, None], zone_min[:, None] - zone_max[None]), 0.0
    )
    near = np.hypot(gap[..., 0], gap[..., 1]) <= border * (1 + NEAR_SLACK)
    np.fill_diagonal(near, False)
    start = np.concatenate([[0], np.cumsum(near.sum(axis=1))]).astype(np.int64)
    return start, np.nonzero(near)[1].astype(np.int64)


def mirror_counts(
    xy: np.ndarray,
    owner: np.ndarray,
    zone_min: np.ndarray,
    zone_max: np.ndarray,
    border: float,
    near: tuple,
) -> np.ndarray:
    """(nodes, nodes) counts: ``[i, j]`` entities of zone ``i`` (``owner``) within ``border``
    of zone ``j != i``'s rectangle, for (N, 2+) positions ``xy``; ``near`` from
    :func:`near_zones` on the same rectangles."""
    start, zones = near
    return _mirror_counts(
        np.ascontiguousarray(xy[:, :2], dtype=np.float64),
        np.ascontiguousarray(owner, dtype=np.int64),
        np.ascontiguousarray(zone_min, dtype=np.float64),
        np.ascontiguousarray(zone_max, dtype=np.float64),
        float(border),
        start,
        zones,
    )


@compiled
def _mirror_counts(xy, owner, zone_min, zone_max, border, start, zones):  # pragma: no cover
    nodes = len(zone_min)
    counts = np.zeros((nodes, nodes), np.int64)
    for n in range(len(xy)):
        x, y = xy[n, 0], xy[n, 1]
        i = owner[n]
        inside = zone_min[i, 0] <= x <= zone_max[i, 0] and zone_min[i, 1] <= y <= zone_max[i, 1]
        if inside:
            for k in range(start[i], start[i + 1]):
                j = zones[k]
                if _near(x, y, zone_min[j, 0], zone_min[j, 1], zone_max[j, 0], zone_max[j, 1],
                         border):  # fmt: skip
                    counts[i, j] += 1
        else:
            for j in range(nodes):
                if j != i and _near(x, y, zone_min[j, 0], zone_min[j, 1], zone_max[j, 0],
                                    zone_max[j, 1], border):  # fmt: skip
                    counts[i, j] += 1
    return counts


@inlined
def _near(x, y, x0, y0, x1, y1, border):  # pragma: no cover - compiled
    """Whether ``(x, y)`` is closer than ``border`` to the rectangle ``[x0, x1] x [y0, y1]``:
    ``hypot`` of the gaps, as :meth:`RectangleZoning.near` computes it.  A gap of 0 on one
    axis makes ``hypot`` the other gap exactly, and ``hypot`` is never below either gap, so
    only a point diagonal to the rectangle within ``border`` on both axes needs it."""
    gx = max(max(x0 - x, x - x1), 0.0)
    gy = max(max(y0 - y, y - y1), 0.0)
    if gx >= border or gy >= border:
        return False
    if gx == 0.0 or gy == 0.0:
        return max(gx, gy) < border
    return math.hypot(gx, gy) < border
