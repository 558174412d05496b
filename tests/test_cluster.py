"""The cluster simulation: one node = one server exactly, a border entity's update
costs the modelled message, handoffs serve each player from one node and lose no packet, and
bad ``[cluster]`` input is refused."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.cli.main import main
from simsrv.interconnect import load_profile, send_one
from simsrv.machine.engines import ENGINES
from simsrv.machine.plan import Compute, FramePlan, Thread
from simsrv.pipeline.cluster.exchange import Exchange, with_ops
from simsrv.pipeline.cluster.simulation import simulate_cluster
from simsrv.pipeline.cluster.zoning.grid import GridZoning, grid_shape
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run

ROOT = Path(__file__).resolve().parents[1]
CUBE = ROOT / "scenarios" / "cube-160.toml"
SHORT = ["run.duration_s=2", "run.warmup_s=0.5"]
IGNORED = {"scenario", "wall_time_s", "nodes", "interconnect", "zoning"}


@pytest.mark.parametrize("strategy", ["sequential", "bsp-group"])
def test_one_node_without_borders_is_the_single_server(strategy):
    """The most important test: a one-node cluster is today's server, bit for bit."""
    sets = [*SHORT, f"server.strategy={strategy}"]
    single = run(load_scenario(CUBE, sets), keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    cluster = run(
        load_scenario(CUBE, [*sets, "cluster.nodes=1"]), keep_trace=KEEP_ALL, keep_frames=KEEP_ALL
    )
    assert cluster.scenario.cluster is not None and single.scenario.cluster is None
    a, b = single.to_json_dict(), cluster.to_json_dict()
    assert set(b) - set(a) == {"nodes", "interconnect", "zoning"}
    assert {k: v for k, v in a.items() if k not in IGNORED} == {
        k: v for k, v in b.items() if k not in IGNORED
    }
    assert single.frames.equals(cluster.frames)
    assert single.trace.equals(cluster.trace)
    assert b["interconnect"]["messages_per_s"] == 0 and b["interconnect"]["handoffs_per_s"] == 0
    assert b["nodes"][0]["replies_per_s"] == a["replies_per_s"]
    assert b["nodes"][0]["clients"] == 160
    assert b["zoning"] == {"max_over_mean_clients": 1.0, "rebalances_per_s": 0, "migrated_per_s": 0}


def test_cube_json_unchanged_without_cluster():
    """Without ``[cluster]`` the resolved scenario has no ``cluster`` key (old layout)."""
    result = run(load_scenario(CUBE, ["run.duration_s=0.3", "run.warmup_s=0.1"]))
    assert "cluster" not in result.to_json_dict()["scenario"]


def test_border_entity_update_costs_the_modelled_message():
    """A hand-made frame: node 0 owns one entity near node 1's zone; its update is one
    message of ``state_bytes`` that costs exactly send CPU on node 0, receive CPU on node 1
    and the transfer time of :func:`send_one`."""
    profile = load_profile("libvip")
    state_bytes = 24
    zoning = GridZoning(np.zeros(2), np.array([2048.0, 1024.0]), 2, border=256.0)
    xy = np.array([[1000.0, 500.0], [200.0, 500.0]])  # 24 units from the border; far from it
    owner = zoning.zone_of(xy)
    counts = zoning.mirror_counts(xy, owner)
    assert owner.tolist() == [0, 0] and counts.tolist() == [[0, 1], [0, 0]]

    exchange = Exchange(profile, 2, keep=True)
    start_s = 0.5
    exchange.advance(start_s)
    exchange.post("mirror", 0, 1, state_bytes * int(counts[0, 1]), start_s, int(counts[0, 1]))
    send_ops = exchange.take_ops(0)
    assert send_ops == (Compute("mirror_send", profile.send_cpu_us),)

    base = FramePlan((Thread("main", 0, (Compute("frame", 100.0),)),))
    machine = ENGINES.get("fast", "machine.engine")(1, 1, 1.0)
    end_s = machine.execute(with_ops(base, send_ops), 0, start_s)
    assert end_s - start_s == pytest.approx((100.0 + profile.send_cpu_us) * 1e-6, abs=1e-12)

    exchange.advance(start_s + 0.01)
    (delivery,) = exchange.deliveries.values()
    alone = send_one(profile, state_bytes)
    assert delivery.received_us - delivery.posted_us == pytest.approx(alone.latency_us, abs=1e-9)
    assert delivery.latency_us == pytest.approx(profile.idle_time_us(state_bytes), abs=1e-9)
    assert exchange.take_ops(1) == (Compute("mirror_recv", alone.recv_cpu_us),)
    assert exchange.take_ops(1) == () and exchange.take_ops(0) == ()  # charged once


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 12),
    border=st.floats(0.0, 600.0),
    points=st.lists(st.tuples(st.floats(-50, 2100), st.floats(-50, 1100)), max_size=30),
)
def test_grid_mirror_counts_match_brute_force(nodes, border, points):
    zoning = GridZoning(np.zeros(2), np.array([2048.0, 1024.0]), nodes, border)
    xy = np.array(points, dtype=float).reshape(-1, 2)
    owner = zoning.zone_of(xy)
    assert ((owner >= 0) & (owner < nodes)).all()
    expected = np.zeros((nodes, nodes), dtype=int)
    for (x, y), i in zip(xy, owner, strict=True):
        for j in range(nodes):
            lo, hi = zoning.zone_min[j], zoning.zone_max[j]
            dx, dy = max(lo[0] - x, 0, x - hi[0]), max(lo[1] - y, 0, y - hi[1])
            if j != i and np.hypot(dx, dy) < border:
                expected[i, j] += 1
    assert zoning.mirror_counts(xy, owner).tolist() == expected.tolist()
    rows, cols = grid_shape(nodes)
    assert rows * cols == nodes and rows <= cols


def test_handoff_serves_each_player_from_one_node_and_loses_no_packet():
    """Players walking across the border of a 2-node grid: every packet is read exactly once,
    by one node at a time, and a player changes nodes only through a handoff."""
    scenario = load_scenario(
        CUBE, ["run.duration_s=3", "run.warmup_s=0.5", "players.count=24", "cluster.nodes=2"]
    )
    out = simulate_cluster(scenario, record_packets=True, keep_messages=True)
    assert out.handoffs, "the players should cross the border in 3.5 s"
    a = out.accounting
    assert a["sent"] == a["lost"] + a["in_flight"] + a["dropped"] + a["processed"] + a["queued"]

    reads = []  # (frame start, node, client, tick)
    for node, frames in enumerate(out.served):
        for _, start_s, packets in frames:
            reads += [
                (start_s, node, c, k)
                for c, k in zip(packets["client"], packets["tick"], strict=True)
            ]
    assert len(reads) == a["processed"]
    assert len({(c, k) for _, _, c, k in reads}) == len(reads), "a packet read twice"

    per_client = defaultdict(list)
    for _start_s, node, client, tick in sorted(reads):
        per_client[int(client)].append((int(tick), node))
    handoffs = defaultdict(list)
    for h in out.handoffs:
        handoffs[h.client].append((h.src, h.dst))
    for client, seq in per_client.items():
        ticks = [k for k, _ in seq]
        assert ticks == sorted(ticks), f"client {client} read out of order across nodes"
        moves = [(a, b) for (_, a), (_, b) in zip(seq, seq[1:], strict=False) if a != b]
        it = iter(handoffs[client])  # each change of node is a handoff, in order
        assert all(move in it for move in moves), f"client {client} changed node without handoff"
    kinds = {p.kind for p in out.exchange.posted}
    assert kinds <= {"mirror", "handoff"} and "handoff" in kinds
    assert sum(p.kind == "handoff" for p in out.exchange.posted) == len(out.handoffs)


@pytest.mark.parametrize(
    "setting",
    [
        "cluster.nodes=0",
        "cluster.zoning=hexagons",
        "cluster.interconnect=carrier-pigeon",
        "cluster.border_width=-1",
        "cluster.colour=red",
        "cluster.state_bytes=many",
    ],
)
def test_bad_cluster_input_exits_2_with_one_line(setting, capsys):
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(["run", str(CUBE), "--set", setting]))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cluster." in err


FOUR = ROOT / "scenarios" / "cluster" / "nodes4-cpus2-640.toml"


def test_four_node_scenario_metrics_aggregate_the_nodes():
    result = run(
        load_scenario(FOUR, ["run.duration_s=1", "run.warmup_s=0.5"]), keep_frames=KEEP_ALL
    )
    data = result.to_json_dict()
    nodes = data["nodes"]
    assert len(nodes) == 4 and all(n["frames_per_s"] > 0 for n in nodes)
    assert data["replies_per_s"] == pytest.approx(sum(n["replies_per_s"] for n in nodes))
    assert data["frames_per_s"] == pytest.approx(np.mean([n["frames_per_s"] for n in nodes]))
    assert len(data["cpu_utilization"]) == 8
    assert sum(n["clients"] for n in nodes) == pytest.approx(640)
    ic = data["interconnect"]
    assert ic["messages_per_s"] > 0 and ic["bytes_per_s"] > 0 and 0 < ic["mirrored_share"] < 1
    profile = load_profile("libvip")
    assert ic["added_reply_latency_ms"] * 1e3 >= profile.idle_time_us(24) - 1e-9
    assert "mirror_send" in data["time_breakdown"] and "mirror_recv" in data["time_breakdown"]
    assert set(result.frames["node"]) == {0, 1, 2, 3}


def test_four_node_scenario_is_the_same_on_both_engines():
    sets = ["run.duration_s=0.3", "run.warmup_s=0.1"]
    keep = {"keep_frames": KEEP_ALL, "keep_messages": True}
    fast = simulate_cluster(load_scenario(FOUR, sets), **keep)
    slow = simulate_cluster(load_scenario(FOUR, [*sets, 'machine.engine="simpy"']), **keep)
    for a, b in zip(fast.nodes, slow.nodes, strict=True):
        assert a.frames.equals(b.frames)
    assert fast.accounting == slow.accounting
    assert [p.posted_s for p in fast.exchange.posted] == [p.posted_s for p in slow.exchange.posted]


def test_a_node_replies_with_the_entities_it_holds():
    """In an open arena every player sees every other (a packet carries 639 visible entities
    at 640 players), but a node holds only its zone's players and those mirrored onto it: the
    packets a node reads count the node's entities less the client, the same for every packet
    of a frame, fewer than 639; one node holds them all."""
    scenario = ROOT / "scenarios" / "cluster" / "nodes4-cpus2-640.toml"
    short = ["run.duration_s=0.5", "run.warmup_s=0.2"]
    for nodes in (4, 1):
        sc = load_scenario(scenario, [*short, f"cluster.nodes={nodes}"])
        out = simulate_cluster(sc, record_packets=True)
        seen = [p["visible_count"] for frames in out.served for _, _, p in frames if len(p)]
        assert seen
        if nodes == 1:
            assert all((v == 639).all() for v in seen)
            continue
        assert all((v == v[0]).all() and v[0] < 639 for v in seen)
        assert max(int(v[0]) for v in seen) > 100  # a node holds its ~160 players and more


def test_a_plan_as_arrays_gets_the_interconnect_ops_as_its_first_rows():
    """The coordinator's receive and send CPU prepended to a plan as arrays is the same plan
    as prepending them to the plan as objects (a new activity name is added once)."""
    from simsrv.machine.plan_arrays import from_plan

    plan = FramePlan(
        (
            Thread("main", 0, (Compute("frame", 100.0), Compute("mirror_send", 3.0))),
            Thread("worker", 1, (Compute("request", 50.0),)),
        )
    )
    ops = (Compute("mirror_recv", 7.5), Compute("mirror_send", 2.0))
    arrays = with_ops(from_plan(plan), ops)
    assert arrays.to_plan() == with_ops(plan, ops)
    assert arrays.activities == ("frame", "mirror_send", "request", "mirror_recv")
