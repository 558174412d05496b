"""Who is near whom: action ranges, vectorised (visibility: :mod:`simsrv.world.visibility`).

Action range [P §4.2, T §3.2.3]: the entities inside the axis-aligned cube of edge
``action_range`` (256 units) centred on a player, walls ignored.  A k-d tree with the Chebyshev
(max-coordinate) metric finds every pair of entities within half an edge of each other
(O(N log N + pairs) per tick instead of O(N^2)); counts are the pairs' degrees.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree


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
    return tree.query_pairs(r=edge / 2, p=np.inf, output_type="ndarray")
