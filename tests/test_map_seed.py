"""``run.map_seed``: the map of another seed, the rest of this seed's draws."""

from __future__ import annotations

import numpy as np

from simsrv import load_scenario
from simsrv.pipeline.seeding import run_streams, spawn_streams
from simsrv.pipeline.simulation import build_map
from simsrv.sweep.records import scenario_hash

DEATH32C = ['map.kind="death32c-like"']


def _map(overrides):
    scenario = load_scenario(None, DEATH32C + overrides)
    return build_map(scenario, run_streams(scenario.run))


def test_map_seed_gives_the_map_of_that_seed_and_keeps_the_other_streams():
    fixed = _map(["run.seed=2", "run.map_seed=7"])
    own = _map(["run.seed=7"])
    other = _map(["run.seed=2"])
    np.testing.assert_array_equal(fixed.attractors.centres, own.attractors.centres)
    assert not np.array_equal(fixed.attractors.centres, other.attractors.centres)
    mixed, plain = spawn_streams(2, map_seed=7), spawn_streams(2)
    for name in ("players", "clients", "strategy", "machine", "combat"):
        assert mixed[name].random() == plain[name].random()


def test_unset_map_seed_leaves_the_scenario_hash_and_layout_unchanged():
    plain = load_scenario(None, DEATH32C)
    same = load_scenario(None, [*DEATH32C, "run.map_seed=1"])  # the run's own seed: same map
    assert "map_seed" not in plain.to_dict()["run"]
    assert scenario_hash(plain) != scenario_hash(same)  # set explicitly: another scenario
    np.testing.assert_array_equal(
        build_map(plain, run_streams(plain.run)).attractors.centres,
        build_map(same, run_streams(same.run)).attractors.centres,
    )
