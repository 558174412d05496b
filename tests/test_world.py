"""The cube map, collisions and the automated player's schedule."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.world.maps.cube import CubeParams, build_cube
from simsrv.world.mobility.quake_bot import QuakeBot, QuakeBotParams
from simsrv.world.proximity import range_counts
from simsrv.world.visibility import visibility

CUBE = build_cube(CubeParams(), np.random.default_rng(0))


def test_cube_has_four_rooms_in_a_ring():
    assert len(CUBE.room_min) == 4
    # each room sees itself and its two neighbours, not the diagonal room
    assert CUBE.room_visible.sum(axis=1).tolist() == [3, 3, 3, 3]
    assert not CUBE.room_visible[0, 2] and not CUBE.room_visible[1, 3]


def test_wall_blocks_and_doorway_lets_through():
    c, z = 1024.0, CUBE.floor_z
    on_wall = np.array([[c, 100.0, z], [c, 512.0, z], [300.0, c, z], [512.0, c, z]])
    # y = 100 is solid wall; y = 512 is the middle of the doorway (centred at size/4)
    assert CUBE.blocked(on_wall).tolist() == [True, False, True, False]


def walker(yaw: float, start: tuple[float, float]) -> QuakeBot:
    params = QuakeBotParams(idle_ticks=0, walk_before_action=1000, walk_after_action=0)
    bot = QuakeBot(params, CUBE, 1, 320.0, np.random.default_rng(1))
    bot.positions[:] = [start[0], start[1], CUBE.floor_z]
    bot.yaw[:] = yaw
    bot.tick[:] = 0
    return bot


def test_walking_into_a_wall_stops_and_turns():
    bot = walker(0.0, (900.0, 100.0))  # heading +x towards the wall x = 1024 at y = 100
    for _ in range(40):
        bot.step(1 / 31.25)
        assert bot.positions[0, 0] + 16 <= 1024 - 16 + 1e-9  # never inside the wall
    assert bot.yaw[0] != 0.0  # it turned


def test_walking_through_a_doorway_changes_room():
    bot = walker(0.0, (900.0, 512.0))  # heading +x through the doorway centred at y = 512
    for _ in range(30):
        bot.step(1 / 31.25)
    assert CUBE.room_of(bot.positions)[0] == 1  # from room 0 (x < 1024) into room 1


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.floats(512.0, 4096.0),
    door=st.floats(48.0, 200.0),
    count=st.integers(1, 200),
)
def test_no_player_ever_inside_a_wall(seed, size, door, count):
    game_map = build_cube(CubeParams(size=size, door_width=door), np.random.default_rng(seed))
    bot = QuakeBot(QuakeBotParams(), game_map, count, 320.0, np.random.default_rng(seed))
    for _ in range(60):
        bot.step(1 / 31.25)
        assert not game_map.blocked(bot.positions).any()


def test_quake_bot_follows_the_papers_schedule():
    """Stand 10 ticks, walk 5, one random action, walk 5 more, stop; repeat [P §5]."""
    bot = QuakeBot(QuakeBotParams(), CUBE, 50, 320.0, np.random.default_rng(7))
    bot.tick[:] = 0
    moving, acted = [], []
    for _ in range(60):
        a = bot.step(1 / 31.25)
        moving.append(a.moving.copy())
        acted.append(a.shot | a.jumped)
    moving = np.array(moving)
    expected = np.array([(t % 20) >= 10 for t in range(60)])
    assert (moving == expected[:, None]).all()
    action_ticks = {t for t in range(60) if np.array(acted)[t].any()}
    assert action_ticks <= {15, 35, 55}  # shots/jumps only at walk tick 5 of each cycle


def test_action_choice_is_uniform_over_three_actions():
    bot = QuakeBot(QuakeBotParams(), CUBE, 3000, 320.0, np.random.default_rng(3))
    bot.tick[:] = 14
    bot.step(1 / 31.25)  # tick 14 -> walking
    yaw_before = bot.yaw.copy()
    a = bot.step(1 / 31.25)  # tick 15: the action
    turned = (bot.yaw != yaw_before) & ~a.shot & ~a.jumped
    shares = np.array([a.jumped.mean(), a.shot.mean(), turned.mean()])
    # blocked moves also turn a player, so "turned" may exceed 1/3 slightly
    assert np.allclose(shares, 1 / 3, atol=0.05)


def test_range_and_visible_counts_on_a_known_layout():
    z = CUBE.floor_z
    players = np.array(
        [
            [100.0, 100.0, z],
            [200.0, 100.0, z],
            [229.0, 100.0, z],
            [1500.0, 100.0, z],
            [1500.0, 1500.0, z],
        ]
    )
    # the cube is 256 wide: |dx| <= 128 in range; 100->229 is 129 apart: out of range
    assert range_counts(players, np.zeros((0, 3)), 256.0).tolist() == [1, 2, 1, 0, 0]
    # rooms: 0, 0, 0, 1, 2 ; room 0 sees rooms 0,1,3 ; room 1 sees 0,1,2 ; room 2 sees 1,2,3
    seen = visibility(CUBE, players)
    assert seen.entities.tolist() == [3, 3, 3, 4, 1]
    assert seen.rooms.tolist() == [3, 3, 3, 3, 3]
    # within 120 units: 100-200 and 200-229 are close enough, 100-229 (129 apart) is not
    assert visibility(CUBE, players, 120.0).entities.tolist() == [1, 2, 1, 0, 0]
