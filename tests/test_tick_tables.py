"""The compiled per-tick tables of the thread strategies equal their numpy reference.

``abdelkhalek``'s lock facts (:func:`simsrv.strategies.region_locks.lock_tables`) and
``area-quadrant``'s area facts (:func:`simsrv.strategies.quadrant_tables.area_tables`) are
computed box by box in compiled code; the numpy composition they replace
(``AreanodeTree.link``, ``covering``, ``overlaps``, :func:`path_locks`, :func:`walked_nodes`,
:func:`request_schedule`, ``np.packbits``) is kept here as the reference, and the two must
give the same integers on random positions and on positions clustered on the tree's split
lines and region borders (where ``<`` against ``<=`` decides), for every option that changes
the tables.  :class:`PerTick` places ticks in its ring as its Python rule did.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.strategies.area_quadrant import area_depth, request_schedule
from simsrv.strategies.positions import PerTick
from simsrv.strategies.quadrant_tables import STAGE2_CODES, area_tables
from simsrv.strategies.region_locks import lock_tables, path_locks, walked_nodes
from simsrv.world.areanode import AreanodeTree
from simsrv.world.areanode_kernels import (
    covering_rows,
    link_rows,
    node_depth,
    overlaps_rows,
)
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS
from tests.strategy_harness import make_strategy


def _reference_locks(tree, origins, half_range, leaf_to_root):
    """The numpy lock facts (the body ``Abdelkhalek._player_locks`` had)."""
    box_min, box_max = origins + PLAYER_MINS, origins + PLAYER_MAXS
    reach = np.array([half_range, half_range, 0.0])
    if leaf_to_root:
        start, scope = path_locks(tree, origins, origins - reach, origins + reach)
        own = tree.covering(start, box_min, box_max)[0]
        own_start = start
    else:
        own = own_start = tree.link(box_min, box_max)
        start = own
        scope = tree.covering(own, origins - reach, origins + reach)[0]
    arrays = (
        start,
        scope,
        walked_nodes(start, scope),
        own_start,
        own,
        walked_nodes(own_start, own),
    )
    return tuple(np.asarray(a, dtype=np.int64) for a in arrays)


def _reference_areas(tree, origins, half_range, areas, threads, stage2):
    """The numpy area facts (the body ``AreaQuadrant._player_areas`` had)."""
    own = tree.link(origins + PLAYER_MINS, origins + PLAYER_MAXS)
    schedule = request_schedule(own, threads, stage2)
    reach = np.array([half_range, half_range, 0.0])
    meets = tree.overlaps(areas, origins - reach, origins + reach)
    return (
        np.asarray(schedule.step, dtype=np.int64),
        np.asarray(schedule.thread, dtype=np.int64),
        np.packbits(meets, axis=1),
        meets.sum(axis=1).astype(np.int64),
    )


def _assert_same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


def _origins(tree, seed, count, half_range, clustered):
    """``count`` (N, 3) origins: uniform over the tree's extent (and a little outside it), or
    clustered on the split lines, the region borders and those offset by the player box and
    by the action range (the values where a strict and a non-strict comparison differ)."""
    rng = np.random.default_rng(seed)
    lo, hi = tree.lo[0], tree.hi[0]
    if not clustered:
        xy = rng.uniform(lo - 64.0, hi + 64.0, (count, 2))
    else:
        edges = np.unique(np.concatenate([tree.lo.ravel(), tree.hi.ravel()]))
        offsets = np.array([0.0, 16.0, -16.0, half_range, -half_range, 0.5, -0.5])
        candidates = (edges[:, None] + offsets[None]).ravel()
        xy = rng.choice(candidates, (count, 2))
        jitter = rng.random((count, 2)) < 0.2
        xy = np.where(jitter, xy + rng.normal(0.0, 8.0, (count, 2)), xy)
    z = rng.uniform(-100.0, 300.0, (count, 1))
    return np.ascontiguousarray(np.hstack([xy, z]))


_EXTENTS = st.sampled_from([(2048.0, 2048.0), (2048.0, 1024.0), (1000.0, 3000.0), (64.0, 64.0)])
_HALF_RANGES = st.sampled_from([128.0, 16.0, 0.0, 300.5, 2000.0])


@settings(max_examples=120, deadline=None)
@given(
    extent=_EXTENTS,
    depth=st.integers(1, 7),
    half_range=_HALF_RANGES,
    seed=st.integers(0, 2**31),
    count=st.integers(0, 300),
    clustered=st.booleans(),
    leaf_to_root=st.booleans(),
)
def test_lock_tables_equal_the_numpy_reference(
    extent, depth, half_range, seed, count, clustered, leaf_to_root
):
    tree = AreanodeTree.build(np.zeros(3), np.array([*extent, 256.0]), depth)
    origins = _origins(tree, seed, count, half_range, clustered)
    got = lock_tables(
        tree.axis, tree.dist, tree.lo, tree.hi, tree.depth, origins, PLAYER_MINS, PLAYER_MAXS,
        half_range, leaf_to_root,
    )  # fmt: skip
    _assert_same(got, _reference_locks(tree, origins, half_range, leaf_to_root))


@settings(max_examples=120, deadline=None)
@given(
    extent=_EXTENTS,
    half_range=_HALF_RANGES,
    seed=st.integers(0, 2**31),
    count=st.integers(0, 300),
    clustered=st.booleans(),
    threads=st.integers(1, 40),
    stage2=st.sampled_from(["basic", "optimized", "sequential"]),
)
def test_area_tables_equal_the_numpy_reference(
    extent, half_range, seed, count, clustered, threads, stage2
):
    level = area_depth(threads)
    tree = AreanodeTree.build(np.zeros(3), np.array([*extent, 256.0]), max(4, level))
    areas = AreanodeTree.level(level)
    origins = _origins(tree, seed, count, half_range, clustered)
    got = area_tables(
        tree.axis, tree.dist, tree.lo, tree.hi, tree.depth, origins, PLAYER_MINS, PLAYER_MAXS,
        half_range, areas, threads, STAGE2_CODES[stage2], level,
    )  # fmt: skip
    _assert_same(got, _reference_areas(tree, origins, half_range, areas, threads, stage2))


@settings(max_examples=60, deadline=None)
@given(
    extent=_EXTENTS,
    depth=st.integers(0, 6),
    seed=st.integers(0, 2**31),
    count=st.integers(0, 200),
    size=st.floats(0.0, 900.0),
)
def test_the_box_walks_equal_the_tree_methods(extent, depth, seed, count, size):
    # boxes of any size, anywhere (also outside the tree and inverted ones): link, covering
    # from any start node, overlaps of every node and the depth of every node
    tree = AreanodeTree.build(np.zeros(3), np.array([*extent, 256.0]), depth)
    rng = np.random.default_rng(seed)
    corners = rng.uniform(-100.0, max(extent) + 100.0, (count, 2))
    sizes = rng.uniform(-0.1 * size, size, (count, 2))
    box_min, box_max = corners, corners + sizes
    np.testing.assert_array_equal(
        link_rows(tree.axis, tree.dist, tree.depth, box_min, box_max),
        tree.link(box_min, box_max),
    )
    start = rng.integers(0, tree.nodes, count)
    for got, expected in zip(
        covering_rows(tree.lo, tree.hi, tree.depth, start, box_min, box_max),
        tree.covering(start, box_min, box_max),
        strict=True,
    ):
        np.testing.assert_array_equal(got, expected)
    nodes = np.arange(tree.nodes)
    np.testing.assert_array_equal(
        overlaps_rows(tree.lo, tree.hi, nodes, box_min, box_max),
        tree.overlaps(nodes, box_min, box_max),
    )
    depths = [node_depth(int(n)) for n in nodes]
    assert depths == AreanodeTree.node_depth(nodes).tolist()


def _player_origins(seed, count):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0.0, 2048.0, (count, 2))
    grid = np.array([0.0, 512.0, 1024.0, 1536.0, 2048.0])  # the cube's split lines
    near = rng.random(count) < 0.4
    xy[near] = rng.choice(grid, (int(near.sum()), 2)) + rng.choice([-16.0, 0.0, 16.0, 128.0], 1)
    return np.hstack([xy, np.full((count, 1), 24.0)])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    locking=st.sampled_from(["region", "region-optimized"]),
    lock_scope=st.sampled_from(["leaf-to-root", "two-nodes"]),
    threads=st.sampled_from([0, 3, "per-client"]),
    half_range=_HALF_RANGES,
)
def test_abdelkhalek_tables_equal_the_reference_for_every_option(
    seed, locking, lock_scope, threads, half_range
):
    origins = _player_origins(seed, 40)
    options = {"locking": locking, "lock_scope": lock_scope, "threads": threads}
    strategy = make_strategy("abdelkhalek", origins, options, 2, {})
    strategy.half_range = half_range
    expected = _reference_locks(strategy.tree, origins, half_range, lock_scope == "leaf-to-root")
    _assert_same(strategy.player_locks.at(7), expected)


def test_abdelkhalek_without_locks_keeps_no_tables():
    strategy = make_strategy("abdelkhalek", _player_origins(0, 4), {"locking": "none"}, 2, {})
    assert strategy.player_locks is None


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    threads=st.sampled_from([0, 2, 3, 4, 8, 32]),
    stage2=st.sampled_from(["basic", "optimized"]),
    locking=st.sampled_from(["area", "none"]),
    stage3=st.sampled_from(["cyclic", "active", "sequential"]),
    half_range=_HALF_RANGES,
)
def test_area_quadrant_tables_equal_the_reference_for_every_option(
    seed, threads, stage2, locking, stage3, half_range
):
    origins = _player_origins(seed, 40)
    options = {"threads": threads, "stage2": stage2, "locking": locking, "stage3": stage3}
    strategy = make_strategy("area-quadrant", origins, options, 2, {})
    strategy.half_range = half_range
    expected = _reference_areas(
        strategy.tree, origins, half_range, strategy.areas, strategy.threads, strategy.stage2
    )
    _assert_same(strategy.player_areas.at(3), expected)


def _reference_load(ring_ticks: list[int], ticks: list[int]) -> list[int]:
    """The slot ticks after loading ``ticks`` by the Python eviction rule ``PerTick.load``
    had: each missing tick (ascending) takes the slot of the smallest tick the frame does not
    need (lowest slot on ties), or a new slot (the ring doubles) when none is free."""
    wanted = set(ticks)
    ring = list(ring_ticks)
    for tick in sorted(wanted.difference(ring)):
        free = [(t, slot) for slot, t in enumerate(ring) if t not in wanted]
        if not free:
            slot = len(ring)
            ring += [-1] * len(ring)
        else:
            slot = min(free)[1]
        ring[slot] = tick
    return ring


class _Positions:
    players = 2

    def __init__(self) -> None:
        self.asked: list[int] = []

    def positions(self, tick: int) -> np.ndarray:
        self.asked.append(tick)
        return np.full((self.players, 3), float(tick))


@settings(max_examples=100, deadline=None)
@given(
    keep=st.integers(1, 6),
    frames=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=15), max_size=25),
)
def test_the_ring_places_ticks_as_the_python_rule_did(keep, frames):
    world = _Positions()
    ring = PerTick(world, lambda origins: (origins[:, 0].astype(np.int64),), keep=keep)
    expected = ring.ticks.tolist()
    for ticks in frames:
        before = len(world.asked)
        missing = sorted(set(ticks).difference(expected))
        expected = _reference_load(expected, ticks)
        ring.load(np.array(ticks, np.int32))
        assert ring.ticks.tolist() == expected
        assert world.asked[before:] == missing  # each missing tick computed once, in order
        for slot, tick in enumerate(expected):
            if tick >= 0:
                assert ring.tables[0][slot].tolist() == [tick, tick]
