"""Fixed-radius neighbours on a uniform grid (a cell list), compiled with numba.

Two points are neighbours when their Chebyshev (max-coordinate) distance is at most
``radius``: ``|x_a - x_b| <= radius`` in every coordinate, each difference computed in floating
point exactly as a k-d tree with ``p = inf`` computes it (so the two agree bit for bit, ties at
exactly ``radius`` included).  The points are binned into cubic cells at least ``radius`` wide,
so a point's neighbours lie in its own or the 26 adjacent cells: listing them costs
O(N + pairs) per call, against O(N log N + pairs) for the tree.

Cells are a little wider than ``radius`` (relative margin :data:`MARGIN`), so that rounding in
the cell index cannot put two neighbours two cells apart; on a sparse, large map the cells
widen further so that there are at most ~:data:`CELLS_PER_POINT` cells per point (wider cells
list more candidates, never fewer neighbours).

Memory: the grid holds a cell and an order index per point (16 bytes), 8 bytes per cell (at most
~4 per point) and a copy of the points in cell order (24 bytes): ~80 bytes per point, besides the
pairs found (8 bytes each while they are gathered) and the lists (4 bytes per listed neighbour
plus 8 per row).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import compiled, inlined_allocating
from simsrv.core.uninitialised import empty

MARGIN = 1e-6
"""Relative widening of the cells beyond ``radius`` (a guard against rounding)."""

CELLS_PER_POINT = 4
"""Most cells per point (plus a constant); sparser grids get wider cells."""


class Grid(NamedTuple):
    """Points binned into cells: cell ``c`` holds points ``order[start[c]:start[c + 1]]``
    (ascending), cell of point ``i`` is ``cell[i]``; cells are ``(ix * ny + iy) * nz + iz``."""

    cell: np.ndarray
    start: np.ndarray
    order: np.ndarray
    shape: tuple[int, int, int]


def build_grid(points: np.ndarray, radius: float) -> Grid:
    """Bin ``points`` (P, 3), units, into cells at least ``radius`` (units) wide."""
    points = np.ascontiguousarray(points, dtype=np.float64)
    low, side, nx, ny, nz = _grid_shape(points, radius)
    cell, start, order = _bin(points, low, side, nx, ny, nz)
    return Grid(cell, start, order, (nx, ny, nz))


def neighbour_rows(
    points: np.ndarray, rows: int, radius: float, limit: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The neighbours of each of the first ``rows`` points among all ``points`` (P, 3), self
    excluded, in compressed sparse row form.

    Returns ``(indptr (rows + 1,) int64, indices int32, pairs)``, each row ascending, where
    ``pairs`` counts every pair ``i < j`` within ``radius`` (rows or not).  When there are
    more than ``limit`` (>= 0) pairs the search stops at the first pair over it, so a crowd
    is refused in a time bounded by ``limit``, not by the crowd: the lists are not built
    (``indptr`` and ``indices`` are empty) and ``pairs`` is ``limit + 1``.  A negative
    ``limit`` counts every pair and stores none.  One compiled call (grid, pairs, rows).
    """
    indptr, indices, pairs = _neighbour_rows(
        np.ascontiguousarray(points, dtype=np.float64), rows, float(radius), limit
    )
    return indptr, indices, int(pairs)


def count_pairs(points: np.ndarray, radius: float) -> int:
    """Number of pairs ``i < j`` of ``points`` (P, 3) within Chebyshev distance ``radius``."""
    return neighbour_rows(points, 0, radius, -1)[2]


@compiled
def _neighbour_rows(points, rows, radius, limit):  # pragma: no cover - compiled
    """:func:`neighbour_rows` on contiguous float64 ``points``."""
    n = len(points)
    # a crowd that may hold more pairs than the budget: refused at once if a quick lower
    # bound is already over it (fewer points cannot be, and skip the bound's pass)
    if 0 <= limit < n * (n - 1) // 2 and _pairs_at_least(points, radius) > limit:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), limit + 1
    low, side, nx, ny, nz = _grid_shape(points, radius)
    cell, start, order = _bin(points, low, side, nx, ny, nz)
    first, second, pairs = _pairs(points, rows, radius, limit, cell, start, order, nx, ny, nz)
    if pairs > limit:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), pairs
    indptr, indices = _rows(first, second, rows)
    return indptr, indices, pairs


@compiled
def _pairs_at_least(points, radius):  # pragma: no cover - compiled
    """A lower bound of the pairs within ``radius`` (Chebyshev), in one pass: bin the points
    into cubes a little narrower than ``radius``, whose points are all within it of each
    other, and count each cube's pairs.  0 when such a grid would hold more than
    ``CELLS_PER_POINT`` cells per point (sparse points: the search decides)."""
    n = len(points)
    if n < 2 or radius <= 0.0:
        return 0
    low, high = _bounds(points)
    side = radius * (1.0 - 1e-9)
    counts = empty(3, np.float64)
    for k in range(3):
        counts[k] = np.floor((high[k] - low[k]) / side) + 1.0
    if counts[0] * counts[1] * counts[2] > CELLS_PER_POINT * n + 1024:
        return 0
    _, start, _ = _bin(points, low, side, int(counts[0]), int(counts[1]), int(counts[2]))
    pairs = 0
    for c in range(len(start) - 1):
        k = start[c + 1] - start[c]
        pairs += k * (k - 1) // 2
    return pairs


@compiled
def _grid_shape(points, radius):  # pragma: no cover - compiled
    """The grid of ``points``: ``(low corner (3,), cell side, nx, ny, nz)``, cells at least
    ``radius * (1 + MARGIN)`` wide, widened until at most ``CELLS_PER_POINT`` per point (plus
    1024).  No points: one cell."""
    n = len(points)
    if n == 0:
        return np.zeros(3), 1.0, 1, 1, 1
    low, high = _bounds(points)
    ex, ey, ez = high[0] - low[0], high[1] - low[1], high[2] - low[2]
    side = max(radius * (1.0 + MARGIN), max(ex, ey, ez) * 1e-12, 1e-300)
    budget = CELLS_PER_POINT * n + 1024
    while True:  # sparse: widen the cells until they fit
        nx = np.floor(ex / side) + 1.0
        ny = np.floor(ey / side) + 1.0
        nz = np.floor(ez / side) + 1.0
        cells = nx * ny * nz
        if cells <= budget:
            return low, side, int(nx), int(ny), int(nz)
        side *= max((cells / budget) ** (1.0 / 3.0), 1.1)


@compiled
def _bounds(points):  # pragma: no cover - compiled
    low = points[0].copy()
    high = points[0].copy()
    for i in range(1, len(points)):
        for k in range(3):
            low[k] = min(low[k], points[i, k])
            high[k] = max(high[k], points[i, k])
    return low, high


@compiled
def _bin(points, low, side, nx, ny, nz):  # pragma: no cover - compiled
    n = len(points)
    cell = empty(n, np.int64)
    for i in range(n):
        ix = min(int((points[i, 0] - low[0]) / side), nx - 1)
        iy = min(int((points[i, 1] - low[1]) / side), ny - 1)
        iz = min(int((points[i, 2] - low[2]) / side), nz - 1)
        cell[i] = (ix * ny + iy) * nz + iz
    start = np.zeros(nx * ny * nz + 1, np.int64)
    for i in range(n):
        start[cell[i] + 1] += 1
    for c in range(nx * ny * nz):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    order = empty(n, np.int64)
    for i in range(n):  # a stable counting sort: each cell's points ascending
        order[fill[cell[i]]] = i
        fill[cell[i]] += 1
    return cell, start, order


@compiled
def _pairs(points, rows, radius, limit, cell, start, order, nx, ny, nz):  # pragma: no cover
    """Every pair within ``radius`` once (cells in order, each cell with itself and its
    later neighbours), stored as (first, second) when one of them is a row and the total
    stays within ``limit``."""
    n = len(points)
    near = empty((n, 3))  # points in cell order: neighbouring cells are contiguous
    for s in range(n):
        near[s] = points[order[s]]
    cells = cell[order]
    first = empty(max(16, 2 * rows), np.int32)
    second = empty(max(16, 2 * rows), np.int32)
    stored = 0
    total = 0
    for s in range(n):
        a = order[s]
        c = cells[s]
        cz = c % nz
        cy = (c // nz) % ny
        cx = c // (nz * ny)
        x, y, z = near[s, 0], near[s, 1], near[s, 2]
        for ix in range(max(cx - 1, 0), min(cx + 2, nx)):
            for iy in range(max(cy - 1, 0), min(cy + 2, ny)):
                for iz in range(max(cz - 1, 0), min(cz + 2, nz)):
                    d = (ix * ny + iy) * nz + iz
                    if d < c:
                        continue
                    lo = s + 1 if d == c else start[d]
                    for t in range(lo, start[d + 1]):
                        if (
                            abs(x - near[t, 0]) <= radius
                            and abs(y - near[t, 1]) <= radius
                            and abs(z - near[t, 2]) <= radius
                        ):
                            total += 1
                            b = order[t]
                            if total > limit >= 0:  # refused: stop at the first pair over
                                return first[:0], second[:0], total
                            if total > limit or (a >= rows and b >= rows):
                                continue
                            if stored == len(first):
                                first = _grown(first, stored)
                                second = _grown(second, stored)
                            first[stored] = a
                            second[stored] = b
                            stored += 1
    return first[:stored], second[:stored], total


@inlined_allocating
def _grown(array, used):  # pragma: no cover - compiled
    out = empty(2 * len(array), array.dtype)
    out[:used] = array[:used]
    return out


@compiled
def _rows(first, second, rows):  # pragma: no cover - compiled
    """Both directions of each pair, gathered by row, each row sorted."""
    indptr = np.zeros(rows + 1, np.int64)
    for k in range(len(first)):
        if first[k] < rows:
            indptr[first[k] + 1] += 1
        if second[k] < rows:
            indptr[second[k] + 1] += 1
    for r in range(rows):
        indptr[r + 1] += indptr[r]
    fill = indptr[:-1].copy()
    indices = empty(indptr[rows], np.int32)
    for k in range(len(first)):
        a, b = first[k], second[k]
        if a < rows:
            indices[fill[a]] = b
            fill[a] += 1
        if b < rows:
            indices[fill[b]] = a
            fill[b] += 1
    for r in range(rows):
        lo, hi = indptr[r], indptr[r + 1]
        if hi - lo > 16:
            indices[lo:hi].sort()
            continue
        for i in range(lo + 1, hi):  # insertion sort: most rows hold a few entries
            v = indices[i]
            j = i - 1
            while j >= lo and indices[j] > v:
                indices[j + 1] = indices[j]
                j -= 1
            indices[j + 1] = v
    return indptr, indices
