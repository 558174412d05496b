"""Reader for Quake BSP version 29 files (plain or gzip-compressed).

The file is a header (``int32`` version, then 15 lumps as ``int32`` offset and length) and
lumps of little-endian records (id's ``bspfile.h``).  We read what the simulator needs:

========  ==========  ===========================================================
lump      record      fields kept
========  ==========  ===========================================================
0         text        entities (``{ "key" "value" ... }`` blocks)
1         20 bytes    planes: normal (3 x float32), dist, type
4         bytes       visibility: run-length compressed PVS rows
5         24 bytes    nodes: plane, children (int16 x 2), mins, maxs (int16 x 3)
9         8 bytes     clip nodes: plane, children (int16 x 2; negative = contents)
10        28 bytes    leaves: contents, visofs, mins, maxs (int16 x 3)
14        64 bytes    models: mins, maxs, origin (float32 x 3), headnode (int32 x 4),
                      visleafs
========  ==========  ===========================================================

A map file is untrusted input.  The file is read with a size cap (gzip is inflated only up
to :data:`~simsrv.world.bsp.limits.MAX_FILE_BYTES`), every lump must lie inside the file and
hold whole records, counts are capped (:mod:`simsrv.world.bsp.limits`) before anything sized
by them is allocated, and every index is checked against the table it points into and the
trees for loops (:mod:`simsrv.world.bsp.checks`).  So a truncated, corrupted or hostile file
raises :class:`BspError` (one line naming the file and the problem) here rather than an
``IndexError`` deep inside a simulation, a hang in a tree walk, or an allocation of gigabytes.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NoReturn

import numpy as np

from simsrv.world.bsp import limits
from simsrv.world.bsp.checks import check_bsp
from simsrv.world.bsp.entities import parse_entities
from simsrv.world.bsp.errors import BspError

VERSION = 29
"""The only BSP version read (Quake, QuakeWorld)."""
LUMPS = 15
HEADER_BYTES = 4 + 8 * LUMPS

LUMP_NAMES = (
    "entities",
    "planes",
    "miptex",
    "vertexes",
    "visibility",
    "nodes",
    "texinfo",
    "faces",
    "lighting",
    "clipnodes",
    "leaves",
    "marksurfaces",
    "edges",
    "surfedges",
    "models",
)
"""The 15 lumps in header order."""
ENTITIES, PLANES, VISIBILITY, NODES, CLIPNODES, LEAVES, MODELS = 0, 1, 4, 5, 9, 10, 14
FACES, MARKSURFACES = 7, 11
MAX_RECORDS = {LEAVES: limits.MAX_LEAVES, NODES: limits.MAX_NODES, CLIPNODES: limits.MAX_CLIPNODES}
"""Lumps whose record count is capped (see :mod:`simsrv.world.bsp.limits`)."""
GZIP_MAGIC = b"\x1f\x8b"

PLANE = np.dtype([("normal", "<f4", 3), ("dist", "<f4"), ("type", "<i4")])
NODE = np.dtype(
    [
        ("plane", "<i4"),
        ("children", "<i2", 2),
        ("mins", "<i2", 3),
        ("maxs", "<i2", 3),
        ("firstface", "<u2"),
        ("numfaces", "<u2"),
    ]
)
CLIPNODE = np.dtype([("plane", "<i4"), ("children", "<i2", 2)])
LEAF = np.dtype(
    [
        ("contents", "<i4"),
        ("visofs", "<i4"),
        ("mins", "<i2", 3),
        ("maxs", "<i2", 3),
        ("firstmarksurface", "<u2"),
        ("nummarksurfaces", "<u2"),
        ("ambient", "u1", 4),
    ]
)
MODEL = np.dtype(
    [
        ("mins", "<f4", 3),
        ("maxs", "<f4", 3),
        ("origin", "<f4", 3),
        ("headnode", "<i4", 4),
        ("visleafs", "<i4"),
        ("firstface", "<i4"),
        ("numfaces", "<i4"),
    ]
)

RECORD_BYTES = {
    PLANES: PLANE.itemsize,
    3: 12,  # vertexes: 3 x f4
    NODES: NODE.itemsize,
    6: 40,  # texinfo: 2 x 4 f4 vectors, miptex i4, flags i4
    FACES: 20,
    CLIPNODES: CLIPNODE.itemsize,
    LEAVES: LEAF.itemsize,
    MARKSURFACES: 2,
    12: 4,  # edges: 2 x u2
    13: 4,  # surfedges: i4
    MODELS: MODEL.itemsize,
}
"""Record size of every fixed-size lump, bytes (the others are text or raw bytes): the
record types' sizes for the lumps read, Quake's ``bspfile.h`` for the others."""

CONTENTS_EMPTY, CONTENTS_SOLID = -1, -2
"""Leaf contents (water -3, slime -4, lava -5 and sky -6 count as not solid to a walker)."""


@dataclass(frozen=True)
class BspFile:
    """The parts of a BSP 29 file the simulator uses (arrays are numpy record arrays).

    Attributes
    ----------
    path:
        Where it was read from.
    entities:
        Entity key/value dictionaries in file order (``entities[0]`` is ``worldspawn``).
    planes, nodes, clipnodes, leaves, models:
        Record arrays with the fields of the module table (units: Quake units).
    visibility:
        The compressed PVS lump (decompress with :func:`simsrv.world.bsp.vis.pvs_matrix`).
    """

    path: str
    entities: list[dict[str, str]]
    planes: np.ndarray
    nodes: np.ndarray
    clipnodes: np.ndarray
    leaves: np.ndarray
    models: np.ndarray
    visibility: bytes

    @property
    def world_mins(self) -> np.ndarray:
        """Lower corner of the world model's bounding box, (3,) float, units."""
        return self.models[0]["mins"].astype(float)

    @property
    def world_maxs(self) -> np.ndarray:
        """Upper corner of the world model's bounding box, (3,) float, units."""
        return self.models[0]["maxs"].astype(float)

    def entities_of(self, classname: str) -> list[dict[str, str]]:
        """The entities whose ``classname`` is ``classname``, in file order."""
        return [e for e in self.entities if e.get("classname") == classname]


def read_bsp(path: str | Path) -> BspFile:
    """Read a BSP 29 file (``.bsp`` or gzip-compressed ``.bsp.gz``) and check it.

    A gzip stream is recognised by its magic bytes, whatever the file's name.  Raises
    :class:`BspError` for a missing or unreadable file, a broken gzip stream, a file larger
    than :data:`~simsrv.world.bsp.limits.MAX_FILE_BYTES` (plain or inflated), and everything
    :func:`parse_bsp` refuses.
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            gzipped = file.read(2) == GZIP_MAGIC
            file.seek(0)
            raw = _inflate(file, path) if gzipped else file.read(limits.MAX_FILE_BYTES + 1)
    except OSError as err:
        raise BspError(f"map.file: cannot read {path}: {err.strerror or err}") from None
    if len(raw) > limits.MAX_FILE_BYTES:
        raise BspError(
            f"map.file: {path}: {'inflates to ' if gzipped else ''}more than "
            f"{limits.MAX_FILE_BYTES // 2**20} MiB, the most simsrv reads "
            f"{'(a gzip bomb?)' if gzipped else '(not a BSP map?)'}"
        )
    return parse_bsp(raw, str(path))


def _inflate(file: BinaryIO, path: Path) -> bytes:
    """The gzip stream of ``file`` inflated, at most ``MAX_FILE_BYTES + 1`` bytes of it.

    Inflating stops there: the caller refuses a longer result, so a gzip bomb costs at most
    that much memory and the time to inflate it.  A broken stream is a :class:`BspError`.
    """
    try:
        with gzip.GzipFile(fileobj=file, mode="rb") as stream:
            return stream.read(limits.MAX_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as err:
        raise BspError(f"map.file: {path}: broken gzip data ({err})") from None


def parse_bsp(data: bytes, name: str = "<bytes>") -> BspFile:
    """Parse the bytes of a BSP 29 file (see :func:`read_bsp`) and check every index.

    Raises :class:`BspError` for a short header, another version, a lump outside the file or
    not a whole number of records, a count past :mod:`~simsrv.world.bsp.limits`, an index
    outside its table or a loop in a tree (:func:`~simsrv.world.bsp.checks.check_bsp`).
    """
    if len(data) < HEADER_BYTES:
        raise BspError(f"map.file: {name}: {len(data)} bytes, too short for a BSP header")
    version = int(np.frombuffer(data, "<i4", 1)[0])
    if version != VERSION:
        raise BspError(f"map.file: {name}: BSP version {version}, only version {VERSION} is read")
    lumps = np.frombuffer(data, "<i4", 2 * LUMPS, offset=4).reshape(LUMPS, 2).astype(np.int64)
    _check_lumps(lumps, len(data), name)

    def lump(index: int, record: np.dtype | None = None):
        offset, length = (int(v) for v in lumps[index])
        if record is None:
            return data[offset : offset + length]
        return np.frombuffer(data, record, length // record.itemsize, offset=offset).copy()

    text = lump(ENTITIES).split(b"\0", 1)[0].decode("latin-1")
    bsp = BspFile(
        path=name,
        entities=parse_entities(text, name, limits.MAX_ENTITIES),
        planes=lump(PLANES, PLANE),
        nodes=lump(NODES, NODE),
        clipnodes=lump(CLIPNODES, CLIPNODE),
        leaves=lump(LEAVES, LEAF),
        models=lump(MODELS, MODEL),
        visibility=lump(VISIBILITY),
    )
    counts = {i: int(lumps[i, 1]) // RECORD_BYTES[i] for i in (FACES, MARKSURFACES)}
    check_bsp(bsp, name, faces=counts[FACES], marksurfaces=counts[MARKSURFACES])
    return bsp


def _check_lumps(lumps: np.ndarray, size: int, name: str) -> None:
    """Every lump (read or not) lies inside the ``size``-byte file and holds whole records;
    the capped lumps (leaves, nodes, clip nodes, entities) are within their caps.

    ``lumps`` is the header's (15, 2) offset/length table, int64, so sums cannot overflow.
    """

    def fail(index: int, problem: str) -> NoReturn:
        raise BspError(f"map.file: {name}: lump {index} ({LUMP_NAMES[index]}) {problem}")

    for index, (offset, length) in enumerate(lumps):
        if offset < 0 or length < 0 or offset + length > size:
            fail(
                index,
                f"({offset}+{length} bytes) runs past the end of the file ({size} bytes): "
                "truncated?",
            )
        record = RECORD_BYTES.get(index)
        if record and length % record:
            fail(index, f"is {length} bytes, not a multiple of its {record}-byte records")
        cap = MAX_RECORDS.get(index)
        if cap and length // record > cap:
            fail(index, f"holds {length // record} records, more than the {cap} simsrv reads")
    if lumps[ENTITIES, 1] > limits.MAX_ENTITY_BYTES:
        fail(
            ENTITIES,
            f"is {lumps[ENTITIES, 1]} bytes, more than the {limits.MAX_ENTITY_BYTES} simsrv reads",
        )
