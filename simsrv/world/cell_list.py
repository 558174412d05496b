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

A search (:func:`neighbour_rows`: two compiled calls) runs in three passes:

1. *Binning*: a stable counting sort of the points by cell (cells ``(ix * ny + iy) * nz +
   iz``) and a copy of the points in that order, so that the points of a cell and of the cells
   next to it along z, then y, lie next to each other.
2. *Scan*, cell by cell: a point's candidates are the points of the 3 x 3 x 3 cells around its
   own, read as contiguous runs: one per column of 3 x 3 cells (3 runs) when there are at
   most two cells along z, flat maps included, else one per column of cells along z (9).  Each
   candidate is written after the rows found so far and the end moves past it only if it is
   within ``radius`` (no branch: a mispredicted one cost more than the test), so that the
   point's neighbours end up next to each other, in cell order.  Each pair is found from both
   of its points (``pairs`` is half the entries).  The entries are counted as they are found
   and the scan stops at the first point that takes them over twice ``limit``: a crowd is
   refused in a time bounded by the limit, not by the crowd, with at most ~2 x ``limit``
   entries stored.
3. *Placing*, in index order: each row is read where the scan wrote it, sorted (a sorting
   network for up to 8 entries, else a sort) and written after the previous one, so the lists
   and their row pointers come out of one pass.

Memory: the working arrays, ~80 bytes per point (a cell, an order index and its inverse, the
points in cell order, where each row starts, 4 bytes per cell with at most ~4 cells per
point, and the rows in cell order: 4 bytes per listed neighbour, in a buffer of at least 4 per
point that doubles when short) are numpy's and kept from one search to the next in a thread
(:func:`_scratch`); the lists take 4 bytes per listed neighbour plus 8 per row.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.uninitialised import empty, poisoned_again

MARGIN = 1e-6
"""Relative widening of the cells beyond ``radius`` (a guard against rounding)."""

CELLS_PER_POINT = 4
"""Most cells per point (plus a constant); sparser grids get wider cells."""

LAST = np.int32(2**31 - 1)
"""Padding of a row in the sorting network (after every point index)."""

BATCH = 64
"""Rows whose places are looked up together when the rows are placed (independent loads the
processor overlaps)."""

KEPT_ENTRIES = 64
"""Most row entries a point kept between searches (the buffer of the rows in cell order)."""

OFFSETS = tuple(np.uint64(i) for i in range(8))
"""0..7, unsigned (an unsigned index compiles without the code for negative ones)."""


class Grid(NamedTuple):
    """Points binned into cells: cell ``c`` holds points ``order[start[c]:start[c + 1]]``
    (ascending), cell of point ``i`` is ``cell[i]``; cells are ``(ix * ny + iy) * nz + iz``."""

    cell: np.ndarray
    start: np.ndarray
    order: np.ndarray
    shape: tuple[int, int, int]


class _Scratch(NamedTuple):
    """Working arrays of a search (see :func:`_scratch`)."""

    cell: np.ndarray
    start: np.ndarray
    order: np.ndarray
    where: np.ndarray
    near: np.ndarray
    begin: np.ndarray
    written: np.ndarray


_KEPT = threading.local()
"""Each thread's working arrays, kept from one search to the next (``work``)."""


def _scratch(n: int, keep: bool = True) -> _Scratch:
    """The working arrays of a search among ``n`` points (numpy's, uninitialised): cells
    (int64), cell starts (int32, room for the most cells a grid has), order and its inverse
    (int32), the points in cell order, row starts in cell order (int64) and the rows in cell
    order (int32, grown by the search when short).

    With ``keep``, the thread's arrays of the previous search are reused when they fit (room
    for ``n`` to ``2 n + 4096`` points): allocated anew, they cost ~10 ms of page faults a
    search at a million points.  In poison mode the reused arrays are poisoned again, as new
    ones are."""
    work = getattr(_KEPT, "work", None) if keep else None
    if work is not None and n <= len(work.cell) <= 2 * n + 4096:
        poisoned_again(*work)
    else:
        room = max(n, 4096) if keep else n
        work = _Scratch(
            empty(room, np.int64),
            empty(CELLS_PER_POINT * room + 1026, np.int32),
            empty(room, np.int32),
            empty(room, np.int32),
            empty((room, 3)),
            empty(room + 1, np.int64),
            empty(4 * room + 64, np.int32),
        )
        if keep:
            _KEPT.work = work
    return _Scratch(
        work.cell[:n],
        work.start,
        work.order[:n],
        work.where[:n],
        work.near[:n],
        work.begin[: n + 1],
        work.written,
    )


def _keep_written(written: np.ndarray) -> None:
    """Keep ``written`` (grown by a search) with the thread's working arrays, unless it is
    longer than :data:`KEPT_ENTRIES` a point (a crowd's: let it go)."""
    work = getattr(_KEPT, "work", None)
    if work is not None and len(work.written) < len(written) <= KEPT_ENTRIES * len(work.cell):
        _KEPT.work = work._replace(written=written)


def build_grid(points: np.ndarray, radius: float) -> Grid:
    """Bin ``points`` (P, 3), units, into cells at least ``radius`` (units) wide."""
    points = np.ascontiguousarray(points, dtype=np.float64)
    low, side, nx, ny, nz = _grid_shape(points, radius)
    work = _scratch(len(points), keep=False)
    start = _bin(points, low, side, nx, ny, nz, *work[:5])
    return Grid(work.cell, start, work.order, (nx, ny, nz))


def neighbour_rows(
    points: np.ndarray, rows: int, radius: float, limit: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The neighbours of each of the first ``rows`` points among all ``points`` (P, 3), self
    excluded, in compressed sparse row form.

    Returns ``(indptr (rows + 1,) int64, indices int32, pairs)``, each row ascending, where
    ``pairs`` counts every pair ``i < j`` within ``radius`` (rows or not).  When there are
    more than ``limit`` (>= 0) pairs the search stops at the first point that takes them over
    it, so a crowd is refused in a time bounded by ``limit``, not by the crowd: the lists are
    not built (``indptr`` and ``indices`` are empty) and ``pairs`` is ``limit + 1``.  A
    negative ``limit`` counts every pair and stores none.  Two compiled calls, the search and
    the placing of the rows (see the module docstring).
    """
    points = np.ascontiguousarray(points, dtype=np.float64)
    work = _scratch(len(points))
    keep = rows if limit >= 0 else 0  # a negative limit counts, stores nothing
    found, end, written = _search(points, keep, float(radius), 2 * limit, *work)
    if written is not work.written:
        _keep_written(written)
    if limit < 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), int(found // 2)
    if found > 2 * limit:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), limit + 1
    indptr = empty(rows + 1, np.int64)
    indices = empty(end, np.int32)
    _place(written, work.begin, work.where, indptr, indices)
    return indptr, indices, int(found // 2)


def count_pairs(points: np.ndarray, radius: float) -> int:
    """Number of pairs ``i < j`` of ``points`` (P, 3) within Chebyshev distance ``radius``."""
    return neighbour_rows(points, 0, radius, -1)[2]


@compiled
def _search(
    points, rows, radius, stop, cell, start, order, where, near, begin, written
):  # pragma: no cover - compiled
    """Bin contiguous float64 ``points`` and scan them (:func:`_bin`, :func:`_scan`, in the
    working arrays of :func:`_scratch`); returns ``(found, end, written)``: the entries found
    (each pair twice), those written (the rows of the first ``rows`` points) and the buffer
    they are in (``written``, or a longer one).  With ``stop >= 0`` the scan ends at the
    first point that takes ``found`` over ``stop``."""
    low, side, nx, ny, nz = _grid_shape(points, radius)
    start = _bin(points, low, side, nx, ny, nz, cell, start, order, where, near)
    shape, state = (nx, ny, nz), (0, 0, 0, 0)
    while True:  # resumed after each growth of ``written``
        state = _scan(near, start, order, shape, radius, rows, stop, written, begin, state)
        done, _, found, end = state
        if done == nx * ny * nz or found > stop >= 0:
            return found, end, written
        written = _grown(written, end, stop + 64)  # no more than the budget can keep


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
    """Lowest and highest coordinates of ``points`` (N >= 1), (3,) each."""
    lx, ly, lz = points[0, 0], points[0, 1], points[0, 2]
    hx, hy, hz = lx, ly, lz
    for i in range(1, len(points)):
        x, y, z = points[i, 0], points[i, 1], points[i, 2]
        lx, ly, lz = min(lx, x), min(ly, y), min(lz, z)
        hx, hy, hz = max(hx, x), max(hy, y), max(hz, z)
    return np.array([lx, ly, lz]), np.array([hx, hy, hz])


@compiled
def _bin(points, low, side, nx, ny, nz, cell, start, order, where, near):  # pragma: no cover
    """Bin the points (a stable counting sort): the cell of each point to ``cell``, the
    points of cell ``c`` to ``order[start[c]:start[c + 1]]`` (ascending), the position of
    point ``i`` in that order to ``where[i]``, the points in that order to ``near``.
    Returns ``start`` (cells + 1, int32: a point count; the array given has room for cells +
    2)."""
    n = len(points)
    cells = nx * ny * nz
    inverse = 1.0 / side
    lx, ly, lz = low[0], low[1], low[2]
    for i in range(n):
        ix = min(int((points[i, 0] - lx) * inverse), nx - 1)
        iy = min(int((points[i, 1] - ly) * inverse), ny - 1)
        iz = min(int((points[i, 2] - lz) * inverse), nz - 1)
        cell[i] = (ix * ny + iy) * nz + iz
    start = start[: cells + 2]  # counts at c + 2, then firsts at c + 1, then ends
    start[:] = 0
    two = np.uint64(2)
    for i in range(n):
        start[np.uint64(cell[i]) + two] += 1
    total = 0
    for c in range(2, cells + 2):
        total += start[c]
        start[c] = total
    one = np.uint64(1)
    for i in range(n):
        c = np.uint64(cell[i]) + one
        s = np.uint64(start[c])
        start[c] = s + one
        order[s] = i
        where[i] = s
    for s in range(n):
        i = np.uint64(order[s])
        near[s, 0] = points[i, 0]
        near[s, 1] = points[i, 1]
        near[s, 2] = points[i, 2]
    return start[: cells + 1]


@compiled
def _scan(
    near, start, order, shape, radius, rows, stop, written, begin, state
):  # pragma: no cover - compiled
    """Every point's neighbours, in cell order, on the grid ``shape`` (nx, ny, nz), from the
    ``state`` ``(cell, point, found, end)``: from point ``point`` of cell ``cell`` on, with
    ``found`` entries found so far (each pair counts twice) and ``written[:end]`` written.

    The neighbours of point ``s`` (position in cell order) are written to ``written`` from
    ``begin[s]`` (unsorted) if its index ``order[s]`` is a row (``< rows``); other points
    are only counted (``begin[s + 1] == begin[s]``).  Returns ``(cell, point, found, end)``:
    ``cell`` is the number of cells when every point is done (then ``begin[n] == end`` and 8
    :data:`LAST` follow the rows); else the scan stopped at point ``point`` of ``cell``,
    either because ``written`` has no room for its candidates (grow it and resume) or because
    ``found`` went over ``stop`` (``>= 0``)."""
    if shape[2] <= 2:
        return _scan_columns(near, start, order, shape, radius, rows, stop, written, begin, state)
    nx, ny, nz = shape
    cell, point, found, end = state
    ix0, iy0, iz0 = cell // (ny * nz), (cell // nz) % ny, cell % nz
    for ix in range(ix0, nx):
        x0, x1 = max(ix - 1, 0), min(ix + 1, nx - 1)
        for iy in range(iy0 if ix == ix0 else 0, ny):
            y0, y1 = max(iy - 1, 0), min(iy + 1, ny - 1)
            for iz in range(iz0 if ix == ix0 and iy == iy0 else 0, nz):
                c = (ix * ny + iy) * nz + iz
                if start[c] == start[c + 1]:
                    continue
                z0, z1 = max(iz - 1, 0), min(iz + 1, nz - 1)
                around = start[(x1 + 1) * ny * nz] - start[x0 * ny * nz]  # at most: the slabs
                if end + around * (start[c + 1] - start[c]) + 8 > len(written):
                    around = 0  # maybe short: the candidates exactly
                    for xx in range(x0, x1 + 1):
                        for yy in range(y0, y1 + 1):
                            d = (xx * ny + yy) * nz
                            around += start[d + z1 + 1] - start[d + z0]
                for s in range(max(start[c], point), start[c + 1]):
                    if end + around + 8 > len(written):
                        return c, s, found, end
                    x, y, z = near[s, 0], near[s, 1], near[s, 2]
                    me, q = np.uint64(s), np.uint64(end)  # unsigned: no negative indices
                    for xx in range(x0, x1 + 1):
                        for yy in range(y0, y1 + 1):
                            d = (xx * ny + yy) * nz
                            q = _run(near, order, written, q, x, y, z, me, radius,
                                     start[d + z0], start[d + z1 + 1])  # fmt: skip
                    q = np.int64(q)
                    found += q - end
                    if found > stop >= 0:
                        return c, s, found, end
                    begin[s] = end
                    if order[s] < rows:
                        end = q
    begin[len(near)] = end
    written[end : end + 8] = LAST  # read (and left out) by the sorting network
    return nx * ny * nz, 0, found, end


@compiled
def _scan_columns(
    near, start, order, shape, radius, rows, stop, written, begin, state
):  # pragma: no cover - compiled
    """:func:`_scan` for at most two cells along z: each column of 3 x 3 cells is one
    contiguous run of points (3 runs a point instead of 9)."""
    nx, ny, nz = shape
    cell, point, found, end = state
    ix0, iy0, iz0 = cell // (ny * nz), (cell // nz) % ny, cell % nz
    for ix in range(ix0, nx):
        x0, x1 = max(ix - 1, 0), min(ix + 1, nx - 1)
        for iy in range(iy0 if ix == ix0 else 0, ny):
            y0, y1 = max(iy - 1, 0), min(iy + 1, ny - 1)
            for iz in range(iz0 if ix == ix0 and iy == iy0 else 0, nz):
                c = (ix * ny + iy) * nz + iz
                if start[c] == start[c + 1]:
                    continue
                lo0, hi0 = start[(x0 * ny + y0) * nz], start[(x0 * ny + y1 + 1) * nz]
                lo1, hi1 = start[(ix * ny + y0) * nz], start[(ix * ny + y1 + 1) * nz]
                lo2, hi2 = start[(x1 * ny + y0) * nz], start[(x1 * ny + y1 + 1) * nz]
                if x0 == ix:  # no column before (the first one)
                    hi0 = lo0
                if x1 == ix:  # no column after (the last one)
                    hi2 = lo2
                around = hi0 - lo0 + hi1 - lo1 + hi2 - lo2
                for s in range(max(start[c], point), start[c + 1]):
                    if end + around + 8 > len(written):
                        return c, s, found, end
                    x, y, z = near[s, 0], near[s, 1], near[s, 2]
                    me, q = np.uint64(s), np.uint64(end)  # unsigned: no negative indices
                    for lo, hi in ((lo0, hi0), (lo1, hi1), (lo2, hi2)):
                        q = _run(near, order, written, q, x, y, z, me, radius, lo, hi)
                    q = np.int64(q)
                    found += q - end
                    if found > stop >= 0:
                        return c, s, found, end
                    begin[s] = end
                    if order[s] < rows:
                        end = q
    begin[len(near)] = end
    written[end : end + 8] = LAST  # read (and left out) by the sorting network
    return nx * ny * nz, 0, found, end


@borrowing
def _run(near, order, written, q, x, y, z, me, radius, lo, hi):  # pragma: no cover - compiled
    """The candidates ``lo .. hi`` (positions in cell order) of the point ``me`` at ``(x, y,
    z)``: each written at ``written[q]``, ``q`` moved past it only if it is within
    ``radius`` and not ``me`` (no branch); returns ``q``.  Indices unsigned."""
    for t in range(np.uint64(lo), np.uint64(hi)):
        written[q] = order[t]
        q += np.uint64(
            (abs(x - near[t, 0]) <= radius)
            & (abs(y - near[t, 1]) <= radius)
            & (abs(z - near[t, 2]) <= radius)
            & (t != me)
        )
    return q


@compiled
def _grown(array, used, most):  # pragma: no cover - compiled
    """``array`` twice as long, or ``most`` long if that is between the two, its first
    ``used`` entries kept."""
    size = 2 * len(array)
    if len(array) < most < size:
        size = most
    out = empty(size, array.dtype)
    out[:used] = array[:used]
    return out


@compiled
def _place(written, begin, where, indptr, indices):  # pragma: no cover - compiled
    """The lists, from the rows in cell order (:func:`_scan`): row ``a`` is
    ``written[begin[s]:begin[s + 1]]`` (``s = where[a]``), sorted, written to ``indices``
    after the previous row, its end to ``indptr[a + 1]``.

    Rows are looked up :data:`BATCH` at a time (independent loads first).  A row of up to 8
    entries is read 8 entries at a time (those after it replaced by :data:`LAST` where they
    matter), sorted by a sorting network for 2, 4 or 8 entries and written 8 at a time (the
    next row overwrites the extra ones); a longer row, or one of the last 8 entries, is copied
    and sorted.  Indices are unsigned where they can be (no code for negative ones)."""
    rows = len(indptr) - 1
    total = len(indices)
    u = OFFSETS
    first = empty(BATCH, np.int64)
    count = empty(BATCH, np.int64)
    indptr[0] = 0
    out = 0
    for a0 in range(0, rows, BATCH):
        m = min(BATCH, rows - a0)
        for j in range(m):
            s = np.uint64(where[a0 + j])
            first[j] = begin[s]
            count[j] = begin[s + u[1]] - first[j]
        for j in range(m):
            k = count[j]
            if k > 8 or out + 8 > total:
                p = first[j]
                indices[out : out + k] = written[p : p + k]
                indices[out : out + k].sort()
                out += k
                indptr[a0 + j + 1] = out
                continue
            p, o = np.uint64(first[j]), np.uint64(out)
            v0, v1, v2, v3 = written[p], written[p + u[1]], written[p + u[2]], written[p + u[3]]
            v4, v5, v6, v7 = (
                written[p + u[4]],
                written[p + u[5]],
                written[p + u[6]],
                written[p + u[7]],
            )
            if k == 2:
                v0, v1 = min(v0, v1), max(v0, v1)
            elif k == 3 or k == 4:
                v3 = v3 if k > 3 else LAST
                v0, v1 = min(v0, v1), max(v0, v1)
                v2, v3 = min(v2, v3), max(v2, v3)
                v0, v2 = min(v0, v2), max(v0, v2)
                v1, v3 = min(v1, v3), max(v1, v3)
                v1, v2 = min(v1, v2), max(v1, v2)
            elif k > 4:  # Batcher's odd-even merge sort of 8 (19 comparators)
                v5 = v5 if k > 5 else LAST
                v6 = v6 if k > 6 else LAST
                v7 = v7 if k > 7 else LAST
                v0, v1 = min(v0, v1), max(v0, v1)
                v2, v3 = min(v2, v3), max(v2, v3)
                v4, v5 = min(v4, v5), max(v4, v5)
                v6, v7 = min(v6, v7), max(v6, v7)
                v0, v2 = min(v0, v2), max(v0, v2)
                v1, v3 = min(v1, v3), max(v1, v3)
                v4, v6 = min(v4, v6), max(v4, v6)
                v5, v7 = min(v5, v7), max(v5, v7)
                v1, v2 = min(v1, v2), max(v1, v2)
                v5, v6 = min(v5, v6), max(v5, v6)
                v0, v4 = min(v0, v4), max(v0, v4)
                v1, v5 = min(v1, v5), max(v1, v5)
                v2, v6 = min(v2, v6), max(v2, v6)
                v3, v7 = min(v3, v7), max(v3, v7)
                v2, v4 = min(v2, v4), max(v2, v4)
                v3, v5 = min(v3, v5), max(v3, v5)
                v1, v2 = min(v1, v2), max(v1, v2)
                v3, v4 = min(v3, v4), max(v3, v4)
                v5, v6 = min(v5, v6), max(v5, v6)
            indices[o], indices[o + u[1]], indices[o + u[2]], indices[o + u[3]] = v0, v1, v2, v3
            indices[o + u[4]], indices[o + u[5]], indices[o + u[6]], indices[o + u[7]] = (
                v4,
                v5,
                v6,
                v7,
            )
            out += k
            indptr[a0 + j + 1] = out
