"""The zoning interface and its registry.

A :class:`Zoning` maps xy positions (units) to a node (zone) number ``0..nodes-1`` and counts
the entities near another zone (to mirror on its node).  Distances are measured in the xy plane
only: zones are vertical columns over the map (a rule on z would be a new zoning).

A static rule's zones never move.  A dynamic rule moves its borders in :meth:`Zoning.rebalance`,
which the cluster calls once per client tick, before it asks the tick's owners (so a border
moves between two ticks, hence between frames: every frame sees one zoning per tick).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsrv.core.registry import Registry


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

    def rebalance(self, t_s: float, xy: np.ndarray) -> bool:
        """Move the borders if the rule does so at ``t_s`` s, given the players' (N, 2+)
        positions then; True if they moved.  Static rules never move (False)."""
        return False

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
    """A registered zoning rule: ``build(game_map, nodes, border_width, cluster=None)``;
    ``cluster`` is the scenario's ``[cluster]`` section (its rule-specific fields, e.g.
    ``rebalance_s``); None gives the rule's defaults."""

    name: str
    build: Callable[..., Zoning]


def setting(cluster: Any, name: str, default: Any) -> Any:
    """Field ``name`` of the ``[cluster]`` section ``cluster``, or ``default`` without one."""
    return default if cluster is None else getattr(cluster, name)


ZONINGS: Registry[ZoningKind] = Registry("zoning")
