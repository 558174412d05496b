"""Hostile and corrupted BSP files: a map file is untrusted input.

Every broken file here is refused with one :class:`InputError` line that names the file and
the problem, within :data:`SECONDS` seconds, never with a hang, a traceback or an allocation
sized by the file's claim.  Most files are the box map of ``tests/bsp_builder.py`` with one
thing broken; the bit flip that made a loop in dm1's clip tree needs id's GPL maps
(``../shared/maps/quake-gpl/``) and skips without them.  Valid trees that are merely unusual
(nodes not in qbsp's order, shared subtrees, a tree exactly at the depth cap) still load.
"""

from __future__ import annotations

import gzip
import math
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.world.bsp.entities import model_index, origin_of
from simsrv.world.bsp.hull import HullTree
from simsrv.world.bsp.limits import (
    MAX_CLIPNODES,
    MAX_ENTITIES,
    MAX_ENTITY_BYTES,
    MAX_FILE_BYTES,
    MAX_LEAVES,
    MAX_NODES,
    MAX_TREE_DEPTH,
)
from simsrv.world.bsp.reader import parse_bsp, read_bsp
from simsrv.world.bsp.vis import decompress_rows, pvs_matrix
from simsrv.world.maps.bsp_map import BspParams, build_bsp
from tests import bsp_builder as box

ROOT = Path(__file__).resolve().parents[1]
MAPS_DIR = ROOT.parent / "shared" / "maps" / "quake-gpl"
DM1 = MAPS_DIR / "dm1.bsp.gz"
DM1_LOOP_BYTE = 147232
"""A byte of dm1's clip node 1232 (its front child): flipping its lowest bit makes a loop."""
SECONDS = 5.0
"""A refusal must come within this many seconds (the CLI's too, start-up included)."""

needs_dm1 = pytest.mark.skipif(
    not DM1.is_file(), reason=f"the GPL Quake maps are not in {MAPS_DIR}"
)

POINTS = np.random.default_rng(42).uniform((-64, -64, -64), (1472, 576, 208), size=(64, 3))
"""Points in and around the box map's world, for the tree walks."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` in the body after ``seconds`` (a hang fails, not blocks)."""

    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def use(bsp) -> None:
    """What a run does with a read map: decompress the PVS and walk every hull of every
    model (a loop the reader let through hangs here)."""
    pvs_matrix(bsp)
    for model in range(len(bsp.models)):
        for hull in (0, 1, 2):
            HullTree.of(bsp, hull, model).terminal(POINTS)


def refusal(path: Path) -> str:
    """The one-line message refusing ``path`` (read and used within ``SECONDS``)."""
    with time_limit(SECONDS), pytest.raises(InputError) as error:
        use(read_bsp(path))
    message = str(error.value)
    assert "\n" not in message and len(message) < 300, message
    assert message.startswith(f"map.file: {path}: "), message
    return message


def parts_with(change: Callable[[box.BspParts], None]) -> bytes:
    """The box map with ``change`` applied to its records."""
    parts = box.box_map_parts()
    change(parts)
    return parts.pack()


def write(tmp_path: Path, data: bytes, name: str = "map.bsp") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------------------------
# Loops and depth
# --------------------------------------------------------------------------------------------


def first_terminal(records: list, head: int) -> tuple[int, int]:
    """(node, side) of the first terminal child met going down front children from ``head``."""
    node = head
    while True:
        for side in (0, 1):
            if records[node].children[side] < 0:
                return node, side
        node = records[node].children[0]


def loop_to_head(table: str, model: int, hull: int) -> Callable[[box.BspParts], None]:
    """A change pointing the first terminal child below a model's head back at the head."""

    def change(p: box.BspParts) -> None:
        records = getattr(p, table)
        head = p.models[model].headnode[hull]
        node, side = first_terminal(records, head)
        children = list(records[node].children)
        children[side] = head
        records[node] = records[node]._replace(children=tuple(children))

    return change


def self_loop(p: box.BspParts) -> None:
    """Node 1 (below the world's head) is its own front child."""
    p.nodes[1] = p.nodes[1]._replace(children=(1, p.nodes[1].children[1]))


LOOPS = {
    "node-self": (self_loop, "node 1 is below itself"),
    "node-back-to-head": (loop_to_head("nodes", 0, 0), "loop in the node tree"),
    "clip-hull1-back-to-head": (loop_to_head("clipnodes", 0, 1), "loop in the clip node tree"),
    "brush-model-hull2": (loop_to_head("clipnodes", 2, 2), "loop in the clip node tree"),
    "brush-model-hull0": (loop_to_head("nodes", 1, 0), "loop in the node tree"),
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_loop_in_a_tree_is_refused(tmp_path, name):
    change, match = LOOPS[name]
    assert match in refusal(write(tmp_path, parts_with(change)))


@needs_dm1
def test_the_dm1_bit_flip_is_refused_as_a_loop(tmp_path):
    data = bytearray(gzip.decompress(DM1.read_bytes()))
    data[DM1_LOOP_BYTE] ^= 1
    assert "loop in the clip node tree" in refusal(write(tmp_path, bytes(data), "dm1-flip.bsp"))


def chain_of(depth: int) -> Callable[[box.BspParts], None]:
    """Model 2's hull 2 head becomes a chain of ``depth`` new clip nodes (each: front the
    next, back solid; the last: front empty), so its tree is exactly ``depth`` levels."""

    def change(p: box.BspParts) -> None:
        start = len(p.clipnodes)
        for i in range(depth):
            front = start + i + 1 if i < depth - 1 else box.CONTENTS_EMPTY
            p.clipnodes.append(box.ClipNode(0, (front, box.CONTENTS_SOLID)))
        m = p.models[2]
        p.models[2] = m._replace(headnode=(m.headnode[0], m.headnode[1], start, 0))

    return change


def test_a_tree_at_the_depth_cap_loads_and_one_level_more_is_refused(tmp_path):
    with time_limit(SECONDS):
        use(parse_bsp(parts_with(chain_of(MAX_TREE_DEPTH)), "deep.bsp"))
    message = refusal(write(tmp_path, parts_with(chain_of(MAX_TREE_DEPTH + 1))))
    assert f"clip node tree is more than {MAX_TREE_DEPTH} levels deep" in message


def reversed_order(p: box.BspParts) -> None:
    """Nodes and clip nodes stored last to first (children before parents, unlike qbsp)."""
    for table, hulls in (("nodes", (0,)), ("clipnodes", (1, 2))):
        records = getattr(p, table)
        last = len(records) - 1

        def moved(child: int, last: int = last) -> int:
            return last - child if child >= 0 else child

        setattr(
            p,
            table,
            [r._replace(children=tuple(moved(c) for c in r.children)) for r in records[::-1]],
        )
        for i, m in enumerate(p.models):
            heads = list(m.headnode)
            for hull in hulls:
                heads[hull] = moved(heads[hull])
            p.models[i] = m._replace(headnode=tuple(heads))


def test_trees_stored_out_of_qbsp_order_load_and_answer_the_same():
    plain = parse_bsp(box.box_map_bsp(), "box.bsp")
    turned = parse_bsp(parts_with(reversed_order), "reversed.bsp")
    for model in range(box.NUM_MODELS):
        for hull in (0, 1, 2):
            a = HullTree.of(plain, hull, model).terminal(POINTS)
            b = HullTree.of(turned, hull, model).terminal(POINTS)
            np.testing.assert_array_equal(a, b)


def test_a_shared_subtree_is_not_a_loop():
    """Both children of the world's hull 1 head lead to the same subtree: a DAG, walkable."""

    def change(p: box.BspParts) -> None:
        head = p.models[0].headnode[1]
        front = p.clipnodes[head].children[0]
        p.clipnodes[head] = p.clipnodes[head]._replace(children=(front, front))

    with time_limit(SECONDS):
        use(parse_bsp(parts_with(change), "shared.bsp"))


# --------------------------------------------------------------------------------------------
# Files that are cut, empty, another version, broken gzip, bombs, huge counts, bad indices
# --------------------------------------------------------------------------------------------


@cache
def gzip_bomb(inflated_mib: int = 256) -> bytes:
    """A gzip stream of ``inflated_mib`` MiB of zeros in 16 MiB members (~16 KB each): about
    a thousandth of its inflated size on disk."""
    member = gzip.compress(bytes(16 * 2**20), compresslevel=9, mtime=0)
    return member * math.ceil(inflated_mib / 16)


def corrupt_deflate() -> bytes:
    """The gzipped box map with a byte of its deflate stream inverted (zlib's error)."""
    data = bytearray(gzip.compress(box.box_map_bsp(), mtime=0))
    data[40] ^= 0xFF
    return bytes(data)


def with_records(table: str, count: int) -> Callable[[box.BspParts], None]:
    """A change giving ``table`` ``count`` records: cut, or padded with copies of its first."""

    def change(p: box.BspParts) -> None:
        records = getattr(p, table)
        records[:] = (records + [records[0]] * count)[:count]

    return change


def many_entities(p: box.BspParts) -> None:
    extra = '{ "classname" "info_null" }\n' * MAX_ENTITIES
    p.entities = box.ENTITY_TEXT.encode("ascii") + extra.encode("ascii") + b"\0"


def huge_entities_lump(p: box.BspParts) -> None:
    p.entities = box.ENTITY_TEXT.encode("ascii") + b" " * MAX_ENTITY_BYTES + b"\0"


def set_record(table: str, index: int, **fields) -> Callable[[box.BspParts], None]:
    """A change setting ``fields`` of record ``index`` of ``table`` (-1: the last)."""

    def change(p: box.BspParts) -> None:
        records = getattr(p, table)
        records[index] = records[index]._replace(**fields)

    return change


def set_head(model: int, hull: int, value: int | None = None, past: str = "") -> Callable:
    """A change setting a model's head node of ``hull`` to ``value`` or one past ``past``."""

    def change(p: box.BspParts) -> None:
        heads = list(p.models[model].headnode)
        heads[hull] = len(getattr(p, past)) if past else value
        p.models[model] = p.models[model]._replace(headnode=tuple(heads))

    return change


def zero_length_runs(p: box.BspParts) -> None:
    """Leaf 1's row starts with four zero runs of length 0 (``00 00``): 8 bytes that give
    nothing, past the 6 bytes a 3-byte row may take."""
    row = box.VISOFS[1]
    start = b"\0\0" * 4
    p.visibility = p.visibility[:row] + start + p.visibility[row:]
    p.leaves = [
        leaf._replace(visofs=leaf.visofs + len(start) if leaf.visofs > row else leaf.visofs)
        for leaf in p.leaves
    ]


def records_lump(name: str, claimed: int) -> Callable[[], bytes]:
    """The box map whose header gives lump ``name`` a length of ``claimed`` bytes."""

    def make() -> bytes:
        data = box.box_map_bsp()
        offset = box.lump_directory(data)[name][0]
        i = box.LUMP_NAMES.index(name)
        return data[: 4 + 8 * i] + struct.pack("<2i", offset, claimed) + data[12 + 8 * i :]

    return make


def mutated(change: Callable[[box.BspParts], None]) -> Callable[[], bytes]:
    return lambda: parts_with(change)


HOSTILE: dict[str, tuple[Callable[[], bytes], str, str]] = {
    # name: (bytes, file name, what the message says)
    "empty": (lambda: b"", "map.bsp", "0 bytes, too short for a BSP header"),
    "header-cut": (lambda: box.truncated_bsp(100), "map.bsp", "too short for a BSP header"),
    "truncated": (box.truncated_bsp, "map.bsp", "runs past the end of the file"),
    "truncated-gz": (
        lambda: gzip.compress(box.truncated_bsp(), mtime=0),
        "map.bsp.gz",
        "runs past the end of the file",
    ),
    "wrong-version": (lambda: box.wrong_version_bsp(30), "map.bsp", "BSP version 30"),
    "wrong-version-gz": (
        lambda: gzip.compress(box.wrong_version_bsp(38), mtime=0),
        "map.bsp.gz",
        "BSP version 38",
    ),
    "gzip-cut": (
        lambda: gzip.compress(box.box_map_bsp(), mtime=0)[:-100],
        "map.bsp.gz",
        "broken gzip data",
    ),
    "gzip-corrupt-deflate": (corrupt_deflate, "map.bsp.gz", "broken gzip data"),
    "gzip-header-only": (lambda: b"\x1f\x8b" + bytes(40), "map.bsp.gz", "broken gzip data"),
    "gzip-bomb": (gzip_bomb, "bomb.bsp.gz", f"inflates to more than {MAX_FILE_BYTES >> 20} MiB"),
    "leaf-count-1e9": (
        records_lump("leaves", 28 * 76_000_000),
        "map.bsp",
        "+2128000000 bytes) runs past the end of the file",
    ),
    "too-many-leaves": (
        mutated(with_records("leaves", MAX_LEAVES + 1)),
        "map.bsp",
        f"holds {MAX_LEAVES + 1} records, more than the {MAX_LEAVES}",
    ),
    "too-many-nodes": (
        mutated(with_records("nodes", MAX_NODES + 1)),
        "map.bsp",
        f"holds {MAX_NODES + 1} records, more than the {MAX_NODES}",
    ),
    "too-many-clipnodes": (
        mutated(with_records("clipnodes", MAX_CLIPNODES + 1)),
        "map.bsp",
        f"holds {MAX_CLIPNODES + 1} records, more than the {MAX_CLIPNODES}",
    ),
    "too-many-entities": (mutated(many_entities), "map.bsp", f"more than the {MAX_ENTITIES}"),
    "entities-lump-too-big": (
        mutated(huge_entities_lump),
        "map.bsp",
        f"more than the {MAX_ENTITY_BYTES} simsrv reads",
    ),
    "edges-not-whole-records": (
        lambda: box.bad_lump_length_bsp("edges", 1),
        "map.bsp",
        "lump 12 (edges) is",
    ),
    "node-faces-out-of-range": (
        mutated(set_record("nodes", 0, firstface=box.NUM_FACES)),
        "map.bsp",
        "a node's faces run past",
    ),
    "leaf-marksurfaces-out-of-range": (
        mutated(set_record("leaves", 1, firstmarksurface=76, nummarksurfaces=1)),
        "map.bsp",
        "a leaf's mark surfaces run past",
    ),
    "model-faces-out-of-range": (
        mutated(set_record("models", 1, firstface=box.NUM_FACES)),
        "map.bsp",
        "a model's faces run past",
    ),
    "brush-model-hull0-head-out-of-range": (
        mutated(set_head(1, 0, past="nodes")),
        "map.bsp",
        "a model's hull 0 head node is outside",
    ),
    "world-hull2-head-out-of-range": (
        mutated(set_head(0, 2, past="clipnodes")),
        "map.bsp",
        "hull 1 or 2 head node is outside",
    ),
    "brush-model-hull1-head-negative": (
        mutated(set_head(2, 1, value=-1)),
        "map.bsp",
        "hull 1 or 2 head node is outside",
    ),
    "clip-contents-below-15": (
        mutated(set_record("clipnodes", 2, children=(3, -16))),
        "map.bsp",
        "a clip node's child is outside",
    ),
    "nan-plane": (
        mutated(set_record("planes", 0, dist=float("nan"))),
        "map.bsp",
        "a plane's normal or distance is not a finite number",
    ),
    "infinite-world-box": (
        mutated(set_record("models", 0, maxs=(float("inf"), 527.0, 143.0))),
        "map.bsp",
        "a model's bounding box is not finite",
    ),
    "model-box-too-far": (
        mutated(set_record("models", 1, mins=(-40000.0, 105.0, 1.0))),
        "map.bsp",
        "a model's bounding box reaches beyond",
    ),
    "no-nodes": (mutated(with_records("nodes", 0)), "map.bsp", "inconsistent BSP: no nodes"),
    "no-clipnodes": (
        mutated(with_records("clipnodes", 0)),
        "map.bsp",
        "inconsistent BSP: no clipnodes",
    ),
    "pvs-zero-length-runs": (mutated(zero_length_runs), "map.bsp", "does not end within 6 bytes"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_is_refused_in_one_line(tmp_path, name):
    make, file_name, match = HOSTILE[name]
    path = write(tmp_path, make(), file_name)
    started = time.perf_counter()
    message = refusal(path)
    assert match in message
    assert time.perf_counter() - started < SECONDS


def test_a_plain_file_past_the_cap_is_refused_before_it_is_read_whole(tmp_path):
    path = box.write_bsp(tmp_path / "big.bsp")
    with path.open("r+b") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk space
    assert f"more than {MAX_FILE_BYTES >> 20} MiB" in refusal(path)


def test_a_gzip_bomb_is_small_on_disk():
    bomb = gzip_bomb()
    assert len(bomb) < 2**20 and len(bomb) * 200 < 256 * 2**20


@needs_dm1
def test_every_gpl_map_passes_the_checks():
    for path in sorted(MAPS_DIR.glob("*.bsp.gz")):
        use(read_bsp(path))


# --------------------------------------------------------------------------------------------
# PVS rows
# --------------------------------------------------------------------------------------------


def reference_row(data: bytes, offset: int, row_bytes: int) -> bytes | None:
    """``Mod_DecompressVis`` byte by byte, or None where the reader must refuse the row: it
    starts outside ``data``, runs past it or a token starts ``2 * row_bytes`` bytes or more
    after ``offset``."""
    if offset < 0:
        return None
    out, filled, i = bytearray(row_bytes), 0, offset
    while filled < row_bytes:
        if i >= len(data) or i - offset >= 2 * row_bytes:
            return None
        if data[i]:
            out[filled] = data[i]
            filled, i = filled + 1, i + 1
        elif i + 1 >= len(data):
            return None
        else:
            filled, i = filled + data[i + 1], i + 2
    return bytes(out)


VIS_BYTES = st.one_of(st.sampled_from([0, 0, 0, 1, 2, 3, 8, 128, 255]), st.integers(0, 255))


@settings(max_examples=400, deadline=None)
@given(
    data=st.lists(VIS_BYTES, max_size=160).map(bytes),
    row_bytes=st.integers(1, 40),
    offsets=st.lists(st.integers(-2, 170), min_size=1, max_size=8),
)
def test_rows_decode_as_mod_decompressvis_does(data, row_bytes, offsets):
    """All rows at once in numpy give the bytes of the byte-by-byte loop, and refuse the first
    row it cannot finish (offsets past the lump included)."""
    expected = [reference_row(data, o, row_bytes) for o in offsets]
    if None in expected:
        first = offsets[expected.index(None)]
        with pytest.raises(InputError, match=f"map.file: v.bsp: PVS row at offset {first} "):
            decompress_rows(data, np.array(offsets), row_bytes, "v.bsp")
    else:
        rows = decompress_rows(data, np.array(offsets), row_bytes, "v.bsp")
        assert [row.tobytes() for row in rows] == expected


def test_the_costliest_pvs_a_map_may_have_is_read_in_bounded_time():
    """8192 leaves whose rows all take the most tokens a row may (``01 00 01``: a byte, a run
    of one zero): the PVS matrix is read within the time limit (a byte-by-byte loop took 3 s,
    copying runs of nonzero bytes 10 s)."""

    def change(p: box.BspParts) -> None:
        p.visibility = bytes([1, 0, 1]) * 700
        leaf = p.leaves[1]._replace(visofs=0)
        p.leaves.extend([leaf] * (MAX_LEAVES - len(p.leaves)))
        p.models[0] = p.models[0]._replace(visleafs=MAX_LEAVES - 1)

    bsp = parse_bsp(parts_with(change), "costly.bsp")
    with time_limit(SECONDS):
        matrix = pvs_matrix(bsp)
    row = np.frombuffer(reference_row(bsp.visibility, 0, MAX_LEAVES // 8), dtype=np.uint8)
    expected = np.unpackbits(row, bitorder="little")[: MAX_LEAVES - 1].astype(bool)
    np.testing.assert_array_equal(matrix[-1, 1:], expected)  # a leaf added with visofs 0


# --------------------------------------------------------------------------------------------
# Entity text
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["nan 0 0", "0 inf 0", "1e999 0 0", "0 0 40000"])
def test_an_origin_must_be_finite_and_in_the_world(origin):
    with pytest.raises(InputError, match=r"map\.file: m\.bsp: entity origin .* not within"):
        origin_of({"origin": origin}, "m.bsp")


def test_a_spawn_origin_out_of_the_world_refuses_the_map_naming_the_file(tmp_path):
    spawn = f'"origin" "{" ".join(str(int(c)) for c in box.DEATHMATCH_SPAWNS[0])}"'
    assert spawn in box.ENTITY_TEXT

    def change(p: box.BspParts) -> None:
        p.entities = box.ENTITY_TEXT.replace(spawn, '"origin" "1e999 0 0"').encode() + b"\0"

    path = write(tmp_path, parts_with(change))
    with pytest.raises(InputError, match=f"map.file: {path}: entity origin '1e999 0 0'"):
        build_bsp(BspParams(file=str(path), nav_samples=16), np.random.default_rng(1))


def test_a_brush_model_number_must_be_ascii_digits():
    assert model_index({"model": "*\u00b2"}) is None  # superscript two: isdigit() is True
    assert model_index({"model": "*12"}) == 12


def test_a_message_quotes_only_the_start_of_a_long_token():
    def change(p: box.BspParts) -> None:
        p.entities = b"x" * 100_000 + b"\0"

    with pytest.raises(InputError) as error:
        parse_bsp(parts_with(change), "long.bsp")
    assert "unexpected 'xxxx" in str(error.value) and len(str(error.value)) < 200


# --------------------------------------------------------------------------------------------
# Any mutation of a valid file: loads, or one InputError line
# --------------------------------------------------------------------------------------------

VALID = box.box_map_bsp()
REGIONS = {"header": (0, box.HEADER_SIZE), "anywhere": (0, len(VALID))}
REGIONS.update(
    {
        name: (offset, offset + length)
        for name, (offset, length) in box.lump_directory(VALID).items()
        if length and name in ("nodes", "clipnodes", "leaves", "models", "planes", "visibility")
    }
)


@st.composite
def mutations(draw) -> bytes:
    """The box map with 1-4 edits (a flipped bit, a byte, an aligned 16- or 32-bit integer)
    in the header, a lump the reader uses or anywhere, then perhaps cut short."""
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        low, high = REGIONS[draw(st.sampled_from(sorted(REGIONS)))]
        kind = draw(st.sampled_from(["bit", "byte", "int16", "int32"]))
        if kind == "bit":
            data[draw(st.integers(low, high - 1))] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[draw(st.integers(low, high - 1))] = draw(st.integers(0, 255))
        else:
            size, fmt = (2, "<h") if kind == "int16" else (4, "<i")
            at = draw(st.integers(low // size, (high - size) // size)) * size
            special = st.sampled_from([-1, -2, -16, 0, 1, 2**15 - 1, -(2**15)])
            value = draw(
                st.one_of(special, st.integers(-(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1))
            )
            struct.pack_into(fmt, data, at, value)
    if draw(st.integers(0, 9)) == 0:  # one in ten is cut short too
        del data[draw(st.integers(0, len(data))) :]
    return bytes(data)


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutations(), compressed=st.booleans())
def test_a_mutated_file_loads_or_is_refused_in_one_line(scratch, data, compressed):
    path = box.write_bsp(scratch / ("map.bsp.gz" if compressed else "map.bsp"), data)
    with time_limit(SECONDS):
        try:
            use(read_bsp(path))
            build_bsp(BspParams(file=str(path), nav_samples=16), np.random.default_rng(0))
        except InputError as error:
            message = str(error)
            assert "\n" not in message and message.startswith("map.file: "), message
            assert str(path) in message, message


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


def run_cli(map_file: Path) -> tuple[subprocess.CompletedProcess, float]:
    """The issue's reproducer on ``map_file``: exit status, output and wall time."""
    command = [
        sys.executable,
        "-m",
        "simsrv",
        "run",
        "scenarios/bsp/dm4-160.toml",
        "--set",
        f"map.file={map_file}",
        "--set",
        "players.count=16",
        "--set",
        "run.duration_s=0.2",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    return done, time.perf_counter() - started


def assert_one_line_exit_2(done: subprocess.CompletedProcess, seconds: float, path: Path) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"simsrv: error: map.file: {path}: "), lines
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    return lines[0]


@needs_dm1
def test_the_cli_refuses_the_dm1_bit_flip_in_one_line(tmp_path):
    data = bytearray(gzip.decompress(DM1.read_bytes()))
    data[DM1_LOOP_BYTE] ^= 1
    path = write(tmp_path, bytes(data), "f.bsp")
    line = assert_one_line_exit_2(*run_cli(path), path)
    assert "loop in the clip node tree" in line


@pytest.mark.parametrize("name", ["gzip-bomb", "gzip-corrupt-deflate"])
def test_the_cli_refuses_a_hostile_file_in_one_line(tmp_path, name):
    make, file_name, match = HOSTILE[name]
    path = write(tmp_path, make(), file_name)
    assert match in assert_one_line_exit_2(*run_cli(path), path)


def test_the_cli_refuses_a_loop_in_the_box_map_in_one_line(tmp_path):
    path = write(tmp_path, parts_with(loop_to_head("clipnodes", 0, 1)), "loop.bsp")
    assert "loop" in assert_one_line_exit_2(*run_cli(path), path)
