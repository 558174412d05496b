"""The compiled cell list against a k-d tree (the search it replaced): same lists, bit for bit."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree

from simsrv.core.errors import InputError
from simsrv.world import cell_list, proximity
from simsrv.world.cell_list import build_grid, count_pairs, neighbour_rows
from simsrv.world.proximity import neighbour_lists


def tree_lists(players: np.ndarray, entities: np.ndarray, edge: float):
    """The action-range lists from a k-d tree pair query (the implementation before the cell
    list): pairs within Chebyshev distance ``edge / 2``, both directions, sorted per player."""
    n = len(players)
    points = np.vstack([players, entities])
    pairs = cKDTree(points).query_pairs(r=edge / 2, p=np.inf, output_type="ndarray")
    source = np.concatenate([pairs[:, 0], pairs[:, 1]]).astype(np.int64)
    target = np.concatenate([pairs[:, 1], pairs[:, 0]]).astype(np.int64)
    keep = source < n
    source, target = source[keep], target[keep]
    order = np.argsort(source * len(points) + target)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=indptr[1:])
    return indptr, target[order].astype(np.int32), len(pairs)


def assert_same(players: np.ndarray, entities: np.ndarray, edge: float) -> None:
    indptr, indices, pairs = tree_lists(players, entities, edge)
    got = neighbour_lists(players, entities, edge)
    assert got.indptr.dtype == np.int64 and got.indices.dtype == np.int32
    np.testing.assert_array_equal(got.indptr, indptr)
    np.testing.assert_array_equal(got.indices, indices)
    assert count_pairs(np.vstack([players, entities]), edge / 2) == pairs


coordinates = st.floats(-3000.0, 3000.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 400),
    entities=st.integers(0, 6),
    spread=st.floats(1.0, 20000.0),
    edge=st.floats(0.5, 2000.0),
    clusters=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_and_clustered_positions_give_the_trees_lists(
    n, entities, spread, edge, clusters, seed
):
    rng = np.random.default_rng(seed)
    points = rng.uniform(0, spread, (n + entities, 3))
    points[:, 2] = rng.uniform(0, 256, n + entities)
    if clusters:  # most points packed around a few centres, a few stacked exactly
        centres = rng.uniform(0, spread, (clusters, 3))
        pick = rng.integers(0, clusters, n)
        points[:n] = centres[pick] + rng.normal(0, edge / 2, (n, 3))
        points[: n // 5] = points[0]
    assert_same(points[:n], points[n:], edge)


@settings(max_examples=150, deadline=None)
@given(
    grid=st.lists(
        st.tuples(st.integers(-8, 8), st.integers(-8, 8), st.integers(-2, 2)),
        min_size=1,
        max_size=120,
    ),
    edge=st.sampled_from([256.0, 64.0, 1.0, 0.5, 3.0]),
    shift=st.sampled_from([0.0, 0.125, -1024.0, 1e6]),
)
def test_points_exactly_at_the_range_and_on_cell_borders(grid, edge, shift):
    """Coordinates that are multiples of half an edge: pairs at exactly the range distance
    (included: ``<=``), just beyond it, and points on cell borders."""
    points = np.array(grid, dtype=float) * (edge / 2) + shift
    entities = 1 if len(points) > 1 else 0  # the last point a map entity
    assert_same(points[: len(points) - entities], points[len(points) - entities :], edge)


@settings(max_examples=60, deadline=None)
@given(points=st.lists(st.tuples(coordinates, coordinates, coordinates), min_size=1, max_size=60))
def test_arbitrary_coordinates(points):
    array = np.array(points, dtype=float)
    assert_same(array, np.zeros((0, 3)), 256.0)


def test_degenerate_inputs():
    one = np.array([[5.0, 5.0, 5.0]])
    assert_same(one, np.zeros((0, 3)), 256.0)  # one player: nobody in range
    assert neighbour_lists(one, np.zeros((0, 3)), 256.0).counts.tolist() == [0]
    stacked = np.zeros((50, 3))  # everyone in one cell, on the same spot
    assert_same(stacked, np.zeros((0, 3)), 256.0)
    assert (neighbour_lists(stacked, np.zeros((0, 3)), 256.0).counts == 49).all()
    assert count_pairs(np.zeros((0, 3)), 128.0) == 0  # nothing at all
    line = np.column_stack([np.arange(10) * 128.0, np.zeros(10), np.zeros(10)])
    lists = neighbour_lists(line, np.zeros((0, 3)), 256.0)  # neighbours exactly 128 apart
    assert lists.counts.tolist() == [1] + [2] * 8 + [1]
    beyond = np.array([[0.0, 0, 0], [np.nextafter(128.0, 256.0), 0, 0]])
    assert neighbour_lists(beyond, np.zeros((0, 3)), 256.0).counts.tolist() == [0, 0]


def test_entities_are_listed_but_have_no_rows():
    players = np.array([[0.0, 0, 0], [1000.0, 0, 0]])
    entities = np.array([[100.0, 0, 0], [120.0, 0, 0], [5000.0, 0, 0]])
    lists = neighbour_lists(players, entities, 256.0)
    assert lists.indptr.tolist() == [0, 2, 2]
    assert lists.indices.tolist() == [2, 3]


def test_a_sparse_huge_map_widens_the_cells_within_budget():
    rng = np.random.default_rng(4)
    points = rng.uniform(0, 1e9, (300, 3))
    points[:10] = rng.uniform(0, 300, (10, 3))
    grid = build_grid(points, 128.0)
    assert np.prod(grid.shape) <= 4 * len(points) + 1024
    assert_same(points, np.zeros((0, 3)), 256.0)


def test_the_budget_stops_the_search_at_the_first_pair_over_it(monkeypatch):
    """A crowd is refused in a time bounded by the budget: the search returns ``limit + 1``
    (not the crowd's count) and lists nothing; a negative limit counts every pair."""
    rng = np.random.default_rng(3)
    players = rng.uniform(0, 300, (200, 3))
    entities = rng.uniform(0, 300, (5, 3))
    points = np.vstack([players, entities])
    exact = tree_lists(players, entities, 256.0)[2]
    assert neighbour_rows(points, 200, 128.0, -1)[2] == exact
    indptr, indices, pairs = neighbour_rows(points, 200, 128.0, exact - 10)
    assert (pairs, len(indptr), len(indices)) == (exact - 9, 0, 0)
    monkeypatch.setattr(proximity, "MAX_PAIRS", exact - 10)
    with pytest.raises(InputError, match=rf"stand in more than {exact - 10:,} pairs"):
        neighbour_lists(players, entities, 256.0)


def brute_rows(points: np.ndarray, rows: int, radius: float):
    """The lists by brute force: every pair's Chebyshev test, O(P^2)."""
    near = (np.abs(points[:, None, :] - points[None, :, :]) <= radius).all(axis=2)
    np.fill_diagonal(near, False)
    pairs = int(np.triu(near).sum())
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(near[:rows].sum(axis=1), out=indptr[1:])
    return indptr, np.nonzero(near[:rows])[1].astype(np.int32), pairs


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 250),
    entities=st.integers(0, 30),
    spread=st.tuples(st.floats(0.5, 6000.0), st.floats(0.5, 6000.0), st.floats(0.0, 2000.0)),
    radius=st.floats(0.25, 600.0),
    stacked=st.integers(0, 60),
    grid=st.booleans(),
    limit=st.integers(-1, 3000),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_search_equals_brute_force_and_refuses_over_the_limit(
    n, entities, spread, radius, stacked, grid, limit, seed
):
    """Every path of the search against brute force: flat and tall point sets (one run of
    cells per column, or nine), players and map entities (rows for the first ``rows`` points
    only), stacked points (a row buffer grown during the scan), coordinates on multiples of the
    radius (pairs exactly at it, points on cell borders); over ``limit`` pairs the lists are
    refused with ``limit + 1``, a negative limit counts them and lists nothing."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(0.0, 1.0, (n + entities, 3)) * np.array(spread)
    if grid:
        points = np.round(points / radius) * radius
    points[: min(stacked, len(points))] = points[0] if len(points) else points[:0]
    indptr, indices, pairs = brute_rows(points, n, radius)
    got = neighbour_rows(points, n, radius, limit)
    if limit < 0:
        assert (len(got[0]), len(got[1]), got[2]) == (0, 0, pairs)
    elif pairs > limit:
        assert (len(got[0]), len(got[1]), got[2]) == (0, 0, limit + 1)
    else:
        assert got[0].dtype == np.int64 and got[1].dtype == np.int32 and got[2] == pairs
        np.testing.assert_array_equal(got[0], indptr)
        np.testing.assert_array_equal(got[1], indices)
    assert count_pairs(points, radius) == pairs


def test_a_dense_crowd_is_refused_by_the_bound_with_the_same_answer():
    rng = np.random.default_rng(4)
    points = rng.uniform(0, 500, (3000, 3))
    exact = count_pairs(points, 128.0)
    for limit in (exact // 10, exact - 1):
        assert neighbour_rows(points, 3000, 128.0, limit)[2] == limit + 1
    assert neighbour_rows(points, 3000, 128.0, exact)[2] == exact


@pytest.mark.parametrize("height", [0.0, 5000.0])  # one cell along z (3 runs), or many (9)
def test_a_row_buffer_grown_in_the_middle_of_a_cell_resumes_there(height, monkeypatch):
    """Crowds whose rows outgrow the buffer a search starts with (4 entries per point, for at
    least 4,096 points): the scan stops in the middle of a cell, the buffer doubles, the scan
    resumes at the point it stopped at, and the longer buffer is kept for the next search."""
    monkeypatch.setattr(cell_list, "_KEPT", threading.local())  # a new thread's arrays
    rng = np.random.default_rng(7)
    points = rng.uniform(0, 5000, (400, 3)) * np.array([1.0, 1.0, height / 5000])
    points[100:250] = points[100] + rng.uniform(-40, 40, (150, 3))  # 150 in one cell
    points[300:360] = points[300]
    indptr, indices, pairs = brute_rows(points, 380, 128.0)
    for _ in range(2):  # grown, then kept
        got = neighbour_rows(points, 380, 128.0, pairs)
        assert got[2] == pairs and 2 * pairs > 4 * 4096 + 64
        np.testing.assert_array_equal(got[0], indptr)
        np.testing.assert_array_equal(got[1], indices)
        assert len(cell_list._KEPT.work.written) > 4 * 4096 + 64


def test_the_working_arrays_kept_between_searches_leave_nothing_behind():
    """Searches of other sizes in between (the arrays kept, or replaced when too small or
    too large) give the same lists as brute force."""
    rng = np.random.default_rng(11)
    sets = [rng.uniform(0, size, (count, 3)) for size, count in ((3000, 900), (800, 120))]
    sets.append(rng.uniform(0, 40_000, (9000, 3)) * np.array([1.0, 1.0, 0.0]))
    for points in sets + sets[::-1] + sets:
        rows = len(points) - 5
        indptr, indices, pairs = brute_rows(points, rows, 128.0)
        got = neighbour_rows(points, rows, 128.0, 2**25)
        assert got[2] == pairs
        np.testing.assert_array_equal(got[0], indptr)
        np.testing.assert_array_equal(got[1], indices)
