"""Map kinds and mobility models: walls hold, doors connect, weights pull, visibility is mutual."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from simsrv.core.errors import InputError
from simsrv.core.strict_model import validate
from simsrv.world.maps import MAP_KINDS
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.grid import grid_layout
from simsrv.world.mobility import MOBILITY_MODELS
from simsrv.world.spawn import floor_positions, free_floor_positions


def build(kind: str, rng_seed: int = 1, **params):
    k = MAP_KINDS.get(kind, "map.kind")
    return k.build(validate(k.params, params, "map"), np.random.default_rng(rng_seed))


def walkers(model: str, game_map, count: int, seed: int, **params):
    m = MOBILITY_MODELS.get(model, "players.mobility")
    return m.create(
        validate(m.params, params, "behaviour"), game_map, count, 320.0, np.random.default_rng(seed)
    )


MAPS = {
    "cube": {},
    "rooms": {"rows": 2, "cols": 3, "room_size": 384.0},
    "rooms-corridors": {"rows": 2, "cols": 2, "room_size": 384.0, "corridor_length": 160.0},
    "two-floor": {"size": 1024.0},
    "hotspots": {"base": "rooms", "base_params": {"rows": 2, "cols": 2}, "layout": "4worst"},
}


@settings(max_examples=12, deadline=None)
@given(
    map_name=st.sampled_from(sorted(MAPS)),
    model=st.sampled_from(["quake-bot", "random-waypoint", "hotspot", "cluster", "team"]),
    seed=st.integers(0, 10_000),
)
def test_no_player_is_ever_inside_a_wall(map_name, model, seed):
    kind = "rooms" if map_name.startswith("rooms") else map_name
    game_map = build(kind, seed, **MAPS[map_name])
    extra = {} if model == "quake-bot" else {"settle_s": 0.0}
    w = walkers(model, game_map, 60, seed, **extra)
    for _ in range(150):
        w.step(1 / 31.25)
        assert not game_map.blocked(w.positions).any()


def test_a_random_walker_reaches_every_room_through_the_doors():
    game_map = build("rooms", rows=3, cols=3, room_size=320.0, corridor_length=128.0)
    real_rooms = 9  # the other rooms are the corridors
    w = walkers("random-waypoint", game_map, 20, seed=3, settle_s=0.0, max_pause_s=0.0)
    visited = set()
    for _ in range(6000):
        w.step(0.1)
        visited.update(game_map.room_of(w.positions).tolist())
        if set(range(real_rooms)) <= visited:
            break
    assert set(range(real_rooms)) <= visited


def test_doorway_routes_join_every_pair_of_rooms():
    game_map = build("rooms", rows=3, cols=4)
    nxt = game_map.room_next_door
    off_diagonal = ~np.eye(len(nxt), dtype=bool)
    assert (nxt[off_diagonal] >= 0).all()
    # the first doorway from room i towards j touches room i
    for i, j in [(0, 11), (5, 0), (11, 3)]:
        assert i in game_map.door_rooms[nxt[i, j]]


def test_attractor_weights_shift_occupancy_as_specified():
    weights = [1.0, 2.0, 3.0, 4.0]
    game_map = build("hotspots", layout="4quadrants", radius=200.0, weights=weights)
    w = walkers(
        "hotspot", game_map, 3000, seed=5, hotspot_share=1.0, min_dwell_s=30.0, max_dwell_s=30.0
    )
    areas = game_map.attractors
    near = areas.nearest(w.positions)
    inside = np.hypot(*(w.positions[:, :2] - areas.centres[near, :2]).T) <= areas.radius[near]
    counts = np.bincount(near[inside], minlength=4)
    expected = counts.sum() * np.array(weights) / sum(weights)
    assert chisquare(counts, expected).pvalue > 1e-3
    assert counts[3] > 3 * counts[0]


@settings(max_examples=20, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 5),
    corridors=st.booleans(),
    hops=st.integers(0, 3),
)
def test_room_visibility_is_symmetric_and_includes_the_room_itself(rows, cols, corridors, hops):
    layout = grid_layout(rows, cols, 256.0, 128.0, 64.0, 96.0, corridors, hops)
    v = layout.room_visible
    assert (v == v.T).all()
    assert v.diagonal().all()


def test_moving_attractors_bounce_inside_the_map():
    areas = Attractors(
        centres=np.array([[100.0, 500.0, 24.0]]),
        radius=np.array([50.0]),
        weight=np.ones(1),
        velocity=np.array([[300.0, 0.0]]),
    )
    lo, hi = np.zeros(3), np.array([1000.0, 1000.0, 256.0])
    xs = [areas.at(t, lo, hi)[0, 0] for t in np.linspace(0, 20, 401)]
    assert min(xs) >= 50.0 - 1e-9 and max(xs) <= 950.0 + 1e-9
    # 100 + 300 x 3 = 1000 unbounded: 50 past the turning point at 950, so back at 900
    assert areas.at(3.0, lo, hi)[0, 0] == pytest.approx(900.0)


def test_players_fall_into_the_pit_and_never_climb_back():
    game_map = build("two-floor", size=1024.0, upper_fraction=0.5)
    w = walkers("random-waypoint", game_map, 200, seed=2, settle_s=0.0)
    drop = 128.0  # the upper floor's height: a player whose origin is below it is in the pit
    pit = w.positions[:, 2] < drop
    for _ in range(600):
        w.step(0.1)
        now_pit = w.positions[:, 2] < drop
        assert not (pit & ~now_pit).any()  # nobody leaves the pit
        pit = now_pit
    assert pit.mean() > 0.9


def test_bad_hotspot_parameters_name_the_field():
    from simsrv.core.errors import InputError

    with pytest.raises(InputError, match="weights: one per area"):
        build("hotspots", layout="4quadrants", weights=[1.0, 2.0])
    with pytest.raises(InputError, match="map.base"):
        build("hotspots", base="moon")


@pytest.mark.parametrize("map_name", sorted(MAPS) + ["death32c-like", "arena"])
def test_map_files_round_trip(tmp_path, map_name):
    from simsrv.world.maps.file import load_map, map_to_toml

    kind = "rooms" if map_name.startswith("rooms") else map_name
    original = build(kind, 7, **MAPS.get(map_name, {}))
    path = tmp_path / "map.toml"
    path.write_text(map_to_toml(original))
    loaded = load_map(path)
    for name in (
        "extent_min",
        "extent_max",
        "solid_min",
        "solid_max",
        "room_min",
        "room_max",
        "room_visible",
        "spawn_points",
        "entities",
        "doors",
        "door_rooms",
    ):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(original, name), err_msg=name)
    for name in ("centres", "radius", "weight", "velocity"):
        np.testing.assert_array_equal(
            getattr(loaded.attractors, name), getattr(original.attractors, name), err_msg=name
        )


def test_an_exported_map_runs_exactly_like_its_kind(tmp_path):
    from simsrv.cli.main import main
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.result import run

    path = tmp_path / "cube.toml"
    assert main(["map", "--export", str(path)]) == 0
    base = ["run.duration_s=2"]
    direct = run(load_scenario(None, base)).summary
    loaded = run(load_scenario(None, [*base, "map.kind=file", f"map.path={path}"])).summary
    assert loaded["frames"] == direct["frames"]
    assert loaded["messages_per_s"] == direct["messages_per_s"]


def test_a_broken_map_file_is_a_one_line_error(tmp_path, capsys):
    from simsrv.cli.main import main

    bad = tmp_path / "bad.toml"
    bad.write_text('source_kind = "x"\nextent_min = [0, 0, 0]\n')
    code = main(["run", "--set", "map.kind=file", "--set", f"map.path={bad}"])
    assert code == 2
    assert "map file: missing array 'extent_max'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"radius": 100000.0}, "map.radius: area 0's radius must be at most the map's longer side"),
        ({"layout": "random", "radius": 1500.0}, "map.radius: the random layout needs 2 x radius"),
        (
            {"layout": "explicit", "areas": [[1e9, 1e9, 10.0, 1.0]]},
            "map.areas: area 0's centre (1e+09, 1e+09) is outside the map",
        ),
    ],
)
def test_concentration_areas_must_lie_on_the_map(params, message):
    kind = MAP_KINDS.get("hotspots", "map.kind")
    with pytest.raises(InputError) as error:
        kind.build(validate(kind.params, params, "map"), np.random.default_rng(1))
    assert message in str(error.value)


def test_a_map_too_small_for_its_players_is_an_input_error():
    kind = MAP_KINDS.get("two-floor", "map.kind")
    game_map = kind.build(validate(kind.params, {}, "map"), np.random.default_rng(1))
    off_map = (game_map.extent_max + 1e6)[:2]  # every candidate stands outside the map

    with pytest.raises(
        InputError, match=r"^players.count: could not find 3 spots \(the map's free floor"
    ):
        free_floor_positions(game_map, 3, lambda n: np.tile(off_map, (n, 1)), "spots")
    assert floor_positions(game_map, 3, np.random.default_rng(1)).shape == (3, 3)


@pytest.mark.parametrize(
    ("pattern", "replacement", "message"),
    [
        (r"extent_max = \[[^\]]*\]", "extent_max = [0.0, 0.0, 0.0]", "extent_max [0.0, 0.0, 0.0]"),
        (r"extent_min = \[[^\]]*\]", "extent_min = [nan, 0.0, 0.0]", "'extent_min' holds NaN"),
        (r"extent_min = \[[^\]]*\]", "extent_min = [0.0, 0.0]", "must be [x, y, z] each"),
        (r"room_visible = .*", "room_visible = [[true]]", "room_visible must be 4 x 4"),
        (
            r"^doors = .*\ndoor_rooms = .*",
            "doors = [[1.0, 1.0, 1.0]]\ndoor_rooms = [[0, 9]]",
            "room 9",
        ),
        (r"^door_rooms = .*", "door_rooms = [[0, 1]]", "one [room, room] pair per door"),
        (r"^radius = .*", "radius = [0.0, 1.0, 1.0, 1.0]", "radius > 0 and a weight > 0"),
    ],
)
def test_an_inconsistent_map_file_is_a_one_line_error(tmp_path, pattern, replacement, message):
    import re

    from simsrv.world.maps.file import load_map, map_to_toml

    text = map_to_toml(build("hotspots", 7, base="cube"))
    path = tmp_path / "map.toml"
    path.write_text(re.sub(pattern, replacement, text, count=1, flags=re.M))
    with pytest.raises(InputError) as error:
        load_map(path)
    assert str(error.value).startswith("map file: ") and message in str(error.value)


def test_the_map_picture_names_its_concentration_areas_in_the_legend():
    import matplotlib

    matplotlib.use("Agg")
    from simsrv.figures.map_view import map_figure
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.snapshot import snapshots

    scenario = load_scenario("scenarios/cordeiro2007/fork-wait.toml", ["players.count=24"])
    game_map, snaps = snapshots(scenario, [0.5], 0.05)
    assert len(game_map.attractors.radius) > 0
    legend = map_figure(game_map, snaps[0]).axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels.count("concentration area") == 1


def test_map_graph_writes_the_frames_interaction_graph_as_graphml(tmp_path, capsys):
    import networkx as nx

    from simsrv.cli.main import main

    path = tmp_path / "frame.graphml"
    argv = ["map", "scenarios/cordeiro2007/fork-wait.toml", "--graph", str(path)]
    assert main([*argv, "--set", "players.count=40", "--active", "0.5"]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    graph = nx.read_graphml(path)
    assert graph.number_of_nodes() > 0
    senders = [v for v, d in graph.nodes(data=True) if d["sent"]]
    assert senders and all(graph.nodes[v]["kind"] == "player" for v in senders)
    # the groups are the graph's connected components, and players lie on the map
    by_group: dict[int, set] = {}
    for v, d in graph.nodes(data=True):
        by_group.setdefault(d["group"], set()).add(v)
        assert 0 <= d["x"] <= 2048 and 0 <= d["y"] <= 2048
    assert {frozenset(c) for c in nx.connected_components(graph)} == {
        frozenset(v) for v in by_group.values()
    }
    assert main(["map", "--graph", str(tmp_path / "frame.gml")]) == 2
    assert "--graph: unsupported file type '.gml'; allowed: .graphml" in capsys.readouterr().err
