"""Build small, fully known Quake 1 BSP (version 29) files for the BSP reader's tests.

The map ("box map") is made by hand here, so every fact a reader should find in it is known in
advance and exposed as a module-level constant.  It has three sealed box rooms, all with the
floor at z = 0 and the ceiling at z = 128, and walls 16 units thick around each::

    room A "arena"   x 0..256     y 0..256   cut by the plane x = 128 into
                                              leaf 1 (x < 128) and leaf 2 (x > 128)
    room B "hall"    x 512..1024  y 0..512   a 4 x 4 grid of 128 x 128 cells: leaves 3..18,
                                              cell (i, j) = x 512+128i.., y 128j.. is leaf 3+4i+j
    room C "closet"  x 1280..1408 y 0..128   leaf 19

Hall leaf 18 (cell (3, 3)) is water, floor to ceiling; the other leaves 1..19 are empty.  Leaf 0
is the shared solid leaf: every point outside the three rooms (in the walls, between the rooms,
outside the world) lands in it.  Rooms B and C exist because of the PVS: with 19 visible leaves a
row is 3 bytes, so the rows of room A end in a zero run (``03 00 02``) and room C's row starts
with one (``00 02 04``); two leaves alone give 1-byte rows that never need a zero run.

Items and spawns are in room A; the trigger_teleport (model ``*1``) stands on room A's floor and
its destination is in the closet (room C); the func_door (model ``*2``) is in the hall.

The PVS is deliberately not symmetric: leaf 1 sees leaves 1 and 2, leaf 2 sees only itself (a
reader that swaps rows and columns fails).  Every hall leaf sees the 16 hall leaves; the closet
sees itself.

Everything is written the way id's qbsp/vis write it, so the file also looks like a real one:
lumps in the file in qbsp's order (not the header's), each padded to 4 bytes; axial planes with
positive normals; every solid child of a hull 0 node points to leaf 0; models' ``mins``/``maxs``
are the outer faces of their brushes moved 1 unit inwards (so the world model's box is *not* the
rooms' extent nor the vertexes' extent); the bounds of nodes and leaves are their regions,
clipped to the brushes' extent padded by 24 units; brush models have their own leaves after the
world's, with ``visofs`` -1, and their ``visleafs`` counts them (6 each).  Faces (the inner
sides of the walls, split along the leaves, plus the outer sides of the two brush models), edges,
surfedges, marksurfaces, three texinfos and one 16 x 16 texture are real too; the lighting lump is
empty (every face has ``lightofs`` -1).

Point tests follow the Quake engine: on a plane, ``SV_HullPointContents`` goes to the front child
(``d >= 0``) but ``Mod_PointInLeaf`` to the back child (``d > 0`` is front), so points on a plane
of a tree are ambiguous here: :func:`expected_leaf` and :func:`expected_contents` raise
``ValueError`` for them.  Test points should stay off the planes (all listed points do).

Use it as ``from tests import bsp_builder`` (like ``tests.strategy_harness``).  Public API:

* :func:`box_map_bsp` (bytes), :func:`box_map_parts` (a :class:`BspParts` of records:
  :class:`Plane`, :class:`Node`, :class:`TexInfo`, :class:`Face`, :class:`ClipNode`,
  :class:`Leaf`, :class:`Model`; change them, then ``.pack()``), :func:`pack_bsp` (raw lumps ->
  file), :func:`lump_directory` (header of packed bytes), :func:`write_bsp` (optionally
  gzip-compressed), :func:`compress_vis` (id's PVS run-length scheme), :class:`Box`;
* :func:`expected_leaf`, :func:`expected_contents`: the known answers, computed from the boxes
  (not from the trees in the file);
* broken files: :func:`wrong_version_bsp`, :func:`truncated_bsp`, :func:`lump_past_end_bsp`,
  :func:`bad_lump_length_bsp`, :func:`node_child_out_of_range_bsp`,
  :func:`leaf_child_out_of_range_bsp`, :func:`clipnode_child_out_of_range_bsp`,
  :func:`plane_out_of_range_bsp`, :func:`headnode_out_of_range_bsp`,
  :func:`visofs_past_end_bsp`, :func:`vis_row_overrun_bsp`, :func:`unbalanced_entities_bsp`,
  and :data:`BROKEN` (name -> function making the bytes) to parametrize over all of them.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

Vec = tuple[float, float, float]

# --------------------------------------------------------------------------------------------
# The format
# --------------------------------------------------------------------------------------------

BSP_VERSION = 29
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
"""The 15 lumps in header order (lump ``i`` is at byte ``4 + 8 * i`` of the header)."""
HEADER_SIZE = 4 + 8 * len(LUMP_NAMES)  # 124
RECORD_FORMATS = {
    "planes": "<4fi",  # normal[3], dist, type
    "vertexes": "<3f",
    "nodes": "<i2h3h3h2H",  # planenum, children[2], mins[3], maxs[3], firstface, numfaces
    "texinfo": "<8f2i",  # vecs[2][4], miptex, flags
    "faces": "<2hi2h4Bi",  # planenum, side, firstedge, numedges, texinfo, styles[4], lightofs
    "clipnodes": "<i2h",  # planenum, children[2]
    "leaves": "<2i3h3h2H4B",  # contents, visofs, mins, maxs, firstmarksurface, nummark.., ambient
    "marksurfaces": "<H",
    "edges": "<2H",
    "surfedges": "<i",
    "models": "<9f4i3i",  # mins, maxs, origin, headnode[4], visleafs, firstface, numfaces
}
"""``struct`` format of one record of each fixed-size lump."""
RECORD_SIZES = {name: struct.calcsize(fmt) for name, fmt in RECORD_FORMATS.items()}
FILE_ORDER = (
    "planes",
    "leaves",
    "vertexes",
    "nodes",
    "texinfo",
    "faces",
    "clipnodes",
    "marksurfaces",
    "surfedges",
    "edges",
    "models",
    "lighting",
    "visibility",
    "entities",
    "miptex",
)
"""The order id's qbsp puts the lumps in the file (the header's order is :data:`LUMP_NAMES`)."""

CONTENTS_EMPTY = -1
CONTENTS_SOLID = -2
CONTENTS_WATER = -3
CONTENTS_SLIME = -4
CONTENTS_LAVA = -5
CONTENTS_SKY = -6

# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


class Box(NamedTuple):
    """An axis-aligned box."""

    mins: Vec
    maxs: Vec

    def contains(self, p: Sequence[float]) -> bool:
        """``p`` is in the closed box."""
        return all(lo <= c <= hi for lo, c, hi in zip(self.mins, p, self.maxs, strict=True))

    def strictly_contains(self, p: Sequence[float]) -> bool:
        """``p`` is in the open box (not on a side)."""
        return all(lo < c < hi for lo, c, hi in zip(self.mins, p, self.maxs, strict=True))

    def grown(self, lo: Sequence[float], hi: Sequence[float]) -> Box:
        """The box with ``lo`` added to ``mins`` and ``hi`` added to ``maxs``."""
        return Box(
            tuple(a + b for a, b in zip(self.mins, lo, strict=True)),
            tuple(a + b for a, b in zip(self.maxs, hi, strict=True)),
        )

    def padded(self, d: float) -> Box:
        """The box grown by ``d`` on every side (shrunk if ``d`` < 0)."""
        return self.grown((-d, -d, -d), (d, d, d))


WALL_THICKNESS = 16
SIDESPACE = 24  # qbsp pads the region of a model's tree by this much
ROOM_HEIGHT = 128
ROOM_A = Box((0, 0, 0), (256, 256, 128))
ROOM_B = Box((512, 0, 0), (1024, 512, 128))
ROOM_C = Box((1280, 0, 0), (1408, 128, 128))
ROOMS = (ROOM_A, ROOM_B, ROOM_C)
"""The empty space of the world, in x order (they are sealed from each other)."""
ROOM_A_SPLIT_X = 128

WORLD_BRUSH_BOX = Box((-16, -16, -16), (1424, 528, 144))
"""The outer faces of the walls (the extent of the world's brushes)."""
WORLD_MINS: Vec = (-15, -15, -15)
WORLD_MAXS: Vec = (1423, 527, 143)
"""Model 0's ``mins``/``maxs`` as stored: the brushes' extent moved 1 unit inwards (as qbsp)."""
VERTEX_MINS: Vec = (0, 0, 0)
VERTEX_MAXS: Vec = (1408, 512, 128)
"""The extent of the vertexes lump (the rooms' inner faces; the brush models are inside)."""

MODEL_BRUSHES = {
    1: Box((216, 104, 0), (248, 152, 64)),  # trigger_teleport, on room A's floor (leaf 2)
    2: Box((880, 240, 0), (944, 272, 112)),  # func_door, in room B
}
"""The single box brush of each brush model (origin 0 0 0, as in real maps)."""
MODEL_BOUNDS = {
    0: Box(WORLD_MINS, WORLD_MAXS),
    1: Box((217, 105, 1), (247, 151, 63)),
    2: Box((881, 241, 1), (943, 271, 111)),
}
"""Each model's ``mins``/``maxs`` as stored."""
NUM_MODELS = 3

VISLEAFS = 19
"""Model 0's ``visleafs``: leaves 1..19 have PVS rows."""
VIS_ROW_BYTES = (VISLEAFS + 7) // 8  # 3
ROOM_LEAVES = {"A": (1, 2), "B": tuple(range(3, 19)), "C": (19,)}
MODEL_VISLEAFS = {0: VISLEAFS, 1: 6, 2: 6}
"""Models' ``visleafs``; for brush models it counts their own leaves (as qbsp writes it)."""
MODEL_LEAVES = {1: tuple(range(20, 26)), 2: tuple(range(26, 32))}
"""The leaves of the brush models' hull 0 trees (all empty, ``visofs`` -1, outside the brush)."""
NUM_LEAVES = 32  # leaf 0 + 19 world leaves + 2 x 6 brush model leaves


def _hall_cell(i: int, j: int) -> Box:
    return Box((512 + 128 * i, 128 * j, 0), (640 + 128 * i, 128 * j + 128, 128))


LEAF_BOXES: dict[int, Box] = {
    1: Box((0, 0, 0), (128, 256, 128)),
    2: Box((128, 0, 0), (256, 256, 128)),
    **{3 + 4 * i + j: _hall_cell(i, j) for i in range(4) for j in range(4)},
    19: ROOM_C,
}
"""The world's empty leaves and their boxes (also their ``mins``/``maxs`` as stored)."""
WATER_LEAF = 18
"""Hall cell (3, 3), x 896..1024, y 384..512, is filled with water, floor to ceiling (a pool)."""
LEAF_CONTENTS = {
    0: CONTENTS_SOLID,
    **dict.fromkeys(range(1, NUM_LEAVES), CONTENTS_EMPTY),
    WATER_LEAF: CONTENTS_WATER,
}
"""Leaf -> its contents (clip hulls know only empty and solid: water is empty there)."""

PVS: dict[int, frozenset[int]] = {
    1: frozenset({1, 2}),
    2: frozenset({2}),
    **dict.fromkeys(ROOM_LEAVES["B"], frozenset(ROOM_LEAVES["B"])),
    19: frozenset({19}),
}
"""Leaf -> the leaves it sees (leaf numbers, not bit numbers)."""
VIS_ROWS = {
    1: b"\x03\x00\x02",
    2: b"\x02\x00\x02",
    **dict.fromkeys(ROOM_LEAVES["B"], b"\xfc\xff\x03"),
    19: b"\x00\x02\x04",
}
"""Leaf -> its compressed PVS row, as stored (the rows follow each other in leaf order)."""
VISOFS = {leaf: 3 * (leaf - 1) for leaf in range(1, VISLEAFS + 1)}
"""Leaf -> its ``visofs`` (-1 for leaf 0 and the brush models' leaves)."""
VISIBILITY_LUMP_SIZE = 3 * VISLEAFS

PLAYER_MINS: Vec = (-16, -16, -24)
PLAYER_MAXS: Vec = (16, 16, 32)
HULL_SIZES = {1: (PLAYER_MINS, PLAYER_MAXS), 2: ((-32, -32, -24), (32, 32, 64))}
"""Clip hull -> the box (mins, maxs) it is built for (Quake's hulls 1 and 2)."""


def _hull_box(box: Box, hull: int, *, solid: bool) -> Box:
    """Where the origin of a box of ``hull`` may be in an empty ``box`` / is stuck in a brush."""
    mins, maxs = HULL_SIZES[hull]
    if solid:  # a brush grows: origin + maxs > brush.mins and origin + mins < brush.maxs
        return box.grown(tuple(-v for v in maxs), tuple(-v for v in mins))
    return box.grown(tuple(-v for v in mins), tuple(-v for v in maxs))


HULL_ROOMS = {h: tuple(_hull_box(r, h, solid=False) for r in ROOMS) for h in HULL_SIZES}
"""Hull -> the rooms shrunk by the hull's box: where the world's clip hull is empty.

Hull 1 is solid within 16 units of a side wall, 24 of a floor and 32 of a ceiling; room A's
hull 1 box is (16, 16, 24)..(240, 240, 96).
"""
HULL_MODEL_BRUSHES = {
    h: {m: _hull_box(b, h, solid=True) for m, b in MODEL_BRUSHES.items()} for h in HULL_SIZES
}
"""Hull -> model -> the brush grown by the hull's box: where the model's clip hull is solid."""

# --------------------------------------------------------------------------------------------
# Entities
# --------------------------------------------------------------------------------------------

DEATHMATCH_SPAWNS: tuple[Vec, ...] = ((48, 48, 32), (176, 208, 32))
DEATHMATCH_ANGLES = (45, 270)
PLAYER_START: Vec = (96, 128, 32)
ROCKET_LAUNCHER: Vec = (64, 192, 16)
HEALTH: Vec = (160, 64, 16)
TELEPORT_TARGET = "t1"
TELEPORT_DESTINATION: Vec = (1344, 64, 32)
TELEPORT_DESTINATION_ANGLE = 180


def _origin(v: Vec) -> str:
    return " ".join(str(int(c)) for c in v)


ENTITIES: tuple[dict[str, str], ...] = (
    {
        "classname": "worldspawn",
        "message": "bsp_builder box map",
        "wad": "gfx/base.wad",
        "worldtype": "0",
        "sounds": "1",
    },
    {"classname": "info_player_start", "origin": _origin(PLAYER_START), "angle": "0"},
    {
        "classname": "info_player_deathmatch",
        "origin": _origin(DEATHMATCH_SPAWNS[0]),
        "angle": str(DEATHMATCH_ANGLES[0]),
    },
    {  # key order as found in real maps: classname need not come first
        "origin": _origin(DEATHMATCH_SPAWNS[1]),
        "angle": str(DEATHMATCH_ANGLES[1]),
        "classname": "info_player_deathmatch",
    },
    {"classname": "weapon_rocketlauncher", "origin": _origin(ROCKET_LAUNCHER)},
    {"classname": "item_health", "origin": _origin(HEALTH), "spawnflags": "2"},
    {"classname": "trigger_teleport", "model": "*1", "target": TELEPORT_TARGET},
    {
        "origin": _origin(TELEPORT_DESTINATION),
        "angle": str(TELEPORT_DESTINATION_ANGLE),
        "targetname": TELEPORT_TARGET,
        "classname": "info_teleport_destination",
    },
    {"classname": "func_door", "model": "*2", "angle": "-1", "speed": "100"},
)
"""The entities in file order, keys in file order (entity 0 is worldspawn)."""
CLASSNAME_COUNTS = {
    "worldspawn": 1,
    "info_player_start": 1,
    "info_player_deathmatch": 2,
    "weapon_rocketlauncher": 1,
    "item_health": 1,
    "trigger_teleport": 1,
    "info_teleport_destination": 1,
    "func_door": 1,
}
ENTITY_TEXT = "".join(
    "{\n" + "".join(f'"{k}" "{v}"\n' for k, v in e.items()) + "}\n" for e in ENTITIES
)
"""The entities lump without its terminating NUL (the lump is this, ASCII, plus ``b"\\0"``)."""
ENTITIES_LUMP_SIZE = len(ENTITY_TEXT) + 1

# --------------------------------------------------------------------------------------------
# Known answers
# --------------------------------------------------------------------------------------------

POINT_LEAVES: tuple[tuple[Vec, int], ...] = (
    ((64, 128, 64), 1),
    ((127, 1, 1), 1),
    ((192, 128, 64), 2),
    ((129, 255, 127), 2),
    ((-8, 128, 64), 0),  # in room A's west wall
    ((128, 128, 136), 0),  # in room A's ceiling
    ((384, 128, 64), 0),  # between rooms A and B
    ((128, 128, 500), 0),  # above the world's box
    ((-1000, -1000, -1000), 0),  # far outside
    ((576, 64, 64), 3),
    ((700, 300, 64), 9),
    ((1000, 500, 100), 18),
    ((1344, 64, 64), 19),
    ((1200, 64, 64), 0),  # between rooms B and C
    ((1344, 200, 64), 0),  # beside room C
    (DEATHMATCH_SPAWNS[0], 1),
    (DEATHMATCH_SPAWNS[1], 2),
    (PLAYER_START, 1),
    (ROCKET_LAUNCHER, 1),
    (HEALTH, 2),
    (TELEPORT_DESTINATION, 19),
)
"""(point, leaf of the world's hull 0 tree) pairs; no point is on a plane."""

POINT_CONTENTS: tuple[tuple[int, int, Vec, int], ...] = (
    (0, 0, (64, 128, 64), CONTENTS_EMPTY),
    (0, 0, (-8, 128, 64), CONTENTS_SOLID),
    (1, 0, (128, 128, 64), CONTENTS_EMPTY),
    (1, 0, (8, 128, 64), CONTENTS_SOLID),  # within 16 of the west wall
    (1, 0, (20, 128, 64), CONTENTS_EMPTY),
    (1, 0, (248, 128, 64), CONTENTS_SOLID),  # within 16 of the east wall
    (1, 0, (128, 8, 64), CONTENTS_SOLID),
    (1, 0, (128, 128, 20), CONTENTS_SOLID),  # within 24 of the floor
    (1, 0, (128, 128, 28), CONTENTS_EMPTY),
    (1, 0, (128, 128, 100), CONTENTS_SOLID),  # within 32 of the ceiling
    (1, 0, (128, 128, 90), CONTENTS_EMPTY),
    (1, 0, (384, 128, 64), CONTENTS_SOLID),
    (1, 0, (1000, 500, 64), CONTENTS_SOLID),
    (1, 0, (990, 490, 64), CONTENTS_EMPTY),
    (1, 0, (1344, 64, 64), CONTENTS_EMPTY),
    (0, 0, (960, 448, 64), CONTENTS_WATER),
    (1, 0, (960, 448, 64), CONTENTS_EMPTY),  # water is empty in the clip hulls
    (0, 0, (128, 128, 64), CONTENTS_EMPTY),  # on the plane x = 128, empty on both sides
    (1, 0, DEATHMATCH_SPAWNS[0], CONTENTS_EMPTY),
    (1, 0, DEATHMATCH_SPAWNS[1], CONTENTS_EMPTY),
    (1, 0, TELEPORT_DESTINATION, CONTENTS_EMPTY),
    (2, 0, (28, 128, 40), CONTENTS_SOLID),  # within 32 of the west wall
    (2, 0, (40, 128, 40), CONTENTS_EMPTY),
    (2, 0, (128, 128, 70), CONTENTS_SOLID),  # within 64 of the ceiling
    (2, 0, (128, 128, 60), CONTENTS_EMPTY),
    (0, 1, (232, 128, 32), CONTENTS_SOLID),  # in the teleporter brush
    (0, 1, (200, 128, 32), CONTENTS_EMPTY),
    (1, 1, (205, 128, 32), CONTENTS_SOLID),  # within 16 of it
    (1, 1, (190, 128, 32), CONTENTS_EMPTY),
    (1, 1, (232, 128, 86), CONTENTS_SOLID),  # 22 above its top: the feet (-24) are in it
    (1, 1, (232, 128, 100), CONTENTS_EMPTY),
    (0, 2, (900, 256, 50), CONTENTS_SOLID),
    (0, 2, (900, 300, 50), CONTENTS_EMPTY),
    (2, 2, (900, 300, 50), CONTENTS_SOLID),  # within 32 of the door
    (2, 2, (900, 310, 50), CONTENTS_EMPTY),
)
"""(hull, model, point, contents) of a point in a model's hull; no point is on a plane."""


def _on_side(box: Box, p: Sequence[float]) -> bool:
    return box.contains(p) and not box.strictly_contains(p)


def expected_leaf(point: Sequence[float]) -> int:
    """The leaf of the world's hull 0 tree holding ``point`` (0 outside the rooms).

    Raises ``ValueError`` for a point on a side of a leaf box (ambiguous, see the module doc).
    """
    for leaf, box in LEAF_BOXES.items():
        if box.strictly_contains(point):
            return leaf
        if _on_side(box, point):
            raise ValueError(f"{tuple(point)} is on a side of leaf {leaf}")
    return 0


def expected_contents(point: Sequence[float], hull: int = 0, model: int = 0) -> int:
    """The contents of ``point`` in a model's hull (0, 1 or 2): the leaf's contents in the
    world's hull 0, else ``CONTENTS_EMPTY`` or ``CONTENTS_SOLID``.

    Raises ``ValueError`` for a point on a side of the boxes that decide it.
    """
    if model == 0 and hull == 0:
        touching = {LEAF_CONTENTS[leaf] for leaf, b in LEAF_BOXES.items() if b.contains(point)}
        inner = any(r.strictly_contains(point) for r in ROOMS)
        if not touching:
            return CONTENTS_SOLID
        if len(touching) == 1 and inner:  # in a leaf, or on a plane between two like leaves
            return touching.pop()
        raise ValueError(f"{tuple(point)} is on a side of a leaf box")
    if model == 0:
        boxes, inside = (ROOMS if hull == 0 else HULL_ROOMS[hull]), CONTENTS_EMPTY
    else:
        brush = MODEL_BRUSHES[model] if hull == 0 else HULL_MODEL_BRUSHES[hull][model]
        boxes, inside = (brush,), CONTENTS_SOLID
    outside = CONTENTS_SOLID + CONTENTS_EMPTY - inside
    for box in boxes:
        if box.strictly_contains(point):
            return inside
        if _on_side(box, point):
            raise ValueError(f"{tuple(point)} is on a side of {box}")
    return outside


# --------------------------------------------------------------------------------------------
# Records and packing
# --------------------------------------------------------------------------------------------


class Plane(NamedTuple):
    normal: Vec
    dist: float
    type: int


class Node(NamedTuple):
    planenum: int
    children: tuple[int, int]  # >= 0 node, < 0 leaf -1 - child; [0] is the front (d > 0)
    mins: tuple[int, int, int]
    maxs: tuple[int, int, int]
    firstface: int
    numfaces: int


class TexInfo(NamedTuple):
    vecs: tuple[float, ...]  # s[4], t[4]
    miptex: int
    flags: int


class Face(NamedTuple):
    planenum: int
    side: int  # 1: the face looks against the plane's normal
    firstedge: int
    numedges: int
    texinfo: int
    styles: tuple[int, int, int, int]
    lightofs: int


class ClipNode(NamedTuple):
    planenum: int
    children: tuple[int, int]  # >= 0 clip node, < 0 contents


class Leaf(NamedTuple):
    contents: int
    visofs: int
    mins: tuple[int, int, int]
    maxs: tuple[int, int, int]
    firstmarksurface: int
    nummarksurfaces: int
    ambient: tuple[int, int, int, int]


class Model(NamedTuple):
    mins: Vec
    maxs: Vec
    origin: Vec
    headnode: tuple[int, int, int, int]  # hull 0 node, hull 1 and 2 clip nodes, unused
    visleafs: int
    firstface: int
    numfaces: int


def _flat(record) -> tuple:
    out: list = []
    for v in record:
        out.extend(v if isinstance(v, tuple) else (v,))
    return tuple(out)


@dataclass
class BspParts:
    """The content of every lump, before packing; change it and call :meth:`pack`.

    Fixed-size lumps are lists of records (named tuples, or plain ints/tuples for marksurfaces,
    edges and surfedges); entities, miptex, visibility and lighting are raw bytes.
    """

    entities: bytes = b""
    planes: list[Plane] = field(default_factory=list)
    miptex: bytes = b""
    vertexes: list[Vec] = field(default_factory=list)
    visibility: bytes = b""
    nodes: list[Node] = field(default_factory=list)
    texinfo: list[TexInfo] = field(default_factory=list)
    faces: list[Face] = field(default_factory=list)
    lighting: bytes = b""
    clipnodes: list[ClipNode] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)
    marksurfaces: list[int] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    surfedges: list[int] = field(default_factory=list)
    models: list[Model] = field(default_factory=list)
    version: int = BSP_VERSION

    def lump_bytes(self, name: str) -> bytes:
        """The bytes of one lump."""
        value = getattr(self, name)
        if isinstance(value, bytes):
            return value
        fmt = RECORD_FORMATS[name]
        return b"".join(
            struct.pack(fmt, *(_flat(r) if isinstance(r, tuple) else (r,))) for r in value
        )

    def pack(self, file_order: Sequence[str] = FILE_ORDER) -> bytes:
        """The BSP file: header, then the lumps in ``file_order``, each padded to 4 bytes."""
        return pack_bsp({n: self.lump_bytes(n) for n in LUMP_NAMES}, self.version, file_order)


def pack_bsp(
    lumps: dict[str, bytes], version: int = BSP_VERSION, file_order: Sequence[str] = FILE_ORDER
) -> bytes:
    """A BSP file from the raw bytes of its 15 lumps (named as in :data:`LUMP_NAMES`)."""
    if sorted(file_order) != sorted(LUMP_NAMES):
        raise ValueError("file_order must name each of the 15 lumps once")
    body = bytearray()
    directory: dict[str, tuple[int, int]] = {}
    for name in file_order:
        data = lumps[name]
        directory[name] = (HEADER_SIZE + len(body), len(data))
        body += data + b"\0" * (-len(data) % 4)
    header = struct.pack("<i", version) + b"".join(
        struct.pack("<2i", *directory[name]) for name in LUMP_NAMES
    )
    return header + bytes(body)


def lump_directory(data: bytes) -> dict[str, tuple[int, int]]:
    """Lump name -> (offset, length) read from the header of a packed file."""
    return {name: struct.unpack_from("<2i", data, 4 + 8 * i) for i, name in enumerate(LUMP_NAMES)}


def compress_vis(row: bytes) -> bytes:
    """Run-length compress one PVS row as id's vis does (a 0 byte is followed by a run count)."""
    out = bytearray()
    j = 0
    while j < len(row):
        out.append(row[j])
        if row[j]:
            j += 1
            continue
        run = 1
        j += 1
        while j < len(row) and not row[j] and run < 255:
            run += 1
            j += 1
        out.append(run)
    return bytes(out)


def _vis_row(leaves: frozenset[int]) -> bytes:
    row = bytearray(VIS_ROW_BYTES)
    for leaf in leaves:
        row[(leaf - 1) >> 3] |= 1 << ((leaf - 1) & 7)
    return bytes(row)


# --------------------------------------------------------------------------------------------
# Building the box map
# --------------------------------------------------------------------------------------------


class _Quad(NamedTuple):
    """A face to write: on the plane ``axis`` = ``dist``, looking along ``facing`` (+1/-1)."""

    axis: int
    dist: float
    facing: int
    rect: Box  # flat in ``axis``


class _Leaf(NamedTuple):
    """A tree's end: a given leaf index (hull 0), a new leaf (index None) or clip contents."""

    index: int | None
    contents: int
    faces: tuple[_Quad, ...] = ()


class _Split(NamedTuple):
    axis: int
    dist: float
    front: _Leaf | _Split  # coordinate > dist
    back: _Leaf | _Split


_SOLID_LEAF = _Leaf(0, CONTENTS_SOLID)
_SOLID = _Leaf(None, CONTENTS_SOLID)
_EMPTY = _Leaf(None, CONTENTS_EMPTY)


def _cut(region: Box, axis: int, dist: float, front: bool) -> Box:
    lo, hi = list(region.mins), list(region.maxs)
    if front:
        lo[axis] = dist
    else:
        hi[axis] = dist
    return Box(tuple(lo), tuple(hi))


def _chain(
    box: Box,
    region: Box,
    inside: Callable[[Box], _Leaf | _Split],
    outside: Callable[[int, float, bool], _Leaf],
) -> _Leaf | _Split:
    """A tree cutting ``box`` out of ``region`` by its sides (those not already region sides).

    ``inside(inner_region)`` makes the tree of the box; ``outside(axis, dist, low)`` the end
    beyond the side on the plane ``axis`` = ``dist`` (``low``: the box's ``mins`` side).
    """
    steps = []
    for axis in range(3):
        for low in (True, False):
            dist = (box.mins if low else box.maxs)[axis]
            if (region.mins[axis] < dist) if low else (region.maxs[axis] > dist):
                steps.append((axis, dist, low))
                region = _cut(region, axis, dist, front=low)
    tree = inside(region)
    for axis, dist, low in reversed(steps):
        out = outside(axis, dist, low)
        tree = _Split(axis, dist, tree, out) if low else _Split(axis, dist, out, tree)
    return tree


def _separate(
    items: Sequence[tuple[Box, Callable[[Box], _Leaf | _Split]]],
    region: Box,
    solid: _Leaf,
) -> _Leaf | _Split:
    """A tree of boxes sorted and separated along x, solid around them."""

    def outside(axis: int, dist: float, low: bool) -> _Leaf:
        return solid

    box, inside = items[0]
    if len(items) == 1:
        return _chain(box, region, inside, outside)
    dist = box.maxs[0]
    return _Split(
        0,
        dist,
        _separate(items[1:], _cut(region, 0, dist, front=True), solid),
        _chain(box, _cut(region, 0, dist, front=False), inside, outside),
    )


def _room_quads(leaf_box: Box, room: Box) -> tuple[_Quad, ...]:
    """The inner sides of ``room``'s walls that bound ``leaf_box``."""
    quads = []
    for axis in range(3):
        for low in (True, False):
            dist = (leaf_box.mins if low else leaf_box.maxs)[axis]
            if dist == (room.mins if low else room.maxs)[axis]:
                rect = _cut(_cut(leaf_box, axis, dist, True), axis, dist, False)
                quads.append(_Quad(axis, dist, 1 if low else -1, rect))
    return tuple(quads)


def _world_leaf(index: int) -> Callable[[Box], _Leaf]:
    box = LEAF_BOXES[index]
    room = next(r for r in ROOMS if r.contains(box.mins) and r.contains(box.maxs))

    def make(region: Box) -> _Leaf:
        if region != box:
            raise AssertionError(f"leaf {index}: region {region} != {box}")
        return _Leaf(index, LEAF_CONTENTS[index], _room_quads(box, room))

    return make


def _world_hull0() -> _Leaf | _Split:
    def room_a(region: Box) -> _Split:
        x = ROOM_A_SPLIT_X
        return _Split(
            0,
            x,
            _world_leaf(2)(_cut(region, 0, x, True)),
            _world_leaf(1)(_cut(region, 0, x, False)),
        )

    def hall(region: Box) -> _Leaf | _Split:
        def column(i: int, region: Box) -> _Leaf | _Split:
            return _bisect(1, [128 * j for j in range(5)], region, lambda j, r: cell(i, j, r))

        def cell(i: int, j: int, region: Box) -> _Leaf:
            return _world_leaf(3 + 4 * i + j)(region)

        return _bisect(0, [512 + 128 * i for i in range(5)], region, column)

    region = WORLD_BRUSH_BOX.padded(SIDESPACE)
    items = [(ROOM_A, room_a), (ROOM_B, hall), (ROOM_C, _world_leaf(19))]
    return _separate(items, region, _SOLID_LEAF)


def _bisect(
    axis: int,
    edges: Sequence[float],
    region: Box,
    make: Callable[[int, Box], _Leaf | _Split],
    first: int = 0,
) -> _Leaf | _Split:
    """A balanced tree of the slabs between consecutive ``edges`` along ``axis``."""
    if len(edges) == 2:
        return make(first, region)
    k = len(edges) // 2
    dist = edges[k]
    return _Split(
        axis,
        dist,
        _bisect(axis, edges[k:], _cut(region, axis, dist, True), make, first + k),
        _bisect(axis, edges[: k + 1], _cut(region, axis, dist, False), make, first),
    )


def _model_hull0(brush: Box) -> _Leaf | _Split:
    def outside(axis: int, dist: float, low: bool) -> _Leaf:
        rect = _cut(_cut(brush, axis, dist, True), axis, dist, False)
        return _Leaf(None, CONTENTS_EMPTY, (_Quad(axis, dist, -1 if low else 1, rect),))

    return _chain(brush, brush.padded(SIDESPACE), lambda r: _SOLID_LEAF, outside)


def _world_clip(hull: int) -> _Leaf | _Split:
    items = [(box, lambda r: _EMPTY) for box in HULL_ROOMS[hull]]
    return _separate(items, WORLD_BRUSH_BOX.padded(SIDESPACE), _SOLID)


def _model_clip(hull: int, model: int) -> _Leaf | _Split:
    box = HULL_MODEL_BRUSHES[hull][model]
    return _chain(box, box.padded(SIDESPACE), lambda r: _SOLID, lambda a, d, low: _EMPTY)


class _Builder:
    def __init__(self) -> None:
        self.planes: dict[tuple[int, float], int] = {}
        self.nodes: list[Node | None] = []
        self.clipnodes: list[ClipNode | None] = []
        self.leaf_boxes: dict[int, Box] = {}
        self.leaf_contents: dict[int, int] = {}
        self.leaf_quads: dict[int, list[tuple[int, _Quad]]] = {}  # leaf -> (node, quad)
        self.next_leaf = VISLEAFS + 1

    def plane(self, axis: int, dist: float) -> int:
        return self.planes.setdefault((axis, dist), len(self.planes))

    def hull0(self, tree, region: Box, path: tuple[tuple[int, int, float], ...] = ()) -> int:
        """Write a hull 0 tree; its root's child number (node index or -1 - leaf)."""
        if isinstance(tree, _Leaf):
            if tree.index == 0:
                return -1
            index = tree.index
            if index is None:
                index, self.next_leaf = self.next_leaf, self.next_leaf + 1
            self.leaf_boxes[index] = region
            self.leaf_contents[index] = tree.contents
            quads = self.leaf_quads.setdefault(index, [])
            for q in tree.faces:
                node = next(n for n, a, d in path if (a, d) == (q.axis, q.dist))
                quads.append((node, q))
            return -1 - index
        num = len(self.nodes)
        self.nodes.append(None)
        step = (num, tree.axis, tree.dist)
        front = self.hull0(tree.front, _cut(region, tree.axis, tree.dist, True), (*path, step))
        back = self.hull0(tree.back, _cut(region, tree.axis, tree.dist, False), (*path, step))
        self.nodes[num] = Node(
            self.plane(tree.axis, tree.dist),
            (front, back),
            tuple(int(v) for v in region.mins),
            tuple(int(v) for v in region.maxs),
            0,
            0,
        )
        return num

    def clip(self, tree) -> int:
        if isinstance(tree, _Leaf):
            return tree.contents
        num = len(self.clipnodes)
        self.clipnodes.append(None)
        front, back = self.clip(tree.front), self.clip(tree.back)
        self.clipnodes[num] = ClipNode(self.plane(tree.axis, tree.dist), (front, back))
        return num


def _quad_corners(q: _Quad) -> list[Vec]:
    """The quad's corners, clockwise seen from the side it looks to (qbsp's winding)."""
    u, v = (q.axis + 1) % 3, (q.axis + 2) % 3
    corners = []
    for cu, cv in ((0, 0), (0, 1), (1, 1), (1, 0)):
        p = [0.0, 0.0, 0.0]
        p[q.axis] = q.dist
        p[u] = (q.rect.mins, q.rect.maxs)[cu][u]
        p[v] = (q.rect.mins, q.rect.maxs)[cv][v]
        corners.append(tuple(p))
    # qbsp's WindingPlane: normal = (p2 - p0) x (p1 - p0)
    a = [corners[2][k] - corners[0][k] for k in range(3)]
    b = [corners[1][k] - corners[0][k] for k in range(3)]
    normal = (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
    if normal[q.axis] * q.facing < 0:
        corners.reverse()
    return corners


def _miptex_lump() -> bytes:
    """One 16 x 16 texture "wall" with its 4 mip levels."""
    sizes = [16 * 16 >> (2 * m) for m in range(4)]
    offsets = [40 + sum(sizes[:m]) for m in range(4)]
    tex = struct.pack("<16s2I4I", b"wall", 16, 16, *offsets) + bytes([7]) * sum(sizes)
    return struct.pack("<2i", 1, 8) + tex


_TEXINFO_BY_AXIS = (
    TexInfo((0, 1, 0, 0, 0, 0, -1, 0), 0, 0),  # x walls: s along y, t down
    TexInfo((1, 0, 0, 0, 0, 0, -1, 0), 0, 0),  # y walls: s along x, t down
    TexInfo((1, 0, 0, 0, 0, -1, 0, 0), 0, 0),  # floors and ceilings
)


def box_map_parts() -> BspParts:
    """The box map's records (a fresh copy: change it freely, then ``.pack()``)."""
    b = _Builder()
    heads = []
    world_root = b.hull0(_world_hull0(), WORLD_BRUSH_BOX.padded(SIDESPACE))
    heads.append([world_root])
    for m, brush in MODEL_BRUSHES.items():
        heads.append([b.hull0(_model_hull0(brush), brush.padded(SIDESPACE))])
        if b.next_leaf - 1 != MODEL_LEAVES[m][-1]:
            raise AssertionError("brush model leaves are not numbered as documented")
    for m in range(NUM_MODELS):
        for hull in HULL_SIZES:
            heads[m].append(b.clip(_world_clip(hull) if m == 0 else _model_clip(hull, m)))
    for leaf, box in LEAF_BOXES.items():
        if b.leaf_boxes[leaf] != box:
            raise AssertionError(f"leaf {leaf} region {b.leaf_boxes[leaf]} != {box}")

    # faces: grouped by the node whose plane they lie on (tree order), so every node's and every
    # model's faces are contiguous
    tagged = [(node, leaf, q) for leaf, lst in b.leaf_quads.items() for node, q in lst]
    tagged.sort(key=lambda t: t[0])
    vertexes: dict[Vec, int] = {}
    edges: dict[tuple[int, int], int] = {}
    edge_list: list[tuple[int, int]] = [(0, 0)]  # edge 0 is unused (surfedge -0 == 0)
    surfedges: list[int] = []
    faces: list[Face] = []
    leaf_faces: dict[int, list[int]] = {}
    node_faces: dict[int, list[int]] = {}
    for node, leaf, q in tagged:
        corners = [vertexes.setdefault(c, len(vertexes)) for c in _quad_corners(q)]
        first = len(surfedges)
        for k in range(4):
            v0, v1 = corners[k], corners[(k + 1) % 4]
            if (v1, v0) in edges:
                surfedges.append(-edges[(v1, v0)])
            else:
                if (v0, v1) not in edges:
                    edges[(v0, v1)] = len(edge_list)
                    edge_list.append((v0, v1))
                surfedges.append(edges[(v0, v1)])
        face = Face(
            b.plane(q.axis, q.dist), 0 if q.facing > 0 else 1, first, 4, q.axis, (255,) * 4, -1
        )
        leaf_faces.setdefault(leaf, []).append(len(faces))
        node_faces.setdefault(node, []).append(len(faces))
        faces.append(face)

    nodes: list[Node] = []
    next_face = 0
    for num, node in enumerate(b.nodes):
        own = node_faces.get(num, [])
        if own:
            next_face = own[0]
        nodes.append(node._replace(firstface=next_face, numfaces=len(own)))
        next_face += len(own)

    leaves = [Leaf(CONTENTS_SOLID, -1, (0, 0, 0), (0, 0, 0), 0, 0, (0, 0, 0, 0))]
    marksurfaces: list[int] = []
    for leaf in range(1, NUM_LEAVES):
        box = b.leaf_boxes[leaf]
        own = leaf_faces.get(leaf, [])
        leaves.append(
            Leaf(
                b.leaf_contents[leaf],
                VISOFS.get(leaf, -1),
                tuple(int(v) for v in box.mins),
                tuple(int(v) for v in box.maxs),
                len(marksurfaces),
                len(own),
                (0, 0, 0, 0),
            )
        )
        marksurfaces.extend(own)
    if len(b.leaf_boxes) != NUM_LEAVES - 1:
        raise AssertionError("leaf count differs from NUM_LEAVES")

    visibility = b""
    for leaf in range(1, VISLEAFS + 1):
        row = compress_vis(_vis_row(PVS[leaf]))
        if row != VIS_ROWS[leaf] or len(visibility) != VISOFS[leaf]:
            raise AssertionError(f"PVS row of leaf {leaf} differs from VIS_ROWS/VISOFS")
        visibility += row

    models = []
    for m in range(NUM_MODELS):
        own = MODEL_LEAVES.get(m, range(1, VISLEAFS + 1))
        indices = sorted(i for leaf in own for i in leaf_faces.get(leaf, []))
        if indices != list(range(indices[0], indices[0] + len(indices))):
            raise AssertionError(f"the faces of model {m} are not contiguous")
        bounds = MODEL_BOUNDS[m]
        models.append(
            Model(
                bounds.mins,
                bounds.maxs,
                (0, 0, 0),
                (*heads[m], 0),
                MODEL_VISLEAFS[m],
                indices[0],
                len(indices),
            )
        )

    planes = [Plane(tuple(float(a == axis) for a in range(3)), d, axis) for axis, d in b.planes]
    return BspParts(
        entities=ENTITY_TEXT.encode("ascii") + b"\0",
        planes=planes,
        miptex=_miptex_lump(),
        vertexes=list(vertexes),
        visibility=visibility,
        nodes=nodes,
        texinfo=list(_TEXINFO_BY_AXIS),
        faces=faces,
        lighting=b"",
        clipnodes=list(b.clipnodes),
        leaves=leaves,
        marksurfaces=marksurfaces,
        edges=edge_list,
        surfedges=surfedges,
        models=models,
    )


def box_map_bsp() -> bytes:
    """The box map as a BSP 29 file."""
    return box_map_parts().pack()


def write_bsp(path: str | Path, data: bytes | None = None, *, compress: bool | None = None) -> Path:
    """Write ``data`` (default: the box map) to ``path``; gzip it if ``compress`` (default: if
    the name ends in ``.gz``).  Returns the path."""
    path = Path(path)
    data = box_map_bsp() if data is None else data
    if compress is None:
        compress = path.suffix == ".gz"
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path


_PARTS = box_map_parts()
NUM_PLANES = len(_PARTS.planes)
NUM_NODES = len(_PARTS.nodes)
NUM_CLIPNODES = len(_PARTS.clipnodes)
NUM_FACES = len(_PARTS.faces)
WORLD_FACES = _PARTS.models[0].numfaces
NUM_VERTEXES = len(_PARTS.vertexes)
MODEL_HEADNODES = {m: model.headnode for m, model in enumerate(_PARTS.models)}
"""Model -> (hull 0 node, hull 1 clip node, hull 2 clip node, 0)."""
del _PARTS

# --------------------------------------------------------------------------------------------
# Broken files
# --------------------------------------------------------------------------------------------


def _with_lump(data: bytes, lump: str, offset: int, length: int) -> bytes:
    i = LUMP_NAMES.index(lump)
    return data[: 4 + 8 * i] + struct.pack("<2i", offset, length) + data[12 + 8 * i :]


def wrong_version_bsp(version: int = 30) -> bytes:
    """The box map with another version number (30 is Half-Life's)."""
    return replace(box_map_parts(), version=version).pack()


def truncated_bsp(size: int | None = None) -> bytes:
    """The box map cut to ``size`` bytes (default: in the middle of the last lump in the file,
    so that lump ends past the end of the file; a size below 124 cuts the header)."""
    data = box_map_bsp()
    if size is None:
        offset, length = max(lump_directory(data).values())
        size = offset + length // 2
    return data[:size]


def lump_past_end_bsp(lump: str = "leaves", past: int = 4) -> bytes:
    """The box map with ``lump``'s offset moved so it ends ``past`` bytes after the file."""
    data = box_map_bsp()
    length = lump_directory(data)[lump][1]
    return _with_lump(data, lump, len(data) + past - length, length)


def bad_lump_length_bsp(lump: str = "leaves", extra: int = 1) -> bytes:
    """The box map with ``lump``'s length not a multiple of its record size (in the file)."""
    data = box_map_bsp()
    offset, length = lump_directory(data)[lump]
    return _with_lump(data, lump, offset, length + extra)


def _broken(change: Callable[[BspParts], None]) -> bytes:
    parts = box_map_parts()
    change(parts)
    return parts.pack()


def node_child_out_of_range_bsp() -> bytes:
    """Node 0's front child is node ``NUM_NODES`` (one past the last)."""

    def change(p: BspParts) -> None:
        p.nodes[0] = p.nodes[0]._replace(children=(len(p.nodes), p.nodes[0].children[1]))

    return _broken(change)


def leaf_child_out_of_range_bsp() -> bytes:
    """Node 0's back child is leaf ``NUM_LEAVES`` (one past the last)."""

    def change(p: BspParts) -> None:
        p.nodes[0] = p.nodes[0]._replace(children=(p.nodes[0].children[0], -1 - len(p.leaves)))

    return _broken(change)


def clipnode_child_out_of_range_bsp() -> bytes:
    """Clip node 0's front child is clip node ``NUM_CLIPNODES`` (one past the last)."""

    def change(p: BspParts) -> None:
        c = p.clipnodes[0]
        p.clipnodes[0] = c._replace(children=(len(p.clipnodes), c.children[1]))

    return _broken(change)


def plane_out_of_range_bsp() -> bytes:
    """Node 0's plane is plane ``NUM_PLANES`` (one past the last)."""

    def change(p: BspParts) -> None:
        p.nodes[0] = p.nodes[0]._replace(planenum=len(p.planes))

    return _broken(change)


def headnode_out_of_range_bsp() -> bytes:
    """Model 0's hull 0 head node is node ``NUM_NODES`` (one past the last)."""

    def change(p: BspParts) -> None:
        m = p.models[0]
        p.models[0] = m._replace(headnode=(len(p.nodes), *m.headnode[1:]))

    return _broken(change)


def visofs_past_end_bsp() -> bytes:
    """Leaf 1's ``visofs`` is the visibility lump's length (no byte of its row is there)."""

    def change(p: BspParts) -> None:
        p.leaves[1] = p.leaves[1]._replace(visofs=len(p.visibility))

    return _broken(change)


def vis_row_overrun_bsp() -> bytes:
    """Leaf 1's ``visofs`` points at the last byte of the visibility lump (``04``, nonzero): its
    3-byte row runs past the end of the lump."""

    def change(p: BspParts) -> None:
        p.leaves[1] = p.leaves[1]._replace(visofs=len(p.visibility) - 1)

    return _broken(change)


def unbalanced_entities_bsp() -> bytes:
    """The entities lump misses its last ``}``."""

    def change(p: BspParts) -> None:
        p.entities = ENTITY_TEXT.rstrip().removesuffix("}").encode("ascii") + b"\0"

    return _broken(change)


BROKEN: dict[str, Callable[[], bytes]] = {
    "wrong-version": wrong_version_bsp,
    "truncated": truncated_bsp,
    "truncated-header": lambda: truncated_bsp(HEADER_SIZE - 4),
    "empty": lambda: truncated_bsp(0),
    "lump-past-end": lump_past_end_bsp,
    "bad-lump-length": bad_lump_length_bsp,
    "node-child-out-of-range": node_child_out_of_range_bsp,
    "leaf-child-out-of-range": leaf_child_out_of_range_bsp,
    "clipnode-child-out-of-range": clipnode_child_out_of_range_bsp,
    "plane-out-of-range": plane_out_of_range_bsp,
    "headnode-out-of-range": headnode_out_of_range_bsp,
    "visofs-past-end": visofs_past_end_bsp,
    "vis-row-overrun": vis_row_overrun_bsp,
    "unbalanced-entities": unbalanced_entities_bsp,
}
"""Name -> function making a broken file, for ``pytest.mark.parametrize``."""
