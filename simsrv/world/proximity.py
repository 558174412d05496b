"""Who is near whom: action ranges, vectorised (visibility: :mod:`simsrv.world.visibility`).

Action range [P §4.2, T §3.2.3]: the entities inside the axis-aligned cube of edge
``action_range`` (256 units) centred on a player, walls ignored: every entity within Chebyshev
(max-coordinate) distance half an edge.  A compiled cell list (:mod:`simsrv.world.cell_list`:
a uniform grid of cells half an edge wide) lists them in O(N + pairs) per tick.

The neighbour lists hold every pair, so their memory grows with the number of pairs, up to
N^2 / 2 when every player stands in every other's range (100,000 players on a small map: about
2e8 pairs).  The cell list counts the pairs as it finds them and stops at the first point
that takes them beyond :data:`MAX_PAIRS` (a crowd is refused in a time bounded by the limit,
not by the crowd); the tick is then refused with an error naming ``players.count`` and the
memory the lists would need.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simsrv.core.errors import InputError
from simsrv.world.cell_list import neighbour_rows

MAX_PAIRS = 2**25
"""Most pairs of entities in each other's action range in one tick (about 3.4e7: ~0.8 GiB
while the neighbour lists are built, at :data:`BYTES_PER_PAIR`)."""

BYTES_PER_PAIR = 24
"""Peak memory per pair while the neighbour lists are built, bytes: the cell list's rows in
cell order (both directions, 4 bytes an entry, in a buffer grown by doubling: up to 16), then
the lists (8, what is kept afterwards)."""


class Neighbours(NamedTuple):
    """Action-range lists ``L_a`` of every player, in compressed sparse row form.

    ``indices[indptr[a]:indptr[a + 1]]`` are the entities in player ``a``'s action range
    (players ``0..N-1``, then map entities ``N..``), self excluded, ascending.
    """

    indptr: np.ndarray
    indices: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """``|L_a|`` per player."""
        return np.diff(self.indptr)


def range_counts(players: np.ndarray, entities: np.ndarray, edge: float) -> np.ndarray:
    """Number of *other* entities (players and map entities) in each player's action range.

    Parameters
    ----------
    players:
        (N, 3) player origins, units.
    entities:
        (E, 3) map-entity positions, units.
    edge:
        Edge of the action-range cube, units (the half-edge is the Chebyshev radius).

    Returns
    -------
    (N,) int array.
    """
    return neighbour_lists(players, entities, edge).counts


def neighbour_lists(players: np.ndarray, entities: np.ndarray, edge: float) -> Neighbours:
    """The action-range list ``L_a`` of every player (see :class:`Neighbours`).

    Raises :class:`InputError` (naming ``players.count``) if more than :data:`MAX_PAIRS` pairs
    of entities (players and map entities) lie within each other's action range.
    """
    points = players if len(entities) == 0 else np.vstack([players, entities])
    indptr, indices, pairs = neighbour_rows(points, len(players), edge / 2, MAX_PAIRS)
    if pairs > MAX_PAIRS:
        refuse(len(players), len(points) - len(players))
    return Neighbours(indptr, indices)


def refuse(players: int, entities: int) -> None:
    """Raise the :class:`InputError` of a tick with more than :data:`MAX_PAIRS` pairs (the
    search stops at the first pair over: the crowd is not counted)."""
    most = MAX_PAIRS * BYTES_PER_PAIR / 2**30
    raise InputError(
        f"players.count: {players} players (with {entities} map entities) stand in more than "
        f"{MAX_PAIRS:,} pairs within each other's action range in one tick; their neighbour "
        f"lists would need more than {most:.1f} GiB: use fewer players, a larger map or a "
        "smaller players.action_range"
    )


def least_pairs(count: int, extent_min: np.ndarray, extent_max: np.ndarray, edge: float) -> int:
    """The fewest pairs within each other's action range that ``count`` players standing
    anywhere in the box ``[extent_min, extent_max]`` (units) can make, by pigeonhole: cut the
    box into cubes half an ``edge`` wide; two players in one cube are in range, and the pairs
    are fewest when the players spread evenly over the cubes."""
    half = edge / 2
    cells = 1
    for low, high in zip(extent_min, extent_max, strict=True):
        if not half > 0 or float(high - low) / half >= count:  # a range of ~0: cubes enough
            return 0
        cells *= max(1, math.ceil(float(high - low) / half))
        if cells >= count:
            return 0
    each, more = divmod(count, cells)
    return more * (each + 1) * each // 2 + (cells - more) * each * (each - 1) // 2


def check_crowd(count: int, extent_min: np.ndarray, extent_max: np.ndarray, edge: float) -> None:
    """Refuse (:func:`refuse`) before any player is placed a crowd that cannot stand in the
    map without more than :data:`MAX_PAIRS` pairs in range (:func:`least_pairs`); a crowd that
    passes may still be refused at its first tick, where the pairs are counted."""
    if least_pairs(count, extent_min, extent_max, edge) > MAX_PAIRS:
        refuse(count, 0)
