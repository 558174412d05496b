"""Who is near whom: action ranges, vectorised (visibility: :mod:`simsrv.world.visibility`).

Action range [P §4.2, T §3.2.3]: the entities inside the axis-aligned cube of edge
``action_range`` (256 units) centred on a player, walls ignored.  A k-d tree with the Chebyshev
(max-coordinate) metric finds every pair of entities within half an edge of each other
(O(N log N + pairs) per tick instead of O(N^2)); counts are the pairs' degrees.

The neighbour lists hold every pair, so their memory grows with the number of pairs, up to
N^2 / 2 when every player stands in every other's range (100,000 players on a small map: about
2e8 pairs, 20 GiB).  Before the pairs are listed, :func:`check_pair_budget` bounds their number
(a cheap grid count, then an exact count when the bound is too high) and refuses more than
:data:`MAX_PAIRS` with an error naming ``players.count`` and the memory it would need.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from simsrv.errors import InputError

MAX_PAIRS = 2**25
"""Most pairs of entities in each other's action range in one tick (about 3.4e7: ~3 GiB of
neighbour lists at :data:`BYTES_PER_PAIR`)."""

BYTES_PER_PAIR = 96
"""Peak memory per pair while the neighbour lists are built (pair array, both directions,
sort keys and order; measured: ~93 bytes), bytes."""


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
    """The action-range list ``L_a`` of every player (see :class:`Neighbours`)."""
    n = len(players)
    pairs = range_pairs(players, entities, edge)
    source = np.concatenate([pairs[:, 0], pairs[:, 1]])
    target = np.concatenate([pairs[:, 1], pairs[:, 0]])
    keep = source < n
    source, target = source[keep], target[keep]
    order = np.argsort(source * (n + len(entities)) + target)  # unique keys: source, target
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=indptr[1:])
    return Neighbours(indptr, target[order].astype(np.int32))


def range_pairs(players: np.ndarray, entities: np.ndarray, edge: float) -> np.ndarray:
    """Every pair of entities within each other's action range, as a (P, 2) int array ``i < j``.

    Indices: players ``0..N-1`` then map entities ``N..N+E-1``.  The relation is symmetric
    (Chebyshev distance ``<= edge / 2``), so ``b`` is in ``L_a`` exactly when ``a`` is in ``L_b``.
    Pairs of two map entities are included (callers that need player edges only filter them).
    """
    points = players if len(entities) == 0 else np.vstack([players, entities])
    tree = cKDTree(points)
    check_pair_budget(tree, points, edge / 2, len(players))
    return tree.query_pairs(r=edge / 2, p=np.inf, output_type="ndarray")


def check_pair_budget(tree: cKDTree, points: np.ndarray, radius: float, players: int) -> None:
    """Raise :class:`InputError` (naming ``players.count``) if more than :data:`MAX_PAIRS` pairs
    of ``points`` lie within Chebyshev distance ``radius`` (units) of each other.

    Free below ~8,000 entities (N^2 / 2 fits the budget); above, a grid bound costs ~8 ms per
    100,000 entities (a twentieth of listing their pairs), and the exact count (``tree``, the
    k-d tree of ``points``) only runs when that bound exceeds the budget.
    """
    n = len(points)
    if n * (n - 1) // 2 <= MAX_PAIRS or pair_bound(points, radius) <= MAX_PAIRS:
        return
    pairs = (int(tree.count_neighbors(tree, radius, p=np.inf)) - n) // 2
    if pairs <= MAX_PAIRS:
        return
    need = pairs * BYTES_PER_PAIR / 2**30
    most = MAX_PAIRS * BYTES_PER_PAIR / 2**30
    raise InputError(
        f"players.count: {players} players (with {n - players} map entities) stand in "
        f"{pairs:,} pairs within each other's action range; their neighbour lists would need "
        f"about {need:.1f} GiB, at most {MAX_PAIRS:,} pairs ({most:.1f} GiB) are allowed: use "
        "fewer players, a larger map or a smaller players.action_range"
    )


def pair_bound(points: np.ndarray, radius: float) -> int:
    """An upper bound on the pairs of ``points`` (N, 3) within Chebyshev distance ``radius``.

    Two such points fall in the same or adjacent cells of a horizontal grid whose cells are
    at least ``radius`` wide; the bound counts every pair of points in such cells.  The grid
    has at most ~4N cells (wider cells on a sparse, large map: a looser bound).
    """
    n = len(points)
    low = points[:, :2].min(axis=0)
    extent = points[:, :2].max(axis=0) - low
    side = max(radius, 1e-9)
    cells = np.floor(extent / side) + 1
    budget = 4 * n + 1024
    if cells[0] * cells[1] > budget:
        side *= float(np.sqrt(cells[0] * cells[1] / budget)) * 1.01
    index = np.minimum(np.floor((points[:, :2] - low) / side).astype(np.int64), 1 << 40)
    nx, ny = int(index[:, 0].max()) + 1, int(index[:, 1].max()) + 1
    flat = (index[:, 0] + 1) * (ny + 2) + index[:, 1] + 1
    grid = np.bincount(flat, minlength=(nx + 2) * (ny + 2)).reshape(nx + 2, ny + 2)
    block = sum(
        grid[1 + dx : nx + 1 + dx, 1 + dy : ny + 1 + dy] for dx in (-1, 0, 1) for dy in (-1, 0, 1)
    )
    return int((grid[1:-1, 1:-1] * block).sum() - n) // 2
