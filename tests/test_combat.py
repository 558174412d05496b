"""Shots kill the nearest opponent in range; the dead respawn at spawn points next tick."""

import numpy as np

from simsrv.scenario.load import load_scenario
from simsrv.seeding import spawn_streams
from simsrv.simulation import build_world
from simsrv.world.combat import Combat
from simsrv.world.maps.cube import CubeParams, build_cube
from simsrv.world.proximity import neighbour_lists

CUBE = build_cube(CubeParams(), np.random.default_rng(0))


def test_a_sure_shot_kills_the_nearest_player_in_range_and_only_it():
    z = CUBE.floor_z
    players = np.array([[100, 100, z], [150, 100, z], [200, 100, z], [900, 900, z]], float)
    neighbours = neighbour_lists(players, np.zeros((0, 3)), 256.0)
    combat = Combat(CUBE, hit_chance=1.0, rng=np.random.default_rng(1))
    shot = np.array([False, False, True, True])  # 2 aims at 1 (50 away, not 0); 3 has no one
    assert combat.shoot(players, shot, neighbours).tolist() == [False, True, False, False]
    moved = players.copy()
    assert combat.respawn(moved).tolist() == [1]
    assert any(np.array_equal(moved[1], p) for p in CUBE.spawn_points)
    np.testing.assert_array_equal(np.delete(moved, 1, axis=0), np.delete(players, 1, axis=0))
    assert len(combat.respawn(moved)) == 0  # a death respawns once


def test_missed_shots_kill_no_one():
    z = CUBE.floor_z
    players = np.array([[100, 100, z], [150, 100, z]], float)
    neighbours = neighbour_lists(players, np.zeros((0, 3)), 256.0)
    combat = Combat(CUBE, hit_chance=0.0, rng=np.random.default_rng(1))
    assert not combat.shoot(players, np.array([True, True]), neighbours).any()


def test_respawn_moves_the_killed_to_spawn_points_in_a_run():
    scenario = load_scenario(None, ["players.respawn=true", "players.hit_chance=1.0"])
    world = build_world(scenario, spawn_streams(3))
    deaths = 0
    state = world.advance(0.032)
    for _ in range(200):
        killed = np.flatnonzero(state.killed)
        state = world.advance(0.032)
        deaths += len(killed)
        for p in killed:  # one tick of walking from a spawn point: at most a tick's run away
            gap = np.linalg.norm(world.map.spawn_points[:, :2] - state.positions[p, :2], axis=1)
            assert gap.min() <= scenario.players.speed * 0.032 + 1e-6
    assert deaths > 20


def test_respawn_off_is_the_default_and_kills_no_one():
    world = build_world(load_scenario(None, []), spawn_streams(3))
    assert not any(world.advance(0.032).killed.any() for _ in range(100))
