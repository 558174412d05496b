"""Vectorised walks over ragged rows (compressed sparse row layouts) without Python loops."""

from __future__ import annotations

import numpy as np


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``0..counts[0]-1, 0..counts[1]-1, ...`` concatenated (the position inside each row)."""
    counts = np.asarray(counts)
    return np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)


def select_rows(
    indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every element of the chosen rows of a CSR layout, row by row in the order of ``rows``.

    Returns ``(which, values)``: ``values`` are the elements ``indices[indptr[r]:indptr[r+1]]``
    of each chosen row, and ``which`` is the position in ``rows`` each came from.
    """
    start = indptr[rows]
    counts = indptr[np.asarray(rows) + 1] - start
    which = np.repeat(np.arange(len(start)), counts)
    return which, indices[np.repeat(start, counts) + ragged_arange(counts)]
