"""id's GPL deathmatch maps (``../shared/maps/quake-gpl/``, never committed here).

The reference values in ``tests/data/quake_gpl_maps.toml`` were read with an independent
method: ``tests/data/read_quake_gpl_reference.py`` uses only the standard library
(``struct.unpack_from`` at the documented offsets for model 0's box and the lump sizes, a
regular expression over the raw entity text for the spawn points), not simsrv's numpy reader.
Without the folder (a user's clone) every test here skips, naming it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_map, build_world
from simsrv.world.bsp.reader import read_bsp

ROOT = Path(__file__).resolve().parents[1]
MAPS_DIR = ROOT.parent / "shared" / "maps" / "quake-gpl"
REFERENCE = tomllib.loads((ROOT / "tests" / "data" / "quake_gpl_maps.toml").read_text())

pytestmark = pytest.mark.skipif(
    not MAPS_DIR.is_dir(), reason=f"the GPL Quake maps are not in {MAPS_DIR}"
)


def map_file(name: str) -> Path:
    return MAPS_DIR / REFERENCE[name]["file"]


def scenario(name: str, *overrides: str):
    return load_scenario(
        ROOT / "scenarios" / "bsp" / "dm4-160.toml",
        [f'map.file="{map_file(name)}"', *overrides],
    )


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_box_spawns_and_leaves_match_the_independent_reading(name):
    bsp = read_bsp(map_file(name))
    ref = REFERENCE[name]
    np.testing.assert_array_equal(bsp.world_mins, np.float32(ref["world_mins"]))
    np.testing.assert_array_equal(bsp.world_maxs, np.float32(ref["world_maxs"]))
    assert len(bsp.entities_of("info_player_deathmatch")) == ref["info_player_deathmatch"]
    assert len(bsp.entities_of("trigger_teleport")) == ref["trigger_teleport"]
    assert len(bsp.entities) == ref["entities"]
    assert len(bsp.leaves) == ref["leaves"]
    assert int(bsp.models[0]["visleafs"]) == ref["visleafs"]


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_the_map_kind_spawns_at_the_deathmatch_points(name):
    game_map = build_map(scenario(name), spawn_streams(1))
    assert len(game_map.spawn_points) == REFERENCE[name]["info_player_deathmatch"]
    np.testing.assert_array_equal(game_map.extent_min, np.float32(REFERENCE[name]["world_mins"]))
    assert not game_map.in_solid(game_map.spawn_points).any()
    assert len(game_map.attractors) > 0 and len(game_map.nav_points) > 100


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_no_player_is_ever_in_solid(name):
    """160 bots, 5 simulated seconds of client ticks (jumps, stairs, ledges, teleporters)."""
    world = build_world(scenario(name), spawn_streams(2))
    assert not world.map.in_solid(world.mobility.positions).any()
    for _ in range(160):
        state = world.advance(1 / 31.25)
        assert not world.map.in_solid(state.positions).any()
        assert (state.positions[:, 2] >= world.map.extent_min[2]).all()


def test_a_crowded_deathmatch_map_makes_giant_groups_the_cube_does_not():
    """The thesis' finding [T §4.3.2]: concentration areas decide the groups.  160 bots on
    dm4 (BSP-group, final version): the largest group holds a large share of the players and
    of the frame's grouped entities, so two CPUs cannot be balanced; on the cube it does not."""
    dm4 = run(scenario("dm4", "run.duration_s=3", "run.warmup_s=1")).summary["groups"]
    cube = run(
        load_scenario(
            ROOT / "scenarios" / "bsp" / "dm4-160.toml",
            ["run.duration_s=3", "run.warmup_s=1", 'map={kind = "cube"}'],
        )
    ).summary["groups"]
    assert dm4["max_size"] >= 40 and cube["max_size"] <= 25
    assert dm4["mean_size"] > 2 * cube["mean_size"]
    assert dm4["largest_share"] > cube["largest_share"] + 0.05
