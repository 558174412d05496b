"""Zoning rules: which node owns each point of the map, and which entities lie near another
node's zone.  A rule is a module registered by name in :data:`ZONINGS` (``grid`` here; an
areanode or load-aware rule is a new module beside it)."""

from simsrv.cluster.zoning import grid as _grid  # noqa: F401  (registers "grid")
from simsrv.cluster.zoning.base import ZONINGS, Zoning, ZoningKind

__all__ = ["ZONINGS", "Zoning", "ZoningKind"]
