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


def decompress_row(
    data: bytes, offset: int, row_bytes: int, name: str = "<visibility>"
) -> np.ndarray:
    """One decompressed row, (row_bytes,) uint8.

    Runs of nonzero bytes are copied in one slice each.  Raises :class:`BspError` (naming the
    file ``name``) when the row runs past ``data`` or does not end within ``2 * row_bytes``
    bytes: id's vis writes every zero run with a count of at least 1, so each 1 or 2 bytes
    give at least one byte of the row; only runs of count 0 (which give nothing) make a
    longer row, and they would let one row walk the whole lump.
    """
    out = bytearray(row_bytes)
    filled, i, end = 0, offset, len(data)
    longest = 2 * row_bytes
    while filled < row_bytes:
        if i >= end:
            raise BspError(
                f"map.file: {name}: PVS row at offset {offset} runs past the visibility lump"
            )
        if i - offset >= longest:
            raise BspError(
                f"map.file: {name}: PVS row at offset {offset} does not end within "
                f"{longest} bytes (zero runs of length 0?)"
            )
        if data[i]:
            limit = min(end, i + row_bytes - filled)
            stop = data.find(0, i, limit)
            stop = limit if stop < 0 else stop
            out[filled : filled + stop - i] = data[i:stop]
            filled += stop - i
            i = stop
        else:
            if i + 1 >= end:
                raise BspError(
                    f"map.file: {name}: PVS row at offset {offset} ends inside a zero run"
                )
            filled += data[i + 1]
            i += 2
    return np.frombuffer(out, dtype=np.uint8)


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
    for leaf in range(1, visleafs + 1):
        offset = int(bsp.leaves[leaf]["visofs"])
        if offset < 0:
            matrix[leaf, 1 : visleafs + 1] = True
            continue
        row = decompress_row(bsp.visibility, offset, row_bytes, bsp.path)
        matrix[leaf, 1 : visleafs + 1] = np.unpackbits(row, bitorder="little")[:visleafs]
    return matrix
