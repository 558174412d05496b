"""Clusters at scale: the capacity search (bisection), capacity sweep files, the client slots of
a cluster node, the 16-node scenario, the cluster figures and the nodes study."""

from __future__ import annotations

import time
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

matplotlib.use("Agg")

from simsrv.cli.main import main  # noqa: E402
from simsrv.figures.cluster_capacity import capacity_figure, capacity_stats  # noqa: E402
from simsrv.figures.cluster_traffic import at_capacity, traffic_figure  # noqa: E402
from simsrv.figures.zone_map import zone_map_figure, zone_map_frame  # noqa: E402
from simsrv.pipeline.cluster.simulation import simulate_cluster  # noqa: E402
from simsrv.pipeline.load import load_scenario  # noqa: E402
from simsrv.pipeline.result import run  # noqa: E402
from simsrv.studies import cluster_capacity  # noqa: E402
from simsrv.sweep import capacity as capacity_module  # noqa: E402
from simsrv.sweep.capacity import search_capacity  # noqa: E402
from simsrv.sweep.spec import load_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOUR = ROOT / "scenarios" / "cluster" / "nodes4-cpus2-640.toml"
SIXTEEN = ROOT / "scenarios" / "cluster" / "nodes16-cpus8-10000.toml"


def fake_measure(threshold: int, tried: list[int]):
    """A ``measure`` whose counts up to ``threshold`` are met (a monotone server)."""

    def measure(scenario, clients, min_reply_ratio, describe=None):
        tried.append(clients)
        return {"clients": clients, "met": clients <= threshold}

    return measure


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(1, 300),
    step=st.integers(1, 40),
    threshold=st.integers(0, 3000),
    max_clients=st.integers(1, 4000),
)
def test_bisection_finds_the_largest_count_met_to_one_step(start, step, threshold, max_clients):
    """On a monotone server the bisection reports a count that met, and the smallest count
    that failed (if it reached one) is at most ``step`` above it; it tries each count once and
    never above ``max_clients``; a number of runs logarithmic in the range."""
    tried: list[int] = []
    start = min(start, max_clients)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(capacity_module, "measure", fake_measure(threshold, tried))
        found = search_capacity(
            lambda c: None, start=start, step=step, max_clients=max_clients, search="bisect"
        )
    met = [c for c in tried if c <= threshold]
    failed = [c for c in tried if c > threshold]
    assert found.complete
    assert found.capacity_clients == (max(met) if met else 0)
    assert len(set(tried)) == len(tried)
    assert max(tried) <= max_clients
    if failed:
        assert min(failed) - found.capacity_clients <= step
        assert found.capacity_clients <= threshold < min(failed)
    else:
        assert found.capacity_clients == max_clients
    # doubling, then halving: logarithmic in the range, not linear like the step search
    assert len(tried) <= np.log2(max_clients / start) + max(np.log2(max_clients / step), 0) + 3


def test_linear_search_stops_at_the_first_failure(monkeypatch):
    tried: list[int] = []
    monkeypatch.setattr(capacity_module, "measure", fake_measure(27, tried))
    found = search_capacity(lambda c: None, start=8, step=8, max_clients=100)
    assert tried == [8, 16, 24, 32] and found.capacity_clients == 24


def test_unknown_search_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["capacity", str(FOUR), "--search", "binary"])
    assert exit_.value.code == 2
    assert "--search" in capsys.readouterr().err


def test_node_reads_at_most_the_packets_of_its_players():
    """An overloaded 4-node run: each node's frame reads at most as many packets as the
    players it has served (not ``players.count``, which a single server may read)."""
    scenario = load_scenario(FOUR, ["run.duration_s=0.4", "run.warmup_s=0.2"])
    out = simulate_cluster(scenario, record_packets=True)
    owners = np.array(out.owner_history)  # (ticks, players): each tick's owner node
    for node, served in enumerate(out.served):
        # players this node ever owned bound the client slots it had at any frame (some of
        # them may still have packets queued, unread, at the end of an overloaded run)
        owned = int((owners == node).any(axis=0).sum())
        largest = max(len(batch) for _, _, batch in served)
        assert largest <= owned < scenario.players.count
    assert max(len(b) for s in out.served for _, _, b in s) > 100  # it is overloaded


def test_capacity_sweep_file_runs_one_search_per_point(tmp_path, capsys):
    sweep_file = tmp_path / "capacity.toml"
    sweep_file.write_text(
        f'base = "{FOUR}"\nseeds = 1\n'
        '[set]\n"run.duration_s" = 0.2\n"run.warmup_s" = 0.1\n'
        '"map.base_params.size" = 2048.0\n"map.radius" = 256.0\n'
        '[grid]\n"cluster.nodes" = [1, 2]\n'
        '[capacity]\nsearch = "bisect"\nstart = 8\nstep = 8\nmax = 16\nper_node = true\n'
    )
    assert main(["sweep", str(sweep_file)]) == 2
    assert "[capacity]" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["capacity", "--sweep", str(sweep_file), "--out", str(out), "--workers", "1"]) == 0
    rows = pd.read_csv(out / "capacity.csv")
    points = pd.read_csv(out / "points.csv")
    assert rows["cluster.nodes"].tolist() == [1, 2]
    assert (rows.capacity_clients == 16 * rows.nodes).all()  # light load: met up to max
    two = points[points["cluster.nodes"] == 2]
    assert two.clients.tolist() == [16, 32]  # per_node: start and max times the nodes
    assert two.interconnect_bytes_per_s.max() > 0
    assert (points[points["cluster.nodes"] == 1].interconnect_bytes_per_s == 0).all()
    assert (pd.read_csv(out / "summary.csv").n == 1).all()


def test_the_repository_sweep_file_loads():
    sweep = load_sweep(ROOT / "sweeps" / "cluster-capacity.toml")
    assert sweep.capacity is not None and sweep.capacity.search == "bisect"
    nodes = {r.scenario.cluster.nodes for r in sweep.runs}
    assert nodes == {1, 2, 4, 8, 16, 32, 64}
    for r in sweep.runs:  # every zone has the same area
        side = r.scenario.map.params.base_params["size"]
        assert side**2 / r.scenario.cluster.nodes == pytest.approx(2048.0**2, rel=1e-3)


def test_sixteen_node_scenario_runs():
    """The 16 x 8 CPU, 10,000-client scenario at a tiny duration: every node serves, the
    interconnect carries mirrors and handoffs, every packet is accounted for."""
    started = time.perf_counter()
    result = run(load_scenario(SIXTEEN, ["run.duration_s=0.05", "run.warmup_s=0.05"]))
    s = result.to_json_dict()
    assert s["error"] is None
    assert len(s["nodes"]) == 16 and len(s["cpu_utilization"]) == 128
    assert sum(n["clients"] for n in s["nodes"]) == pytest.approx(10_000)
    assert s["interconnect"]["messages_per_s"] > 0
    assert time.perf_counter() - started < 120


def capacity_rows() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for profile in ("libvip", "tcp"):
        for nodes in (1, 2, 4):
            for seed in (1, 2, 3):
                capacity = int(180 * nodes**0.8 + rng.integers(-8, 8))
                rows.append(
                    {
                        "zoning": "grid",
                        "profile": profile,
                        "nodes": nodes,
                        "seed": seed,
                        "capacity_clients": capacity,
                    }
                )
    return pd.DataFrame(rows)


def test_capacity_figure_from_a_small_frame():
    rows = capacity_rows()
    stats = capacity_stats(rows)
    assert len(stats) == 6 and (stats.n == 3).all() and (stats.ci95 > 0).all()
    fig = capacity_figure(rows)
    total, per_node = fig.axes
    assert len(total.lines) >= 3 and per_node.get_ylabel().startswith("capacity per node")


def test_traffic_figure_from_a_small_frame():
    points = []
    for nodes in (2, 4):
        for seed in (1, 2):
            for clients, met in ((100 * nodes, True), (150 * nodes, True), (200 * nodes, False)):
                points.append(
                    {
                        "nodes": nodes,
                        "zoning": "grid",
                        "profile": "libvip",
                        "seed": seed,
                        "clients": clients,
                        "met": met,
                        "interconnect_bytes_per_s": 1e3 * clients,
                        "interconnect_messages_per_s": 2.0 * clients,
                    }
                )
    frame = pd.DataFrame(points)
    best = at_capacity(frame)
    assert sorted(best.clients.unique()) == [300, 600]
    fig = traffic_figure(frame)
    assert len(fig.axes) == 4


def test_zone_map_from_a_small_scenario():
    scenario = load_scenario(FOUR, ["players.count=64"])
    zones, players, areas = zone_map_frame(scenario, tick=2, raster=60)
    assert set(zones.node) == {0, 1, 2, 3} and len(players) == 64 and len(areas) == 4
    # a border cell is near another zone: there are some, and not everywhere
    assert 0 < zones.border.mean() < 0.5
    # the grid's 2 x 2 quarters: the cell at the lower left belongs to node 0
    corner = zones.loc[(zones.x + zones.y).idxmin()]
    assert corner.node == 0 and not corner.border
    fig = zone_map_figure(zones, players, areas, "test")
    assert fig.axes[0].get_title() == "test"


@pytest.mark.slow
def test_study_quick_size_runs(tmp_path):
    out = tmp_path / "study"
    assert cluster_capacity.main(["--quick", "--out", str(out), "--workers", "1"]) == 0
    rows = pd.read_csv(f"{out}-capacity.csv")
    assert sorted(rows.nodes.unique()) == [1, 2, 4]
    assert (rows.capacity_clients > 0).all()
    for name in ("capacity", "traffic", "zones"):
        assert Path(f"{out}-{name}.png").stat().st_size > 10_000


def test_study_refuses_an_unknown_zoning(capsys):
    assert cluster_capacity.main(["--zonings", "hexagons", "--quick"]) == 2
    assert "--zonings" in capsys.readouterr().err


def test_an_interrupted_capacity_sweep_keeps_the_searches_that_finished(
    tmp_path, capsys, monkeypatch
):
    """Ctrl-C used to lose every finished search (the tables were written at the end)."""
    from simsrv.sweep import capacity_sweep

    sweep_file = tmp_path / "capacity.toml"
    sweep_file.write_text(
        f'base = "{FOUR}"\nseeds = 1\n'
        '[set]\n"run.duration_s" = 0.2\n"run.warmup_s" = 0.1\n"cluster.nodes" = 1\n'
        '[grid]\n"machine.cpus" = [1, 2, 4]\n'
        "[capacity]\nstart = 8\nstep = 8\nmax = 8\n"
    )
    searched = capacity_sweep.search_run
    calls = []

    def interrupted_third(job):
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return searched(job)

    monkeypatch.setattr(capacity_sweep, "search_run", interrupted_third)
    out = tmp_path / "out"
    argv = ["capacity", "--sweep", str(sweep_file), "--out", str(out), "--workers", "1"]
    assert main(argv) == 130
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"simsrv: interrupted: 2 of 3 capacity searches had finished; their rows are in "
        f"{out}/capacity.csv and points.csv"
    )
    assert pd.read_csv(out / "capacity.csv")["machine.cpus"].tolist() == [1, 2]
    assert len(pd.read_csv(out / "points.csv")) == 2


def test_an_interrupted_study_keeps_the_searches_that_finished(tmp_path, capsys, monkeypatch):
    """Each finished search is on disk at once; Ctrl-C leaves them there and exits 130."""
    calls = []

    def third_interrupted(job):
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt
        nodes, zoning, profile, seed, _ = job
        head = {"nodes": nodes, "zoning": zoning, "profile": profile, "seed": seed}
        row = {**head, "capacity_clients": 100 * nodes, "capacity_per_node": 100.0}
        return row, [{**head, "clients": 100 * nodes, "met": True}]

    monkeypatch.setattr(cluster_capacity, "search", third_interrupted)
    out = tmp_path / "study"
    argv = ["--nodes", "1", "2", "4", "--seeds", "1", "--zonings", "grid"]
    argv += ["--profiles", "libvip", "--out", str(out), "--workers", "1"]
    assert cluster_capacity.main(argv) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"interrupted: 2 searches had finished; their rows are in {out}-capacity.csv and "
        f"{out}-points.csv"
    )
    rows = pd.read_csv(f"{out}-capacity.csv")
    assert rows.nodes.tolist() == [4, 2]  # the longest first, in the jobs' order
    assert pd.read_csv(f"{out}-points.csv").clients.tolist() == [400, 200]
    assert not Path(f"{out}-summary.csv").exists()


def test_a_failed_study_search_is_reported_and_the_others_go_on(tmp_path, capsys, monkeypatch):
    def second_fails(job):
        nodes, zoning, profile, seed, _ = job
        if nodes == 2:
            raise ValueError("no luck")
        head = {"nodes": nodes, "zoning": zoning, "profile": profile, "seed": seed}
        row = {**head, "capacity_clients": 100 * nodes, "capacity_per_node": 100.0}
        return row, [{**head, "clients": 100 * nodes}]

    monkeypatch.setattr(cluster_capacity, "search", second_fails)
    monkeypatch.setattr(cluster_capacity, "draw", lambda rows, points, out: None)
    out = tmp_path / "study"
    argv = ["--nodes", "1", "2", "4", "--seeds", "1", "--zonings", "grid"]
    argv += ["--profiles", "libvip", "--out", str(out), "--workers", "1"]
    assert cluster_capacity.main(argv) == 0
    err = capsys.readouterr().err
    assert "search nodes=2 zoning=grid profile=libvip seed=1 failed: ValueError: no luck" in err
    assert pd.read_csv(f"{out}-capacity.csv").nodes.tolist() == [4, 1]
