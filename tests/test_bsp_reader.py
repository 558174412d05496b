"""The BSP 29 reader, hull point tests and PVS on a small map the tests build themselves
(``tests/bsp_builder.py``: every fact about it is known from its boxes, not from its trees)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.world.bsp.hull import HullTree
from simsrv.world.bsp.reader import parse_bsp, read_bsp
from simsrv.world.bsp.vis import decompress_row, pvs_matrix
from tests import bsp_builder as box


@pytest.fixture(scope="module")
def bsp():
    return parse_bsp(box.box_map_bsp(), "box.bsp")


def contents_at(bsp, hull: int, model: int, point) -> int:
    """Contents at ``point`` in a hull of a model (hull 0: through the leaf it lands in)."""
    tree = HullTree.of(bsp, hull, model)
    p = np.array([point], dtype=float)
    if hull == 0:
        return int(bsp.leaves[tree.leaf_of(p)[0]]["contents"])
    return int(tree.contents(p)[0])


def test_header_and_tables(bsp):
    assert len(bsp.leaves) == box.NUM_LEAVES
    assert len(bsp.models) == box.NUM_MODELS
    assert len(bsp.planes) == box.NUM_PLANES
    assert len(bsp.nodes) == box.NUM_NODES
    assert len(bsp.clipnodes) == box.NUM_CLIPNODES
    assert int(bsp.models[0]["visleafs"]) == box.VISLEAFS
    np.testing.assert_array_equal(bsp.world_mins, box.WORLD_MINS)
    np.testing.assert_array_equal(bsp.world_maxs, box.WORLD_MAXS)
    for model, heads in box.MODEL_HEADNODES.items():
        assert tuple(bsp.models[model]["headnode"]) == heads


def test_entities_in_file_order(bsp):
    assert bsp.entities == [dict(e) for e in box.ENTITIES]
    spawns = [e["origin"] for e in bsp.entities_of("info_player_deathmatch")]
    assert spawns == [" ".join(str(int(c)) for c in p) for p in box.DEATHMATCH_SPAWNS]


def test_points_land_in_their_leaves(bsp):
    points = np.array([p for p, _ in box.POINT_LEAVES], dtype=float)
    expected = [leaf for _, leaf in box.POINT_LEAVES]
    assert HullTree.hull0(bsp).leaf_of(points).tolist() == expected


@pytest.mark.parametrize("row", box.POINT_CONTENTS, ids=lambda r: f"hull{r[0]}-model{r[1]}-{r[2]}")
def test_point_contents_in_every_hull(bsp, row):
    hull, model, point, contents = row
    assert contents_at(bsp, hull, model, point) == contents


@settings(max_examples=300, deadline=None)
@given(
    st.tuples(
        st.floats(-40, 1450, allow_nan=False),
        st.floats(-40, 560, allow_nan=False),
        st.floats(-40, 170, allow_nan=False),
    ),
    st.sampled_from([0, 1, 2]),
)
def test_random_points_agree_with_the_boxes(point, hull):
    """Any point off the planes: the tree's answer equals the one worked out from the boxes."""
    try:
        expected = box.expected_contents(point, hull=hull)
    except ValueError:  # on a plane: the two engine conventions differ
        return
    assert contents_at(parse_bsp(box.box_map_bsp()), hull, 0, point) == expected


def test_pvs_rows_are_read_in_order_not_transposed(bsp):
    pvs = pvs_matrix(bsp)
    assert pvs.shape == (box.NUM_LEAVES, box.NUM_LEAVES)
    for leaf in range(box.NUM_LEAVES):
        seen = set(np.flatnonzero(pvs[leaf]).tolist())
        assert seen == set(box.PVS.get(leaf, frozenset())), leaf
    assert pvs[1, 2] and not pvs[2, 1]  # the deliberately one-way pair


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=80))
def test_decompressing_a_compressed_row_gives_it_back(row):
    data = box.compress_vis(row)
    assert decompress_row(data, 0, len(row)).tobytes() == row


def test_plain_and_gzip_files_read_the_same(tmp_path):
    plain = box.write_bsp(tmp_path / "box.bsp")
    packed = box.write_bsp(tmp_path / "box.bsp.gz")
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    a, b = read_bsp(plain), read_bsp(packed)
    assert a.entities == b.entities
    np.testing.assert_array_equal(a.leaves, b.leaves)
    assert a.visibility == b.visibility


@pytest.mark.parametrize("name", sorted(box.BROKEN))
def test_broken_files_give_one_line_errors(name):
    with pytest.raises(InputError) as error:
        data = box.BROKEN[name]()
        pvs_matrix(parse_bsp(data, f"{name}.bsp"))
    message = str(error.value)
    assert message.startswith("map.file: ")
    assert "\n" not in message


def test_wrong_version_names_the_version():
    with pytest.raises(InputError, match="BSP version 30, only version 29"):
        parse_bsp(box.wrong_version_bsp(30))


def test_missing_and_not_gzip_files(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_bsp(tmp_path / "none.bsp")
    broken = tmp_path / "broken.bsp.gz"
    broken.write_bytes(b"\x1f\x8b" + b"\0" * 40)
    with pytest.raises(InputError, match="broken gzip"):
        read_bsp(broken)
