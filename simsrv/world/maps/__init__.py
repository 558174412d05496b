"""Map kinds.  Importing this package registers every built-in kind."""

from simsrv.world.maps import (  # noqa: F401  (register themselves)
    arena,
    bsp_map,
    cube,
    death32c_like,
    file,
    hotspots,
    rooms,
    two_floor,
)
from simsrv.world.maps.base import GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind

__all__ = ["GameMap", "MAP_KINDS", "MapKind"]
