"""The PVS proxy: room visibility, the distance cutoff and what it costs per reply."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_map
from simsrv.world.spawn import spawn_positions
from simsrv.world.visibility import visibility


def _rooms_map(rows: int, hops: int, seed: int):
    scenario = load_scenario(
        None,
        ["map.kind=rooms", f"map.rows={rows}", f"map.cols={rows}", f"map.visibility_hops={hops}"],
    )
    return build_map(scenario, spawn_streams(seed))


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 4),
    hops=st.integers(0, 2),
    distance=st.floats(50.0, 3000.0),
    seed=st.integers(0, 2**31),
)
def test_distance_cutoff_counts_visible_rooms_within_the_distance(rows, hops, distance, seed):
    game_map = _rooms_map(rows, hops, seed)
    players = spawn_positions(game_map, 60, np.random.default_rng(seed))
    room = game_map.room_of(players)
    far = np.linalg.norm(players[:, None] - players[None], axis=2) > distance
    inside = room >= 0
    sees = game_map.room_visible[room[:, None], room[None]] & ~far & inside[:, None] & inside[None]
    np.fill_diagonal(sees, False)
    got = visibility(game_map, players, distance)
    np.testing.assert_array_equal(got.entities, sees.sum(axis=1))
    unlimited = visibility(game_map, players)
    np.testing.assert_array_equal(visibility(game_map, players, 1e6).entities, unlimited.entities)
    assert np.all(got.entities <= unlimited.entities)
    row = np.where(room >= 0, game_map.room_visible.sum(axis=1)[room], 0)  # doorway: no room
    np.testing.assert_array_equal(got.rooms, row)


def test_small_rooms_cost_more_pvs_work_but_give_smaller_replies():
    small = _rooms_map(6, 1, 1)  # 36 rooms, each seeing its neighbours through doorways
    scenario = load_scenario(None, ["map.kind=arena"])
    arena = build_map(scenario, spawn_streams(1))
    rng = np.random.default_rng(3)
    in_rooms = visibility(small, spawn_positions(small, 160, rng))
    in_arena = visibility(arena, spawn_positions(arena, 160, rng))
    assert in_rooms.rooms.mean() > 3 * in_arena.rooms.mean()
    assert in_rooms.entities.mean() < 0.5 * in_arena.entities.mean()
