"""Zoning rules: which node owns each point of the map, and which entities lie near another
node's zone.  A rule is a module registered by name in :data:`ZONINGS`: ``grid`` (a static
grid), ``areanode`` (static subtrees of the areanode tree), ``load-aware`` (median bisection
redone every ``cluster.rebalance_s``)."""

from simsrv.pipeline.cluster.zoning import areanode as _areanode  # noqa: F401  (registers "areanode")
from simsrv.pipeline.cluster.zoning import grid as _grid  # noqa: F401  (registers "grid")
from simsrv.pipeline.cluster.zoning import load_aware as _load_aware  # noqa: F401  (registers "load-aware")
from simsrv.pipeline.cluster.zoning.base import ZONINGS, Zoning, ZoningKind

__all__ = ["ZONINGS", "Zoning", "ZoningKind"]
