"""Mobility models.  Importing this package registers every built-in model."""

from simsrv.world.mobility import (  # noqa: F401  (register themselves)
    cluster,
    hotspot,
    quake_bot,
    random_waypoint,
    replay,
    team,
)
from simsrv.world.mobility.registry import MOBILITY_MODELS, Mobility, MobilityKind, TickActions

__all__ = ["MOBILITY_MODELS", "Mobility", "MobilityKind", "TickActions"]
