"""Cluster zoning rules: grid, areanode subtrees and load-aware border moves give a
partition of the map; a border move hands over exactly the players whose owner it changed and
loses no packet; a cross-border action costs a request and a reply; one node with any zoning
is the single server; bad zoning input is refused."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.cli.main import main
from simsrv.interconnect import load_profile, send_one
from simsrv.machine.plan import Compute
from simsrv.pipeline.cluster.actions import RemoteActions
from simsrv.pipeline.cluster.exchange import Exchange
from simsrv.pipeline.cluster.metrics import summarize_cluster
from simsrv.pipeline.cluster.router import Router
from simsrv.pipeline.cluster.simulation import simulate_cluster
from simsrv.pipeline.cluster.socket import SocketBank
from simsrv.pipeline.cluster.zones import ZonedWorld
from simsrv.pipeline.cluster.zoning import ZONINGS
from simsrv.pipeline.cluster.zoning.areanode import AreanodeZoning, leaf_of, tree_depth
from simsrv.pipeline.cluster.zoning.grid import GridZoning
from simsrv.pipeline.cluster.zoning.load_aware import LoadAwareZoning
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.workload.messages import MESSAGE_DTYPE
from simsrv.world.areanode import AreanodeTree
from simsrv.world.proximity import Neighbours

ROOT = Path(__file__).resolve().parents[1]
CUBE = ROOT / "scenarios" / "cube-160.toml"
FOUR = ROOT / "scenarios" / "cluster" / "nodes4-cpus2-640.toml"
ZONES = ["grid", "areanode", "load-aware"]


def fake_map(low, high, entities=()):
    """What a zoning reads of a map: its extent and its entities (N, 3)."""
    return SimpleNamespace(
        extent_min=np.array([*low, 0.0]),
        extent_max=np.array([*high, 256.0]),
        entities=np.array(entities, dtype=float).reshape(-1, 3),
    )


def rectangles_tile(zoning, low, high) -> None:
    """The zones' rectangles cover the extent without overlapping (areas add up, interiors
    are disjoint)."""
    lo, hi = zoning.zone_min, zoning.zone_max
    assert (hi >= lo).all()
    area = np.prod(hi - lo, axis=1)
    assert area.sum() == pytest.approx(np.prod(np.subtract(high, low)), rel=1e-9)
    for i in range(zoning.nodes):
        overlap = np.clip(np.minimum(hi[i], hi) - np.maximum(lo[i], lo), 0, None).prod(axis=1)
        overlap[i] = 0
        assert (overlap <= 1e-9 * area.sum()).all(), f"zone {i} overlaps another"


maps = st.tuples(st.floats(-4096, 0), st.floats(-4096, 0), st.floats(64, 8192), st.floats(64, 8192))


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(ZONES),
    nodes=st.integers(1, 20),
    extent=maps,
    players=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=60),
    probes=st.lists(st.tuples(st.floats(-0.2, 1.2), st.floats(-0.2, 1.2)), min_size=1),
)
def test_every_zoning_is_a_partition(name, nodes, extent, players, probes):
    """Every point of the plane is in exactly one zone: zone_of names a zone whose rectangle
    holds the point (clipped to the map); a point off every border is in one rectangle only;
    the rectangles tile the extent.  For load-aware, after a border move too."""
    x0, y0, w, h = extent
    low, high = (x0, y0), (x0 + w, y0 + h)
    zoning = ZONINGS.get(name, "cluster.zoning").build(fake_map(low, high), nodes, 100.0)
    scale = np.array([w, h])
    crowd = np.array(players, dtype=float).reshape(-1, 2) * scale + low
    moved = zoning.rebalance(0.0, crowd)
    assert not moved or (name == "load-aware" and nodes > 1)
    rectangles_tile(zoning, low, high)
    xy = np.array(probes, dtype=float) * scale + low
    zone = zoning.zone_of(xy)
    assert ((zone >= 0) & (zone < nodes)).all()
    p = np.clip(xy, low, high)
    eps = 1e-9 * max(w, h)  # the grid's zone edges are computed: rounding at the borders
    lo, hi = zoning.zone_min - eps, zoning.zone_max + eps
    inside = (lo <= p[:, None]).all(2) & (p[:, None] <= hi).all(2)
    assert inside[np.arange(len(p)), zone].all()
    edges = np.concatenate([zoning.zone_min, zoning.zone_max])
    off_borders = ~((np.abs(p[:, None, :] - edges[None]) <= eps).any(axis=(1, 2)))
    assert (inside[off_borders].sum(axis=1) == 1).all()
    assert zoning.mirror_counts(xy, zone).trace() == 0


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 40), extent=maps)
def test_areanode_zones_are_subtrees_of_the_tree(nodes, extent):
    x0, y0, w, h = extent
    zoning = AreanodeZoning(fake_map((x0, y0), (x0 + w, y0 + h)), nodes, 0.0, "area")
    tree = zoning.tree
    assert tree.depth == tree_depth(nodes) and (nodes > 16) == (tree.depth > 4)
    leaves = AreanodeTree.level(tree.depth)
    owner_of_leaf = {}
    for zone, node in zoning.subtree.items():
        assert zoning.zone_min[zone] == pytest.approx(tree.lo[node])
        assert zoning.zone_max[zone] == pytest.approx(tree.hi[node])
        depth = int(AreanodeTree.node_depth(node))
        for leaf in leaves[AreanodeTree.ancestor(leaves, depth) == node]:
            assert leaf not in owner_of_leaf, "a leaf in two zones"
            owner_of_leaf[int(leaf)] = zone
    assert sorted(owner_of_leaf) == leaves.tolist(), "every leaf in a zone"
    centres = 0.5 * (tree.lo[leaves] + tree.hi[leaves])
    assert zoning.zone_of(centres).tolist() == [owner_of_leaf[int(v)] for v in leaves]
    assert (leaf_of(tree, centres) == leaves).all()
    area = np.prod(zoning.zone_max - zoning.zone_min, axis=1)
    if nodes & (nodes - 1) == 0:  # a power of two: the regions of one depth, equal areas
        assert area == pytest.approx(np.full(nodes, w * h / nodes))
    else:  # subtrees halve: zones differ by at most a factor 2 in area
        assert area.max() <= 2 * area.min() * (1 + 1e-9)


def test_areanode_four_zones_are_the_grid_quarters_and_entities_weigh():
    square = fake_map((0, 0), (4096, 4096))
    tree4 = AreanodeZoning(square, 4, 256.0, "area")
    grid = GridZoning(np.zeros(2), np.full(2, 4096.0), 4, 256.0)
    assert tree4.zone_min.tolist() == grid.zone_min.tolist()
    assert tree4.zone_max.tolist() == grid.zone_max.tolist()
    # three nodes: by area the first split gives the above half two quarters; when every
    # entity is in the lower half (y < 2048: the root splits y on a square), that half does
    entities = [(x, y, 0.0) for x in (100, 3000) for y in (100, 500, 1500)]
    by_area = AreanodeZoning(fake_map((0, 0), (4096, 4096), entities), 3, 256.0, "area")
    by_entities = AreanodeZoning(fake_map((0, 0), (4096, 4096), entities), 3, 256.0, "entities")
    low_half = lambda z: int(np.sum(z.zone_max[:, 1] <= 2048))  # noqa: E731
    assert low_half(by_area) == 1 and low_half(by_entities) == 2
    counts = np.bincount(by_entities.zone_of(np.array(entities)[:, :2]), minlength=3)
    assert sorted(counts.tolist()) == [0, 3, 3]


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 16),
    extent=maps,
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 400),
)
def test_load_aware_cuts_balance_the_players(nodes, extent, seed, count):
    x0, y0, w, h = extent
    zoning = LoadAwareZoning(np.array([x0, y0]), np.array([x0 + w, y0 + h]), nodes, 10.0, 1.0)
    rng = np.random.default_rng(seed)
    size = np.array([w, h])
    xy = rng.uniform(0, 1, (count, 2)) * size + [x0, y0]
    centre = rng.uniform(0.05, 0.95, 2)  # a hotspot: half the players near it
    xy[: count // 2] = (centre + rng.uniform(-0.05, 0.05, (count // 2, 2))) * size + [x0, y0]
    zoning.rebalance(0.0, xy)
    per_zone = np.bincount(zoning.zone_of(xy), minlength=nodes)
    depth = int(np.ceil(np.log2(nodes)))
    assert np.abs(per_zone - count / nodes).max() <= depth + 0.5 + 1e-9


class ScriptedWorld:
    """A world whose players stand where the script says, tick by tick (shots: player 0
    fires at every tick and has player 1 in its action range)."""

    def __init__(self, game_map, script) -> None:
        self.map = game_map
        self.script = script
        self.tick = 0

    @property
    def players(self) -> int:
        return len(self.script[0])

    def advance(self, dt_s):
        positions = np.asarray(self.script[min(self.tick, len(self.script) - 1)], dtype=float)
        n = len(positions)
        shot = np.zeros(n, dtype=bool)
        shot[0] = True
        indptr = np.array([0, 1] + [1] * (n - 1))
        state = SimpleNamespace(
            tick=self.tick,
            positions=positions,
            actions=SimpleNamespace(shot=shot),
            neighbours=Neighbours(indptr, np.array([1])),
        )
        self.tick += 1
        return state


def packets(clients, tick, arrival_s, shot=False):
    out = np.zeros(len(clients), dtype=MESSAGE_DTYPE)
    out["client"], out["tick"], out["arrival_s"], out["shot"] = clients, tick, arrival_s, shot
    return out


def test_a_border_move_hands_over_exactly_the_migrated_players():
    """Two nodes on a 2000 x 1000 map (cut across x), eight players standing still; at t = 0
    the median cut splits them 4 / 4; at tick 3 two of them walk across (to x > 1900) and
    the load-aware border moves at the next period (tick 4, a period of 4 ticks): the players
    whose owner the move changed, and only they, are handed over with their queued packets and
    one ``handoff_bytes`` message each; no packet is lost or read twice."""
    rate = 1.0  # one tick per second: tick k at t = k s
    start = [[x, 500.0] for x in (100, 300, 500, 900, 1300, 1500, 1700, 1900)]
    moved = [list(p) for p in start]
    moved[0], moved[1] = [1920.0, 100.0], [1960.0, 900.0]
    script = [start] * 3 + [moved] * 10
    zoning = LoadAwareZoning(np.zeros(2), np.array([2000.0, 1000.0]), 2, 50.0, period_s=4.0)
    zoned = ZonedWorld(ScriptedWorld(fake_map((0, 0), (2000, 1000)), script), zoning, rate, 20)
    for _ in range(6):
        zoned.advance(1.0)
    assert [r.tick for r in zoned.rebalances] == [0, 4]
    first, move = zoned.rebalances
    assert zoning.cuts() == [(0, 1600.0)] and first.after.tolist() == [4, 4]
    assert move.before.tolist() == [2, 6] and move.after.tolist() == [4, 4]
    before, after = zoned.owner_at(3), zoned.owner_at(4)
    migrated = np.flatnonzero(before != after)  # walking players 0 and 1 are not among them
    assert migrated.tolist() == [4, 5] and move.migrated == 2

    exchange = Exchange(load_profile("libvip"), 2, keep=True)
    bank = SocketBank(2, 8)
    sockets = [bank.socket(0), bank.socket(1)]
    builders = [SimpleNamespace(last_tick=np.zeros(8, dtype=np.int64)) for _ in range(2)]
    router = Router(zoned, bank, builders, exchange, handoff_bytes=8192)
    everyone = np.arange(8)
    router.route(packets(everyone, 2, 2.5), 2.5)  # first sight: no handoff
    router.route(packets(everyone, 3, 3.5), 3.5)  # players 0 and 1 walked: handed over
    walked = {h.client for h in router.handoffs}
    assert walked == {0, 1}
    router.route(packets(everyone, 4, 4.5), 4.5)  # the borders moved
    moved_over = [h for h in router.handoffs if h.t_s == 4.5]
    assert sorted(h.client for h in moved_over) == migrated.tolist()
    assert all(h.forwarded == 2 for h in moved_over)  # ticks 2 and 3, still queued
    handoffs = [p for p in exchange.posted if p.kind == "handoff"]
    assert len(handoffs) == len(router.handoffs) == 4
    assert all(p.message_bytes == 8192 + 36 * p.items for p in handoffs)
    # conservation: each of the 24 packets is queued exactly once, at its player's owner
    queued = [sockets[n].read(100) for n in range(2)]
    assert sum(len(q) for q in queued) == 24
    keys = {(int(c), int(t)) for q in queued for c, t in zip(q["client"], q["tick"], strict=True)}
    assert len(keys) == 24
    for node, q in enumerate(queued):
        assert (after[q["client"]] == node).all()


def test_a_cross_border_action_costs_a_request_and_a_reply():
    """A hand-made frame: player 0 (node 0) shoots at player 1 (node 1) across the border:
    exactly two messages (request, reply) of ``action_bytes``; send CPU at each sender,
    receive CPU at each receiver; the round trip is the two transfers plus the owner's wait
    for its frame.  A shot at a player of its own node costs nothing."""
    profile = load_profile("libvip")
    zoning = GridZoning(np.zeros(2), np.array([2048.0, 1024.0]), 2, 256.0)
    script = [[[1000.0, 500.0], [1100.0, 500.0], [1010.0, 600.0]]]
    zoned = ZonedWorld(
        ScriptedWorld(fake_map((0, 0), (2048, 1024)), script), zoning, 31.25, 8, shots=True
    )
    state = zoned.advance(0.032)
    assert zoned.owner_at(0).tolist() == [0, 1, 0] and zoned.target_of(0, 0) == (1, 1)
    exchange = Exchange(profile, 2, keep=True)
    actions = RemoteActions(zoned, exchange, action_bytes=32)
    t0 = 0.5
    exchange.advance(t0)
    frame = packets([0, 2], state.tick, 0.4, shot=[True, False])
    assert actions.request(0, frame, t0) == 1
    assert exchange.take_ops(0) == (Compute("action_send", profile.send_cpu_us),)

    alone = send_one(profile, 32)
    t1 = t0 + 0.010  # node 1's next frame, after the request arrived
    exchange.advance(t1)
    assert actions.answer(1, t1) == 1
    assert exchange.take_ops(1) == (
        Compute("action_recv", alone.recv_cpu_us),
        Compute("action_reply_send", profile.send_cpu_us),
    )
    exchange.advance(t1 + 0.010)
    assert exchange.take_ops(0) == (Compute("action_reply_recv", alone.recv_cpu_us),)
    request, reply = exchange.posted
    assert (request.kind, request.src, request.dst, request.message_bytes) == ("action", 0, 1, 32)
    assert (reply.kind, reply.src, reply.dst, reply.message_bytes) == ("action_reply", 1, 0, 32)
    assert actions.replied == {reply.message_id: request.message_id}
    for message in (request, reply):
        delivery = exchange.deliveries[message.message_id]
        assert delivery.latency_us == pytest.approx(profile.idle_time_us(32), abs=1e-9)
    round_trip = exchange.deliveries[reply.message_id].received_us - t0 * 1e6
    assert round_trip == pytest.approx((t1 - t0) * 1e6 + alone.latency_us, abs=1e-6)
    # the same shot read by node 1 (the target's owner) is local: no message
    assert actions.request(1, frame, t1) == 0 and len(exchange.posted) == 2


@pytest.mark.parametrize("zoning", ZONES)
def test_one_node_with_any_zoning_is_the_single_server(zoning):
    sets = ["run.duration_s=1", "run.warmup_s=0.3", "server.strategy=bsp-group"]
    single = run(load_scenario(CUBE, sets), keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    cluster_sets = [*sets, "cluster.nodes=1", f'cluster.zoning="{zoning}"']
    cluster_scenario = load_scenario(CUBE, [*cluster_sets, "cluster.remote_actions=true"])
    cluster = run(cluster_scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    ignored = {"scenario", "wall_time_s", "nodes", "interconnect", "zoning"}
    a, b = single.to_json_dict(), cluster.to_json_dict()
    assert {k: v for k, v in a.items() if k not in ignored} == {
        k: v for k, v in b.items() if k not in ignored
    }
    assert single.frames.equals(cluster.frames) and single.trace.equals(cluster.trace)
    assert b["interconnect"]["cross_border_actions_per_s"] == 0
    assert b["zoning"]["rebalances_per_s"] == 0


HOT_CORNER = [
    "players.count=96",
    "run.duration_s=3",
    "run.warmup_s=0.5",
    "cluster.rebalance_s=0.5",
    "cluster.remote_actions=true",
    'map.layout="explicit"',
    "map.areas=[[700.0, 700.0, 500.0, 1.0]]",
    "players.behaviour.hotspot_share=0.9",
]


def test_load_aware_balances_a_hotspot_and_conserves_packets():
    """One hotspot in a corner of the 4-node arena: the grid's node there holds most players;
    load-aware borders cut that down; every border move's migrations are handed over, every
    change of a player's node is a handoff, and no packet is lost or read twice."""
    grid = run(load_scenario(FOUR, [*HOT_CORNER, 'cluster.zoning="grid"'])).to_json_dict()
    scenario = load_scenario(FOUR, [*HOT_CORNER, 'cluster.zoning="load-aware"'])
    out = simulate_cluster(scenario, record_packets=True, keep_messages=True)
    aware = summarize_cluster(scenario, out)
    assert grid["zoning"]["max_over_mean_clients"] > 2.0
    assert aware["zoning"]["max_over_mean_clients"] < 1.5
    assert aware["zoning"]["rebalances_per_s"] == pytest.approx(2.0)
    assert aware["zoning"]["migrated_per_s"] > 0

    owners = np.array(out.owner_history)  # one owner per player per tick
    assert (out.owned_per_tick.sum(axis=1) == 96).all()
    assert owners.shape == (len(out.owned_per_tick), 96)
    for r in out.rebalances:
        assert r.after.tolist() == np.bincount(owners[r.tick], minlength=4).tolist()
        assert r.before.sum() == r.after.sum() == 96
    a = out.accounting
    assert a["sent"] == a["lost"] + a["in_flight"] + a["dropped"] + a["processed"] + a["queued"]
    reads = [
        (start_s, node, int(c), int(k))
        for node, frames in enumerate(out.served)
        for _, start_s, batch in frames
        for c, k in zip(batch["client"], batch["tick"], strict=True)
    ]
    assert len(reads) == a["processed"]
    assert len({(c, k) for _, _, c, k in reads}) == len(reads), "a packet read twice"
    per_client = defaultdict(list)
    for _, node, client, tick in sorted(reads):
        per_client[client].append((tick, node))
    handoffs = defaultdict(list)
    for h in out.handoffs:
        handoffs[h.client].append((h.src, h.dst))
    for client, seq in per_client.items():
        nodes = [n for _, n in seq]
        # each packet is read by its player's owner at its tick, unless forwarded by a handoff
        changes = [(x, y) for x, y in zip(nodes, nodes[1:], strict=False) if x != y]
        it = iter(handoffs[client])
        assert all(change in it for change in changes), f"client {client} moved unhanded"
    # a rebalance's migrants are handed over: each owner change along a player's ticks is one
    first_tick = min(k for _, _, _, k in reads)
    last_tick = max(k for _, _, _, k in reads)
    owner_changes = int(np.count_nonzero(owners[first_tick + 1 : last_tick + 1]
                                         != owners[first_tick:last_tick]))  # fmt: skip
    assert len(out.handoffs) <= owner_changes + 96
    inside = [r.migrated for r in out.rebalances if first_tick < r.tick <= last_tick - 4]
    assert len(out.handoffs) >= sum(inside) > 0

    kinds = defaultdict(int)
    for p in out.exchange.posted:
        kinds[p.kind] += 1
    assert kinds["action"] > 0 and 0 < kinds["action_reply"] <= kinds["action"]
    posted = out.exchange.posted
    for reply, request in out.replied.items():
        assert posted[reply].items == posted[request].items
        assert (posted[reply].src, posted[reply].dst) == (posted[request].dst, posted[request].src)
    assert aware["interconnect"]["cross_border_actions_per_s"] > 0
    assert aware["interconnect"]["action_round_trip_ms"] * 1e3 >= 2 * load_profile(
        "libvip"
    ).idle_time_us(32)


@pytest.mark.parametrize(
    ("setting", "names"),
    [
        ("cluster.zoning=hexagons", ["areanode", "grid", "load-aware"]),
        ("cluster.rebalance_s=0", ["cluster.rebalance_s", "0"]),
        ("cluster.rebalance_s=-2", ["cluster.rebalance_s"]),
        ('cluster.rebalance_s="often"', ["cluster.rebalance_s"]),
        ('cluster.areanode_weight="players"', ["area", "entities"]),
        ("cluster.remote_actions=1", ["cluster.remote_actions", "true or false"]),
        ("cluster.action_bytes=-1", ["cluster.action_bytes"]),
    ],
)
def test_bad_zoning_input_exits_2_with_one_line(setting, names, capsys):
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(["run", str(CUBE), "--set", setting]))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert all(name in err for name in names), err


def test_mirrored_players_leave_out_the_mirrored_map_entities():
    # two zones split at x = 1024, border 256: player 1 (x = 1100, zone 1) is near zone 0,
    # player 0 (x = 500) is not; a map entity (a door at x = 1000, zone 0) is near zone 1
    zoning = GridZoning(np.zeros(2), np.array([2048.0, 1024.0]), 2, 256.0)
    game_map = fake_map((0, 0), (2048, 1024), entities=[[1000.0, 500.0, 0.0]])
    script = [[[500.0, 500.0], [1100.0, 500.0]]]
    zoned = ZonedWorld(ScriptedWorld(game_map, script), zoning, 31.25, 8)
    zoned.advance(0.032)
    assert zoned.mirror_at(0.0).tolist() == [[0, 1], [1, 0]]  # door 0 -> 1, player 1 -> 0
    assert zoned.mirrored_players_at(0, 0.0) == 1
    assert zoned.mirrored_players_at(1, 0.0) == 0  # only the door is mirrored onto node 1
    assert zoned.entities_at(1, 0.0) == 2  # its player and the mirrored door


def test_packets_of_ticks_no_longer_kept_go_to_the_players_nodes():
    """At the run's end the router gets packets of ticks the zoned world no longer keeps: a
    player seen before stays on its node; a player routed for the first time, its first
    packet of a kept tick or of none, goes to its owner at that tick or at the last kept
    tick (never to no node: that once raised at the end of short overloaded runs)."""
    zoning = GridZoning(np.zeros(2), np.array([2000.0, 1000.0]), 2, 50.0)
    script = [[[100.0, 500.0], [1500.0, 500.0], [1600.0, 500.0]]] * 3
    script += [[[100.0, 500.0], [100.0, 400.0], [1600.0, 500.0]]] * 6  # player 1 walks over
    zoned = ZonedWorld(ScriptedWorld(fake_map((0, 0), (2000, 1000)), script), zoning, 1.0, 2)
    for _ in range(8):
        zoned.advance(1.0)
    assert (zoned.first_tick, zoned.last_tick) == (6, 7)  # ticks 0-5 no longer kept
    exchange = Exchange(load_profile("libvip"), 2, keep=True)
    bank = SocketBank(2, 3)
    sockets = [bank.socket(0), bank.socket(1)]
    builders = [SimpleNamespace(last_tick=np.zeros(3, dtype=np.int64)) for _ in range(2)]
    router = Router(zoned, bank, builders, exchange, handoff_bytes=8192)
    router.serving[0] = 1  # seen before, on node 1 (an old border): it stays there
    batch = np.concatenate([packets([0, 1], 1, 8.0), packets([2], 7, 8.0), packets([2], 1, 8.0)])
    router.route(batch, 8.0)
    assert router.handoffs == []
    assert sockets[1].read(10)["client"].tolist() == [0, 2, 2]  # player 2: node 1 at tick 7
    assert sockets[0].read(10)["client"].tolist() == [1]  # player 1: node 0 at the last tick
    assert router.serving.tolist() == [1, 0, 1]


@pytest.mark.parametrize(
    "sets",
    [
        [],  # gapless: the last ticks written, never read
        ["clients.packet_loss=0.05", "clients.socket_buffer_messages=48"],  # ticks read
        ["clients.bandwidth_control=true", "clients.rate_bytes_per_s=2500"],  # replies held
    ],
)
def test_nodes_sharing_their_per_client_arrays_run_as_with_their_own(sets, monkeypatch):
    """A cluster's nodes share the per-client arrays of their frame builders and loops; a run
    is the same, frame by frame, as with each node's own arrays (handoffs copying the last
    executed tick from node to node)."""
    from simsrv.pipeline.cluster import node, simulation

    base = ["players.count=400", "run.duration_s=1", "run.warmup_s=0.3", *HOT_CORNER[3:], *sets]
    scenario = load_scenario(FOUR, [*base, 'cluster.zoning="load-aware"'])
    shared = run(scenario, keep_frames=KEEP_ALL)
    built = []

    def own_arrays(*args, shared=None):
        built.append(args[1])
        return node.build_node(*args)

    monkeypatch.setattr(simulation, "build_node", own_arrays)
    own = run(scenario, keep_frames=KEEP_ALL)
    assert built == [0, 1, 2, 3]
    a, b = shared.to_json_dict(), own.to_json_dict()
    a.pop("wall_time_s"), b.pop("wall_time_s")
    assert a == b and shared.frames.equals(own.frames)
    assert a["interconnect"]["handoffs_per_s"] > 0


def test_the_nodes_stamp_the_shared_scratch_from_disjoint_ranges():
    """Nodes sharing ``seen`` stamp it each from its own range: a stamp one node wrote is never
    another's (a client met by one node never looks met to the next in its frame)."""
    from simsrv.frame_steps import state
    from simsrv.pipeline.cluster.node import STAMP_RANGE, SharedClients, build_node
    from simsrv.pipeline.seeding import run_streams
    from simsrv.pipeline.simulation import build_world
    from simsrv.platforms.profile import resolve_platform

    scenario = load_scenario(FOUR, ["players.count=40"])
    streams = run_streams(scenario.run)
    world = build_world(scenario, streams)
    platform = resolve_platform(scenario.machine.platform, scenario.machine.costs)
    shared = SharedClients.of(scenario)
    bank = SocketBank(4, 40)
    nodes = [
        build_node(scenario, i, platform, world, streams["strategy"], bank.socket(i), shared)
        for i in range(4)
    ]
    assert [int(n.loop.ints[state.STAMP]) for n in nodes] == [i * STAMP_RANGE for i in range(4)]
    assert all(n.builder.seen is shared.seen and n.loop.held is shared.held for n in nodes)
    assert STAMP_RANGE > 10**12  # two passes a frame: ~17 simulated years at 1,000 frames/s


def test_the_end_of_a_run_counted_in_any_order_is_the_end_routed_in_order():
    """The packets routed once every node has passed the run's end: counted per node in any
    order (messages not kept) or routed in arrival order with their handoffs (kept): the same
    arrivals per node and the same accounting."""
    sets = ["players.count=1200", "run.duration_s=0.6", "run.warmup_s=0.2", *HOT_CORNER[3:]]
    scenario = load_scenario(FOUR, [*sets, 'cluster.zoning="load-aware"'])
    counted = simulate_cluster(scenario)
    routed = simulate_cluster(scenario, keep_messages=True)
    assert counted.accounting == routed.accounting
    assert [n.arrived for n in counted.nodes] == [n.arrived for n in routed.nodes]
    late = [h for h in routed.handoffs if h.t_s >= 0.8]  # routed after the nodes stopped
    assert late and counted.accounting["queued"] > 0
