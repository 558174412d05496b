"""Shots kill the nearest opponent in range; the dead respawn at spawn points (next tick, or
after a button press as QuakeWorld's PlayerDeathThink), at a random or a free point."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_world
from simsrv.world.combat import SPOT_RADIUS, Combat
from simsrv.world.maps.cube import CubeParams, build_cube
from simsrv.world.mobility.registry import TickActions
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


# --- QuakeWorld's SelectSpawnPoint and PlayerDeathThink (players.spawn_select, respawn_wait) ---


def _actions(shot, jumped=None):
    shot = np.asarray(shot, bool)
    jumped = np.zeros_like(shot) if jumped is None else np.asarray(jumped, bool)
    return TickActions(moving=np.zeros_like(shot), shot=shot, jumped=jumped)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), occupied=st.sets(st.integers(0, 3), max_size=4))
def test_quake_selection_picks_a_free_spawn_point_when_there_is_one(seed, occupied):
    points = CUBE.spawn_points
    z = CUBE.floor_z
    # one bystander on each occupied point, the dead player far from every point
    bystanders = [points[i] + [10.0, 0.0, 0.0] for i in sorted(occupied)]
    positions = np.array([[1.0e4, 1.0e4, z], *bystanders], float)
    combat = Combat(CUBE, 1.0, np.random.default_rng(seed), select="quake")
    combat.pending = np.array([0])
    combat.respawn(positions)
    spot = int(np.flatnonzero((points == positions[0]).all(axis=1))[0])
    free = [i for i in range(len(points)) if i not in occupied]
    if free:
        assert spot in free
    gap = np.linalg.norm(points[:, None, :2] - positions[None, 1:, :2], axis=2)
    if free:
        assert gap[spot].min(initial=np.inf) > SPOT_RADIUS


def test_quake_selection_spreads_a_wave_of_deaths_over_the_free_points():
    points = CUBE.spawn_points
    n = len(points)
    z = CUBE.floor_z
    positions = np.array([[5000.0 + 100 * i, 5000.0, z] for i in range(n)], float)
    combat = Combat(CUBE, 1.0, np.random.default_rng(2), select="quake")
    combat.pending = np.arange(n)
    combat.respawn(positions)
    # each respawned player occupies its point for the next: n deaths, n different points
    spots = {int(np.flatnonzero((points == p).all(axis=1))[0]) for p in positions}
    assert len(spots) == n
    # the uniform draw stacks some of them (with 4+ points, 4 draws collide for most seeds)
    stacked = 0
    for seed in range(20):
        rand = Combat(CUBE, 1.0, np.random.default_rng(seed))
        rand.pending = np.arange(n)
        moved = positions.copy()
        rand.respawn(moved)
        stacked += len(np.unique(moved, axis=0)) < n
    assert stacked > 0


def test_button_wait_keeps_the_body_until_a_release_then_a_press():
    z = CUBE.floor_z
    players = np.array([[100, 100, z], [150, 100, z]], float)
    neighbours = neighbour_lists(players, np.zeros((0, 3)), 256.0)
    combat = Combat(CUBE, 1.0, np.random.default_rng(1), wait="button")
    assert combat.shoot(players, np.array([True, False]), neighbours).tolist() == [False, True]
    assert len(combat.respawn(players.copy())) == 0  # not next tick
    walked = players + [30.0, 0.0, 0.0]
    combat.hold(walked, _actions([False, True]))  # still holding fire: no release yet
    np.testing.assert_array_equal(walked[1], players[1])  # the body does not move
    assert walked[0, 0] == players[0, 0] + 30.0  # the living do
    assert len(combat.respawn(walked)) == 0
    # the dead cannot shoot nor be shot
    assert not combat.shoot(walked, np.array([True, True]), neighbours).any()
    combat.hold(walked, _actions([False, False]))  # released
    assert len(combat.respawn(walked)) == 0
    combat.hold(walked, _actions([False, False], jumped=[False, True]))  # pressed jump
    moved = walked.copy()
    assert combat.respawn(moved).tolist() == [1]
    assert any(np.array_equal(moved[1], p) for p in CUBE.spawn_points)
    assert not combat.dead.any()


def _run(sets, ticks=300, seed=3):
    scenario = load_scenario(None, ["players.respawn=true", *sets])
    world = build_world(scenario, spawn_streams(seed))
    states = [world.advance(0.032) for _ in range(ticks)]
    return world, states


def test_button_wait_runs_respawn_everyone_at_spawn_points_and_are_seeded(monkeypatch):
    placed = []
    respawn = Combat.respawn

    def spy(self, positions):  # every respawned player stands on a spawn point
        moved = respawn(self, positions)
        for p in moved:
            placed.append(bool((self.map.spawn_points == positions[p]).all(axis=1).any()))
        return moved

    monkeypatch.setattr(Combat, "respawn", spy)
    sets = ["players.hit_chance=1.0", "players.respawn_wait=button", "players.spawn_select=quake"]
    world, states = _run(sets)
    deaths = sum(int(s.killed.sum()) for s in states)
    assert deaths > 20
    assert len(placed) > 10 and all(placed)
    assert len(placed) <= deaths  # one respawn per death at most
    _, again = _run(sets)
    for a, b in zip(states, again, strict=True):
        np.testing.assert_array_equal(a.positions, b.positions)
    assert world.combat.dead.sum() < world.players  # not everyone lies dead


def test_respawn_choices_keep_the_default_run_unchanged():
    _, default = _run(["players.hit_chance=0.5"], ticks=120)
    _, explicit = _run(
        ["players.hit_chance=0.5", "players.spawn_select=random", "players.respawn_wait=next-tick"],
        ticks=120,
    )
    for a, b in zip(default, explicit, strict=True):
        np.testing.assert_array_equal(a.positions, b.positions)
