"""The grid index finds exactly what the brute-force box tests find."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS, STEP_HEIGHT, GameMap


def _random_map(rng: np.random.Generator, boxes: int, side: float) -> GameMap:
    lo = rng.uniform(0, side, (boxes, 3)) * np.array([1, 1, 0.2])
    hi = lo + rng.uniform(1, side / 3, (boxes, 3))
    rooms_lo = rng.uniform(0, side, (boxes, 3)) * np.array([1, 1, 0])
    rooms_hi = rooms_lo + rng.uniform(1, side / 2, (boxes, 3))
    return GameMap(
        kind="test",
        extent_min=np.zeros(3),
        extent_max=np.array([side, side, side]),
        solid_min=lo,
        solid_max=hi,
        room_min=rooms_lo,
        room_max=rooms_hi,
        room_visible=np.eye(boxes, dtype=bool),
        spawn_points=np.zeros((0, 3)),
    )


def _brute_blocked(m: GameMap, o: np.ndarray) -> np.ndarray:
    lo, hi = o + PLAYER_MINS, o + PLAYER_MAXS
    out = np.any(lo < m.extent_min, axis=1) | np.any(hi > m.extent_max, axis=1)
    hit = np.all((lo[:, None] < m.solid_max[None]) & (hi[:, None] > m.solid_min[None]), axis=2)
    return out | hit.any(axis=1)


def _brute_ground(m: GameMap, o: np.ndarray) -> np.ndarray:
    lo, hi = o[:, :2] + PLAYER_MINS[:2], o[:, :2] + PLAYER_MAXS[:2]
    feet = o[:, 2] + PLAYER_MINS[2]
    under = np.all(
        (lo[:, None] < m.solid_max[None, :, :2]) & (hi[:, None] > m.solid_min[None, :, :2]), axis=2
    ) & (m.solid_max[None, :, 2] <= feet[:, None] + STEP_HEIGHT)
    tops = np.where(under, m.solid_max[None, :, 2], -np.inf).max(axis=1)
    return np.maximum(m.floor_z, tops - PLAYER_MINS[2])


def _brute_room(m: GameMap, p: np.ndarray) -> np.ndarray:
    inside = np.all((p[:, None] >= m.room_min[None]) & (p[:, None] <= m.room_max[None]), axis=2)
    return np.where(inside.any(axis=1), inside.argmax(axis=1), -1)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    boxes=st.integers(1, 60),
    side=st.sampled_from([200.0, 2048.0, 40_000.0]),
)
def test_grid_index_matches_brute_force(seed, boxes, side):
    rng = np.random.default_rng(seed)
    m = _random_map(rng, boxes, side)
    points = rng.uniform(-0.1 * side, 1.1 * side, (300, 3))
    points[:100, :2] = m.solid_min[rng.integers(0, boxes, 100), :2]  # on box edges
    points[100:150] = m.room_min[rng.integers(0, boxes, 50)]  # on room corners
    points[150:200] = m.room_max[rng.integers(0, boxes, 50)]
    np.testing.assert_array_equal(m.blocked(points), _brute_blocked(m, points))
    np.testing.assert_array_equal(m.ground_z(points), _brute_ground(m, points))
    np.testing.assert_array_equal(m.room_of(points), _brute_room(m, points))
