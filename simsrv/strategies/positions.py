"""Where each packet's sender was when it sent the packet (for strategies that look at space).

A packet carries the tick of the world state it was sent in; the world keeps the positions of
recent ticks (:meth:`simsrv.world.world.World.keep_neighbours`).  Positions change only at
client ticks (31.25 per second) while a server runs thousands of frames per second, so
per-player spatial facts (the areanode a player is linked to, the locks its moves need) are
computed once per tick for all players, in one compiled call (:class:`PerTick`), and each
frame only gathers them for its packets, inside the strategy's compiled planning call
(:func:`slot_of`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simsrv.core.compiled import compiled, inlined
from simsrv.core.uninitialised import empty

POSITION_HISTORY_TICKS = 2048
"""Ticks of player positions to keep (packets are planned up to ~65 s after sending)."""


class PerTick:
    """Per-player arrays computed once per world tick and kept for recent ticks.

    ``compute(positions)`` maps the (N, 3) player origins of a tick to a tuple of (N, ...)
    arrays.  They are kept in a ring of ``keep`` slots: :attr:`ticks` (keep,) int64 holds
    the tick of each slot (-1: empty) and :attr:`tables` one (keep, N, ...) array per
    computed array, so compiled code finds a packet's row as ``table[slot_of(ticks, tick),
    client]``.  :meth:`load` fills the slots of the ticks a frame needs; a tick evicts the
    oldest tick the frame does not need, and the ring grows when a frame needs more ticks
    than it has slots.  Which ticks happen to be kept never changes a result.
    """

    def __init__(
        self, world, compute: Callable[[np.ndarray], tuple[np.ndarray, ...]], keep: int = 64
    ) -> None:
        self.world = world
        self.compute = compute
        self.ticks = np.full(keep, -1, np.int64)
        self.tables: tuple[np.ndarray, ...] = ()

    def load(self, ticks: np.ndarray) -> None:
        """Make every tick of ``ticks`` present in the ring.

        One compiled call (:func:`placement`) finds the ticks not yet present and the slot of
        each; when all are present (the usual case) that is all it costs."""
        while True:
            missing, slots = placement(self.ticks, ticks)
            if not len(missing):
                return
            for tick, slot in zip(missing.tolist(), slots.tolist(), strict=True):
                arrays = self.compute(self.world.positions(tick))
                if not self.tables:
                    self.tables = tuple(
                        np.zeros((len(self.ticks), *a.shape), a.dtype) for a in arrays
                    )
                grown = slot < 0
                if grown:  # no slot is free: the first of the new ones
                    slot = len(self.ticks)
                    self._grow()
                self.ticks[slot] = tick
                for table, array in zip(self.tables, arrays, strict=True):
                    table[slot] = array
                if grown:
                    break  # place the rest in the grown ring
            else:
                return

    def at(self, tick: int) -> tuple[np.ndarray, ...]:
        """The arrays of ``tick`` (computed on first use)."""
        self.load(np.array([tick]))
        slot = int(np.flatnonzero(self.ticks == tick)[0])
        return tuple(table[slot] for table in self.tables)

    def _grow(self) -> None:
        keep = len(self.ticks)
        self.ticks = np.concatenate([self.ticks, np.full(keep, -1, np.int64)])
        self.tables = tuple(np.concatenate([t, np.zeros_like(t)]) for t in self.tables)


def ring_arguments(
    ring: PerTick | None, ticks: np.ndarray, no_ring: tuple[np.ndarray, tuple]
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """A compiled loop's ring arguments: the slot ticks and the tables of ``ring`` with every
    tick of ``ticks`` loaded, or ``no_ring`` (placeholders never read) when the strategy keeps
    none or has nothing loaded yet."""
    if ring is not None and len(ticks):
        ring.load(ticks)
    return (ring.ticks, ring.tables) if ring is not None and ring.tables else no_ring


@inlined
def slot_of(ticks, tick, hint):
    """The slot of ``tick`` in a :class:`PerTick` ring whose slot ticks are ``ticks``, or -1
    when it is not there; ``hint`` (a slot, or -1) is tried first."""
    if 0 <= hint < len(ticks) and ticks[hint] == tick:
        return hint
    for slot in range(len(ticks)):
        if ticks[slot] == tick:
            return slot
    return -1


@compiled
def placement(ring_ticks, ticks):
    """Where :meth:`PerTick.load` puts the ticks (>= 0) of ``ticks`` missing from a ring whose
    slot ticks are ``ring_ticks``: ``(missing, slots)``, the distinct missing ticks ascending
    and the slot of each, (K,) int64 each (both empty when every tick is present).  Each
    missing tick, in order, takes the slot holding the oldest tick (empty slots first, -1)
    that ``ticks`` does not need, the lowest slot on ties; -1 from the first tick that finds
    no such slot on (the ring must grow).  Plain loops (no sort): a first compile of ~1 s."""
    slots_n = len(ring_ticks)
    needed = np.zeros(slots_n, np.bool_)
    missing = empty(0, np.int64)
    count = 0
    hint = -1
    for i in range(len(ticks)):
        tick = ticks[i]
        slot = slot_of(ring_ticks, tick, hint)
        if slot >= 0:
            needed[slot] = True
            hint = slot
            continue
        if count and missing[count - 1] == tick:
            continue  # the same missing tick again (packets of one tick come together)
        at = count  # insert into the ascending distinct missing ticks
        while at > 0 and missing[at - 1] > tick:
            at -= 1
        if at > 0 and missing[at - 1] == tick:
            continue
        if count == len(missing):
            grown = empty(2 * count + 8, np.int64)
            for j in range(count):
                grown[j] = missing[j]
            missing = grown
        for j in range(count, at, -1):
            missing[j] = missing[j - 1]
        missing[at] = tick
        count += 1
    placed = empty(count, np.int64)
    slots = empty(count, np.int64)
    for k in range(count):
        placed[k], slots[k] = missing[k], -1
    held = empty(slots_n, np.int64)
    for slot in range(slots_n):
        held[slot] = ring_ticks[slot]
    for k in range(count):
        best = -1
        for slot in range(slots_n):
            if not needed[slot] and (best < 0 or held[slot] < held[best]):
                best = slot
        if best < 0:
            break
        held[best] = placed[k]
        needed[best] = True
        slots[k] = best
    return placed, slots
