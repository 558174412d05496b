"""Where each packet's sender was when it sent the packet (for strategies that look at space).

A packet carries the tick of the world state it was sent in; the world keeps the positions of
recent ticks (:meth:`simsrv.world.world.World.keep_neighbours`).
"""

from __future__ import annotations

import numpy as np

POSITION_HISTORY_TICKS = 2048
"""Ticks of player positions to keep (packets are planned up to ~65 s after sending)."""


def sender_origins(world, messages: np.ndarray) -> np.ndarray:
    """(N, 3) origin of each packet's sender at the packet's tick, units."""
    origins = np.empty((len(messages), 3))
    ticks = messages["tick"]
    for tick in np.unique(ticks).tolist():
        here = ticks == tick
        origins[here] = world.positions(tick)[messages["client"][here]]
    return origins
