"""``replay`` mobility: players replaying a few recorded routes with time offsets [R §4.2]."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.world.maps.cube import CubeParams, build_cube
from simsrv.world.mobility.replay import Replay, ReplayParams

CUBE = build_cube(CubeParams(), np.random.default_rng(0))
DT = 1 / 31.25


def _replay(count, seed=1, **params):
    return Replay(ReplayParams(**params), CUBE, count, 320.0, np.random.default_rng(seed))


@settings(max_examples=15, deadline=None)
@given(routes=st.integers(1, 5), count=st.integers(2, 30), seed=st.integers(0, 2**31))
def test_players_of_one_route_with_offset_zero_are_always_at_the_same_place(routes, count, seed):
    players = _replay(count, seed, routes=routes, route_s=4.0, max_offset_s=0.0)
    route = np.arange(count) % routes
    for _ in range(40):
        for r in range(min(routes, count)):
            same = players.positions[route == r]
            assert np.array_equal(same, np.broadcast_to(same[0], same.shape))
        actions = players.step(DT)
        for r in range(min(routes, count)):
            assert len(set(actions.shot[route == r].tolist())) == 1
    if routes > 1 and count >= routes:
        # different recordings are different paths
        assert not np.array_equal(players.positions[0], players.positions[1])


def test_offsets_put_players_of_one_route_elsewhere_on_it_and_they_loop():
    players = _replay(10, routes=1, route_s=2.0, max_offset_s=2.0)
    recording = players.route_positions[0]
    start = players.positions.copy()
    # every player stands on a recorded point of the single route, not all on the same one
    on_route = (start[:, None, :] == recording[None]).all(axis=2).any(axis=1)
    assert on_route.all()
    assert len({tuple(p) for p in start}) > 1
    for _ in range(round(2.0 / DT)):  # one whole recording later: back where they started
        players.step(DT)
    np.testing.assert_array_equal(players.positions, start)


def test_the_recording_is_seeded_and_does_not_depend_on_the_player_count():
    a, b = _replay(8, seed=3, routes=4), _replay(40, seed=3, routes=4)
    np.testing.assert_array_equal(a.route_positions, b.route_positions)
    c = _replay(8, seed=4, routes=4)
    assert not np.array_equal(a.route_positions, c.route_positions)
