"""Where each packet's sender was when it sent the packet (for strategies that look at space).

A packet carries the tick of the world state it was sent in; the world keeps the positions of
recent ticks (:meth:`simsrv.world.world.World.keep_neighbours`).  Positions change only at
client ticks (31.25 per second) while a server runs thousands of frames per second, so
per-player spatial facts (the areanode a player is linked to, the locks its moves need) are
computed once per tick for all players, vectorised (:class:`PerTick`), and each frame only
gathers them for its packets.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

POSITION_HISTORY_TICKS = 2048
"""Ticks of player positions to keep (packets are planned up to ~65 s after sending)."""


class PerTick:
    """Per-player arrays computed once per world tick, gathered per packet.

    ``compute(positions)`` maps the (N, 3) player origins of a tick to a tuple of (N, ...)
    arrays; :meth:`gather` returns those arrays' rows for each packet's (tick, client).  The
    last ``keep`` ticks are cached (packets of a frame come from a few recent ticks).
    """

    def __init__(
        self, world, compute: Callable[[np.ndarray], tuple[np.ndarray, ...]], keep: int = 64
    ) -> None:
        self.world = world
        self.compute = compute
        self.keep = keep
        self._cache: dict[int, tuple[np.ndarray, ...]] = {}

    def at(self, tick: int) -> tuple[np.ndarray, ...]:
        """The arrays of ``tick`` (computed on first use)."""
        arrays = self._cache.get(tick)
        if arrays is None:
            arrays = self._cache[tick] = self.compute(self.world.positions(tick))
            if len(self._cache) > self.keep:
                del self._cache[min(self._cache)]
        return arrays

    def gather(self, messages: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each array's row for every packet (packet order)."""
        ticks, clients = messages["tick"], messages["client"]
        first = int(ticks[0]) if len(ticks) else 0
        if len(ticks) == 0 or (ticks == first).all():
            return tuple(a[clients] for a in self.at(first))
        unique = np.unique(ticks).tolist()
        parts = [self.at(tick) for tick in unique]
        out = tuple(np.empty((len(messages), *a.shape[1:]), a.dtype) for a in parts[0])
        for tick, arrays in zip(unique, parts, strict=True):
            here = ticks == tick
            for target, source in zip(out, arrays, strict=True):
                target[here] = source[clients[here]]
        return out
