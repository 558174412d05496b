"""The potentially visible set (PVS): decompressing the visibility lump into a matrix.

Each leaf ``i >= 1`` with ``visofs >= 0`` has a row of ``(visleafs + 7) // 8`` bytes at that
offset, run-length compressed (``Mod_DecompressVis``): a nonzero byte is copied; a zero byte is
followed by the number of zero bytes it stands for.  Bit ``k`` of the row says leaf ``k + 1``
is potentially visible.  A leaf without a row (``visofs = -1``, e.g. a map compiled without
vis) sees every leaf, as in Quake; leaf 0 (the solid outside) sees nothing.
"""

from __future__ import annotations

import numpy as np

from simsrv.world.bsp.errors import BspError
from simsrv.world.bsp.reader import BspFile

BLOCK_BYTES = 2**20
"""Rows are decoded in blocks of about this many window bytes (a few tens of MB of work
arrays per block, whatever the map)."""


def decompress_row(
    data: bytes, offset: int, row_bytes: int, name: str = "<visibility>"
) -> np.ndarray:
    """One decompressed row, (row_bytes,) uint8 (see :func:`decompress_rows`)."""
    return decompress_rows(data, np.array([offset]), row_bytes, name)[0]


def decompress_rows(
    data: bytes, offsets: np.ndarray, row_bytes: int, name: str = "<visibility>"
) -> np.ndarray:
    """The rows at ``offsets`` of the visibility lump ``data``, (R, row_bytes) uint8.

    A row must end within ``2 * row_bytes`` bytes of its offset: id's vis writes every zero
    run with a count of at least 1, so each 1 or 2 bytes give at least one byte of the row;
    only runs of count 0 (which give nothing) make a longer row, and they would let one row
    walk the whole lump.  Raises :class:`BspError` (naming the file ``name``) for the first
    row, in order, that starts outside ``data``, runs past it or does not end within that
    window.

    All rows of a block are decoded at once in numpy, so the cost is bounded by the window,
    R x 2 x row_bytes bytes, whatever the bytes are (:func:`_decode_block`).
    """
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
    out = np.zeros((len(offsets), row_bytes), dtype=np.uint8)
    if row_bytes == 0 or len(offsets) == 0:
        return out
    lump = np.frombuffer(data, dtype=np.uint8)
    padded = np.concatenate([lump, np.zeros(2 * row_bytes + 1, dtype=np.uint8)])
    step = max(1, BLOCK_BYTES // (2 * row_bytes + 1))
    for start in range(0, len(offsets), step):
        rows = slice(start, start + step)
        out[rows] = _decode_block(padded, len(lump), offsets[rows], row_bytes, name)
    return out


def _decode_block(
    padded: np.ndarray, end: int, offsets: np.ndarray, row_bytes: int, name: str
) -> np.ndarray:
    """Rows at ``offsets`` of ``padded`` (the ``end``-byte lump, then zeros), as
    :func:`decompress_rows`; the same bytes as ``Mod_DecompressVis`` reading byte by byte.

    Which bytes start a token needs no sequential scan: the byte after a nonzero byte always
    starts one (a nonzero byte is a whole token or ends one), so a run of zero bytes starts at
    a token and alternates marker, count, marker...; a nonzero byte right after a marker is
    its count, any other nonzero byte is copied.
    """
    width = 2 * row_bytes
    cols = np.arange(width + 1, dtype=np.int32)
    start = np.clip(offsets, 0, end)  # an offset outside the lump reads padding, then fails
    window = padded[start[:, None] + cols]  # (R, width + 1): a marker at width - 1 has its count
    zero = window == 0
    run_start = np.maximum.accumulate(np.where(zero, 0, cols + 1), axis=1)
    marker = zero & ((cols ^ run_start) & 1 == 0)  # even places of a zero run
    counted = np.zeros_like(zero)
    counted[:, 1:] = marker[:, :-1]
    literal = ~zero & ~counted
    produced = np.where(marker[:, :width], window[:, 1:], literal[:, :width]).astype(np.int32)
    filled = np.cumsum(produced, axis=1, dtype=np.int32)  # row bytes known after each token
    done = filled >= row_bytes
    ends = np.where(done.any(axis=1), done.argmax(axis=1), width)  # the token that ends a row
    available = np.where(offsets < 0, 0, end - offsets)
    bad = (ends >= available) | (ends >= width)
    if bad.any():
        first = int(np.argmax(bad))
        offset = int(offsets[first])
        if ends[first] >= available[first]:
            problem = "runs past the visibility lump"
        else:
            problem = f"does not end within {width} bytes (zero runs of length 0?)"
        raise BspError(f"map.file: {name}: PVS row at offset {offset} {problem}")
    copied = literal[:, :width] & (cols[:width] <= ends[:, None])
    row, col = np.nonzero(copied)
    out = np.zeros((len(offsets), row_bytes), dtype=np.uint8)
    out[row, filled[row, col] - 1] = window[row, col]
    return out


def pvs_matrix(bsp: BspFile) -> np.ndarray:
    """(L, L) bool over all leaves: ``[i, j]`` leaf ``j`` is potentially visible from ``i``.

    Only the world's ``visleafs`` leaves (1 .. visleafs) have bits; brush-model leaves beyond
    them see and are seen by nothing.  The diagonal of a leaf with a row is whatever the row
    says (vis always marks a leaf visible from itself).
    """
    leaves = len(bsp.leaves)
    visleafs = int(bsp.models[0]["visleafs"])
    row_bytes = (visleafs + 7) // 8
    matrix = np.zeros((leaves, leaves), dtype=bool)
    offsets = bsp.leaves["visofs"][1 : visleafs + 1].astype(np.int64)
    with_row = offsets >= 0
    seen = matrix[1 : visleafs + 1, 1 : visleafs + 1]  # a view
    seen[~with_row] = True
    rows = decompress_rows(bsp.visibility, offsets[with_row], row_bytes, bsp.path)
    seen[with_row] = np.unpackbits(rows, axis=1, bitorder="little")[:, :visleafs]
    return matrix
