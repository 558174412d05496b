"""A uniform grid over the (x, y) plane that finds which boxes a query box may touch.

Maps hold hundreds of solid boxes and rooms on large layouts; testing every player against every
box costs O(N x B) per tick.  The index registers each box in the grid cells its (x, y) footprint
covers, and a query box looks only at the boxes registered in the cells it covers:
O(N x boxes per cell).  The boxes of the cells a query covers are a superset of those it
touches (same cell, not necessarily touching; a box may repeat): the compiled queries
(:mod:`simsrv.world.maps.base`) run their exact test on each and reduce with any/min/max, so
results are identical to the brute-force test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.ragged import ragged_arange

MAX_CELLS_PER_AXIS = 256
"""Upper bound on grid cells along x and along y (bounds memory on huge maps)."""
MIN_CELL = 64.0
"""Smallest cell edge, units: twice a player box, so a player box touches at most 2 x 2 cells."""


@dataclass(frozen=True)
class BoxIndex:
    """Boxes bucketed by the (x, y) grid cells they cover.

    Attributes
    ----------
    origin:
        (2,) lower (x, y) corner of the grid, units.
    cell:
        Cell edge, units.
    shape:
        (cells along x, cells along y).
    indptr, boxes:
        Compressed rows: ``boxes[indptr[c]:indptr[c + 1]]`` are the boxes covering cell
        ``c = ix * shape[1] + iy``.
    count:
        Number of indexed boxes.
    """

    origin: np.ndarray
    cell: float
    shape: tuple[int, int]
    indptr: np.ndarray
    boxes: np.ndarray
    count: int

    @classmethod
    def build(
        cls,
        box_min: np.ndarray,
        box_max: np.ndarray,
        extent_min: np.ndarray,
        extent_max: np.ndarray,
    ) -> BoxIndex:
        """Index the boxes ``box_min[i]..box_max[i]`` (shape (B, 3) each) over an extent."""
        origin = np.asarray(extent_min[:2], dtype=float)
        span = float(np.max(np.asarray(extent_max[:2]) - origin))
        cell = max(MIN_CELL, span / MAX_CELLS_PER_AXIS)
        size = np.maximum(1, np.ceil((np.asarray(extent_max[:2]) - origin) / cell)).astype(int)
        shape = (int(size[0]), int(size[1]))
        lo, hi = _cell_ranges(origin, cell, shape, box_min[:, :2], box_max[:, :2])
        owner, cells = _expand(lo, hi, shape)
        order = np.lexsort((owner, cells))
        indptr = np.zeros(shape[0] * shape[1] + 1, dtype=np.int64)
        np.cumsum(np.bincount(cells, minlength=shape[0] * shape[1]), out=indptr[1:])
        return cls(origin, cell, shape, indptr, owner[order], len(box_min))

    @property
    def grid(self) -> tuple:
        """``(origin_x, origin_y, cell, cells along x, cells along y, indptr, boxes)``: the index
        as the compiled queries take it (:func:`cell_range`)."""
        return (
            float(self.origin[0]),
            float(self.origin[1]),
            float(self.cell),
            self.shape[0],
            self.shape[1],
            self.indptr,
            self.boxes,
        )


@compiled
def cell_range(low, high, origin, cell, cells):  # pragma: no cover - compiled
    """Inclusive cells ``first..last`` along one axis covered by ``low..high`` (units), clipped
    to ``0..cells - 1``: the arithmetic of :func:`_cell_ranges` for one coordinate."""
    first = np.floor((low - origin) / cell)
    last = np.floor((high - origin) / cell)
    top = cells - 1
    first = min(max(first, 0.0), top)
    last = min(max(last, 0.0), top)
    return int(first), int(last)


def _cell_ranges(
    origin: np.ndarray, cell: float, shape: tuple[int, int], lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive (ix, iy) cell ranges covered by boxes ``lo..hi``, clipped to the grid."""
    top = np.array(shape) - 1
    first = np.clip(np.floor((lo - origin) / cell), 0, top).astype(np.int64)
    last = np.clip(np.floor((hi - origin) / cell), 0, top).astype(np.int64)
    return first, last


def _expand(
    first: np.ndarray, last: np.ndarray, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(owner, flat cell) for every cell in each owner's inclusive range ``first..last``."""
    nx = last[:, 0] - first[:, 0] + 1
    ny = last[:, 1] - first[:, 1] + 1
    count = nx * ny
    owner = np.repeat(np.arange(len(first)), count)
    k = ragged_arange(count)
    ny_rep = np.repeat(ny, count)
    ix = np.repeat(first[:, 0], count) + k // ny_rep
    iy = np.repeat(first[:, 1], count) + k % ny_rep
    return owner, ix * shape[1] + iy
