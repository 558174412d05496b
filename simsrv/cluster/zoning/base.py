"""The zoning interface and its registry.

A :class:`Zoning` maps xy positions (units) to a node (zone) number ``0..nodes-1`` and counts
the entities near another zone (to mirror on its node).  Distances are measured in the xy plane
only: zones are vertical columns over the map (a rule on z would be a new zoning).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simsrv.registry import Registry
from simsrv.world.maps.base import GameMap


class Zoning:
    """Zones of ``nodes`` nodes over a map (override :meth:`zone_of` and :meth:`near`)."""

    nodes: int

    def zone_of(self, xy: np.ndarray) -> np.ndarray:
        """(N,) zone of each (N, 2) xy position, units."""
        raise NotImplementedError

    def near(self, xy: np.ndarray) -> np.ndarray:
        """(N, nodes) bool: position ``n`` is closer than the border width to zone ``j``
        (its own zone included)."""
        raise NotImplementedError

    def mirror_counts(self, xy: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """(nodes, nodes) int matrix: entry ``[i, j]`` counts the entities of zone ``i``
        closer than the border width to zone ``j != i`` (mirrored from node i on node j;
        the diagonal is 0)."""
        counts = np.zeros((self.nodes, self.nodes), dtype=np.int64)
        if self.nodes == 1 or len(xy) == 0:
            return counts
        near = self.near(xy)
        near[np.arange(len(xy)), owner] = False
        for j in range(self.nodes):
            counts[:, j] = np.bincount(owner[near[:, j]], minlength=self.nodes)
        return counts


@dataclass(frozen=True)
class ZoningKind:
    """A registered zoning rule: ``build(game_map, nodes, border_width)``."""

    name: str
    build: Callable[[GameMap, int, float], Zoning]


ZONINGS: Registry[ZoningKind] = Registry("zoning")
