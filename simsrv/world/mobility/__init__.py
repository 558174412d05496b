"""Mobility models.  Importing this package registers every built-in model."""

from simsrv.world.mobility import quake_bot  # noqa: F401  (registers "quake-bot")
from simsrv.world.mobility.registry import MOBILITY_MODELS, Mobility, MobilityKind, TickActions

__all__ = ["MOBILITY_MODELS", "Mobility", "MobilityKind", "TickActions"]
