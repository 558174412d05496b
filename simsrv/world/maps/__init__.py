"""Map kinds.  Importing this package registers every built-in kind."""

from simsrv.world.maps import cube, hotspot  # noqa: F401  (register themselves)
from simsrv.world.maps.base import GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind

__all__ = ["GameMap", "MAP_KINDS", "MapKind"]
