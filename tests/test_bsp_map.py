"""The ``bsp`` map kind on the small map the tests build (``tests/bsp_builder.py``): spawn
points, items, teleporters, collision, ground, PVS visibility, a whole run, the map picture."""

from __future__ import annotations

import numpy as np
import pytest

from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_map, build_world
from simsrv.world.visibility import visibility
from tests import bsp_builder as box


@pytest.fixture(scope="module")
def box_file(tmp_path_factory):
    return box.write_bsp(tmp_path_factory.mktemp("maps") / "box.bsp.gz")


def box_scenario(box_file, *overrides: str):
    return load_scenario(
        None,
        [
            "map.kind=bsp",
            f'map.file="{box_file}"',
            "players.count=12",
            "run.duration_s=1.0",
            "run.warmup_s=0.2",
            *overrides,
        ],
    )


@pytest.fixture(scope="module")
def box_map(box_file):
    scenario = box_scenario(box_file)
    return build_map(scenario, spawn_streams(1))


def test_extent_spawns_and_entities(box_map):
    np.testing.assert_array_equal(box_map.extent_min, box.WORLD_MINS)
    np.testing.assert_array_equal(box_map.extent_max, box.WORLD_MAXS)
    np.testing.assert_array_equal(box_map.spawn_points, box.DEATHMATCH_SPAWNS)
    # rocket launcher, health, the teleport trigger and the door (brush centres); no lights
    assert len(box_map.entities) == 4
    lo, hi = box.MODEL_BRUSHES[1].mins, box.MODEL_BRUSHES[1].maxs
    assert any(np.allclose(e, np.add(lo, hi) / 2, atol=1.0) for e in box_map.entities)


def test_items_become_weighted_attractors(box_map):
    areas = box_map.attractors
    assert len(areas) == 2
    by_x = dict(zip(areas.centres[:, 0].round(), areas.weight, strict=True))
    assert by_x == {box.ROCKET_LAUNCHER[0]: 3.0, box.HEALTH[0]: 1.0}
    # items sit on the floor (z 0): a standing origin is 24 units up
    np.testing.assert_allclose(areas.centres[:, 2], 24.0, atol=0.25)


def test_teleport_moves_a_player_to_the_destination(box_map):
    brush = box.MODEL_BRUSHES[1]
    inside = np.array(
        [[(brush.mins[0] + brush.maxs[0]) / 2, (brush.mins[1] + brush.maxs[1]) / 2, 24.0]]
    )
    elsewhere = np.array([[64.0, 64.0, 24.0]])
    positions = np.vstack([elsewhere, inside])
    moved = box_map.teleport(positions)
    assert moved.tolist() == [1]
    np.testing.assert_array_equal(positions[1], np.add(box.TELEPORT_DESTINATION, (0, 0, 27)))
    np.testing.assert_array_equal(positions[0], elsewhere[0])


def test_collision_uses_hull_1(box_map):
    # hull 1 is solid within 16 units of a wall, 24 of the floor, 32 of the ceiling (room A)
    points = np.array(
        [
            [128.0, 128.0, 60.0],  # free
            [8.0, 128.0, 60.0],  # within 16 of the west wall
            [128.0, 128.0, 110.0],  # within 32 of the ceiling
            [384.0, 128.0, 60.0],  # between the rooms
        ]
    )
    assert box_map.in_solid(points).tolist() == [False, True, True, True]


def test_ground_is_the_floor_plus_24(box_map):
    origins = np.array([[64.0, 128.0, 90.0], [200.0, 200.0, 24.2], [600.0, 100.0, 40.0]])
    np.testing.assert_allclose(box_map.ground_z(origins), 24.0, atol=0.25)


def test_a_step_onto_the_floor_is_climbed_not_blocked(box_map):
    below_floor = np.array([[128.0, 128.0, 12.0]])  # inside hull 1's floor, 12 units deep
    assert box_map.in_solid(below_floor)[0] and not box_map.blocked(below_floor)[0]
    assert box_map.ground_z(below_floor)[0] == pytest.approx(24.0, abs=0.25)


def test_visibility_follows_the_one_way_pvs(box_map):
    players = np.array([[64.0, 128.0, 24.0], [192.0, 128.0, 24.0]])  # leaves 1 and 2
    assert box_map.room_of(players).tolist() == [1, 2]
    seen = visibility(box_map, players)
    entity_leaves = box_map.room_of(box_map.entities)
    in_a = int(np.isin(entity_leaves, [1, 2]).sum())
    in_2 = int((entity_leaves == 2).sum())
    # leaf 1 sees leaves 1 and 2 (the other player and room A's entities), leaf 2 only itself
    assert seen.entities.tolist() == [1 + in_a, in_2]
    assert seen.rooms.tolist() == [2, 1]


def test_a_run_on_the_box_map_keeps_every_player_out_of_solid(box_file):
    scenario = box_scenario(box_file, "players.behaviour.attraction=0.5")
    world = build_world(scenario, spawn_streams(3))
    for _ in range(300):
        state = world.advance(1 / 31.25)
        assert not world.map.in_solid(state.positions).any()
    result = run(box_scenario(box_file, "server.strategy=bsp-group"))
    assert result.summary["frames_per_s"] > 0
    assert result.summary["groups"]["mean_count"] > 0


def test_missing_file_is_a_one_line_input_error(tmp_path):
    scenario = load_scenario(None, ["map.kind=bsp", f'map.file="{tmp_path / "nope.bsp"}"'])
    with pytest.raises(InputError, match="map.file: no such BSP file"):
        build_map(scenario, spawn_streams(1))


def test_map_file_is_required():
    with pytest.raises(InputError, match="map.file"):
        load_scenario(None, ["map.kind=bsp"])


def test_simsrv_map_draws_a_bsp_map(box_file, tmp_path, capsys):
    out = tmp_path / "box.png"
    args = ["map", "--set", "map.kind=bsp", "--set", f'map.file="{box_file}"', "--out", str(out)]
    assert main([*args, "--set", "players.count=8", "--time", "1"]) == 0
    assert out.stat().st_size > 10_000


def test_a_corrupt_map_file_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.bsp"
    bad.write_bytes(box.wrong_version_bsp(30))
    args = ["run", "--set", "map.kind=bsp", "--set", f'map.file="{bad}"']
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "BSP version 30" in err


def test_a_bsp_map_is_not_exported_as_a_box_map(box_file, tmp_path, capsys):
    args = ["map", "--set", "map.kind=bsp", "--set", f'map.file="{box_file}"']
    assert main([*args, "--export", str(tmp_path / "x.toml")]) == 2
    assert "--export: a bsp map is its BSP file" in capsys.readouterr().err
