"""Groups equal graph components; balancers meet their guarantees; assignment is a partition."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.strategies.grouping.balancers import BALANCERS, lpt, makespan
from simsrv.strategies.grouping.groups import frame_groups
from simsrv.world.proximity import neighbour_lists


def _random_frame(seed: int, players: int, entities: int, senders: int, ticks: int):
    rng = np.random.default_rng(seed)
    lists = {
        t: neighbour_lists(
            rng.uniform(0, 1200, (players, 3)), rng.uniform(0, 1200, (entities, 3)), 256.0
        )
        for t in range(ticks)
    }
    clients = rng.integers(0, players, senders)
    sent_ticks = rng.integers(0, ticks, senders)
    return lists, clients, sent_ticks


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    players=st.integers(1, 80),
    entities=st.integers(0, 6),
    senders=st.integers(1, 40),
    ticks=st.integers(1, 3),
)
def test_groups_equal_networkx_components(seed, players, entities, senders, ticks):
    lists, clients, sent = _random_frame(seed, players, entities, senders, ticks)
    groups = frame_groups(clients, sent, lists.__getitem__)
    graph = nx.Graph()
    for c, t in zip(clients.tolist(), sent.tolist(), strict=True):
        graph.add_node(c)
        indptr, indices = lists[t]
        graph.add_edges_from((c, b) for b in indices[indptr[c] : indptr[c + 1]].tolist())
    expected = sorted(sorted(component) for component in nx.connected_components(graph))
    got: dict[int, list[int]] = {}
    for e, g in zip(groups.entities.tolist(), groups.entity_group.tolist(), strict=True):
        got.setdefault(g, []).append(e)
    assert sorted(got.values()) == expected
    # numbered by smallest member; sizes are the weights; every packet maps to its sender's group
    assert [min(got[g]) for g in range(groups.count)] == sorted(min(c) for c in expected)
    assert groups.sizes.tolist() == [len(got[g]) for g in range(groups.count)]
    for c, g in zip(clients.tolist(), groups.message_group.tolist(), strict=True):
        assert c in got[g]


def _optimal_makespan(weights: list[float], m: int) -> float:
    best = float("inf")
    for assignment in itertools.product(range(m), repeat=len(weights)):
        loads = [0.0] * m
        for w, p in zip(weights, assignment, strict=True):
            loads[p] += w
        best = min(best, max(loads))
    return best


@settings(max_examples=80, deadline=None)
@given(
    weights=st.lists(st.integers(1, 40), min_size=1, max_size=7),
    m=st.integers(2, 3),
)
def test_lpt_within_graham_bound(weights, m):
    w = np.array(weights, dtype=float)
    span = makespan(w, lpt(w, [0.0] * m), [0.0] * m)
    assert span <= (4 / 3 - 1 / (3 * m)) * _optimal_makespan(weights, m) + 1e-9


@settings(max_examples=80, deadline=None)
@given(
    weights=st.lists(st.integers(1, 40), min_size=0, max_size=12),
    m=st.integers(1, 4),
    name=st.sampled_from(["lpt", "list", "round-robin", "largest-differencing", "graph-partition"]),
)
def test_every_balancer_places_every_job_once_on_a_valid_processor(weights, m, name):
    w = np.array(weights, dtype=float)
    initial = [1.0] + [0.0] * (m - 1)
    assignment = BALANCERS.get(name, "balancer")(w, initial)
    assert assignment.shape == (len(weights),)
    assert ((assignment >= 0) & (assignment < m)).all()
    if name in ("lpt", "list", "largest-differencing", "graph-partition") and len(weights):
        # no processor is left idle while another holds two jobs (a sanity bound for greedy
        # and differencing alike): makespan never exceeds total + initial load
        assert makespan(w, assignment, initial) <= w.sum() + 1


def test_lpt_follows_the_thesis_rule():
    # coordinator (processor 0) starts at 1: with one job of weight 5, the worker gets it
    assert lpt(np.array([5.0]), [1.0, 0.0]).tolist() == [1]
    # sorted by weight, each to the least loaded; ties to the lowest-numbered processor
    assert lpt(np.array([2.0, 7.0, 3.0, 3.0]), [1.0, 0.0]).tolist() == [0, 1, 0, 0]


@pytest.mark.parametrize(("name", "expected"), [("lpt", 17.0), ("largest-differencing", 16.0)])
def test_textbook_example_differencing_beats_lpt(name, expected):
    # {8,7,6,5,4} on 2 processors (optimum 15): LPT 17, Karmarkar-Karp differences 8-7, 6-5,
    # 4-1, 3-1 -> spread 2 -> 16
    w = np.array([8.0, 7.0, 6.0, 5.0, 4.0])
    span = makespan(w, BALANCERS.get(name, "balancer")(w, [0.0, 0.0]), [0.0, 0.0])
    assert span == expected


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    players=st.integers(1, 60),
    senders=st.integers(1, 30),
    ticks=st.integers(1, 3),
)
def test_the_interaction_graph_is_the_frames_graph_with_groups(seed, players, senders, ticks):
    from simsrv.strategies.grouping.interaction_graph import interaction_graph

    lists, clients, sent = _random_frame(seed, players, 3, senders, ticks)
    groups = frame_groups(clients, sent, lists.__getitem__)
    graph = interaction_graph(groups)
    expected = nx.Graph()
    for c, t in zip(clients.tolist(), sent.tolist(), strict=True):
        expected.add_node(c)
        indptr, indices = lists[t]
        expected.add_edges_from(
            (c, b) for b in indices[indptr[c] : indptr[c + 1]].tolist() if b != c
        )
    assert set(graph.nodes) == set(expected.nodes)
    assert {frozenset(e) for e in graph.edges} == {frozenset(e) for e in expected.edges}
    components = {frozenset(c) for c in nx.connected_components(graph)}
    by_group: dict[int, set] = {}
    for v, data in graph.nodes(data=True):
        by_group.setdefault(data["group"], set()).add(v)
    assert {frozenset(v) for v in by_group.values()} == components
    assert sum(w for _, _, w in graph.edges(data="weight")) >= graph.number_of_edges()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), senders=st.integers(1, 40), m=st.integers(1, 5))
def test_graph_partition_keeps_groups_whole_and_is_deterministic(seed, senders, m):
    from simsrv.strategies.grouping.graph_partition import graph_partition

    lists, clients, sent = _random_frame(seed, 60, 3, senders, 2)
    groups = frame_groups(clients, sent, lists.__getitem__)
    weights = groups.sizes.astype(float)
    initial = [1.0] + [0.0] * (m - 1)
    first = graph_partition(weights, initial, groups)
    assert first.tolist() == graph_partition(weights, initial, groups).tolist()
    assert first.shape == (groups.count,) and ((first >= 0) & (first < m)).all()
    # a processor per group: no interaction edge joins two processors
    process = dict(zip(groups.entities.tolist(), first[groups.entity_group].tolist(), strict=True))
    for c, t in zip(clients.tolist(), sent.tolist(), strict=True):
        indptr, indices = lists[t]
        assert all(process[b] == process[c] for b in indices[indptr[c] : indptr[c + 1]].tolist())


def test_graph_partition_splits_equal_halves_and_gives_the_heaviest_part_the_idle_processor():
    from simsrv.strategies.grouping.graph_partition import graph_partition

    assert sorted(graph_partition(np.array([6.0, 6.0]), [0.0, 0.0]).tolist()) == [0, 1]
    # four equal groups on two processors: two each
    four = graph_partition(np.array([3.0, 3.0, 3.0, 3.0]), [0.0, 0.0])
    assert sorted(np.bincount(four, minlength=2).tolist()) == [2, 2]
    # the coordinator (processor 0) starts loaded: the heavier part goes to processor 1
    assert graph_partition(np.array([2.0, 9.0]), [1.0, 0.0]).tolist() == [0, 1]
    assert "graph-partition" in BALANCERS.names()


def _heap_greedy(order, weights, initial):
    """Greedy placement with a heap of (load, processor): the least load, ties to the lowest
    processor (the reference the compiled placement must match exactly)."""
    import heapq

    heap = [(float(load), p) for p, load in enumerate(initial)]
    heapq.heapify(heap)
    out = [0] * len(weights)
    for job in order:
        load, p = heapq.heappop(heap)
        out[job] = p
        heapq.heappush(heap, (load + float(weights[job]), p))
    return out


@settings(max_examples=120, deadline=None)
@given(
    weights=st.lists(
        st.one_of(st.integers(1, 6).map(float), st.floats(0.1, 9.0)), min_size=0, max_size=30
    ),
    initial=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.1]), min_size=1, max_size=6),
)
def test_greedy_balancers_and_makespan_match_their_plain_definitions(weights, initial):
    """lpt and list place exactly as a heap of (load, processor) does (many equal loads), and
    makespan is the largest load after adding the weights in job order (np.add.at)."""
    w = np.array(weights, dtype=float)
    order = np.argsort(-w, kind="stable").tolist()
    assert lpt(w, initial).tolist() == _heap_greedy(order, w, initial)
    listed = BALANCERS.get("list", "balancer")(w, initial)
    assert listed.tolist() == _heap_greedy(range(len(w)), w, initial)
    loads = np.array(initial, dtype=float)
    np.add.at(loads, listed, w)
    assert makespan(w, listed, initial) == float(loads.max())


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    players=st.integers(1, 80),
    senders=st.integers(1, 40),
    ticks=st.integers(1, 20),
)
def test_groups_edges_are_the_senders_action_lists_in_packet_order(seed, players, senders, ticks):
    """The graph's edges as positions in ``entities``: the senders' self loops in packet
    order, then each tick's (ascending) packets' lists ``L_a`` in packet order."""
    lists, clients, sent = _random_frame(seed, players, 2, senders, ticks)
    groups = frame_groups(clients, sent, lists.__getitem__)
    source, target = [*clients.tolist()], [*clients.tolist()]
    for t in sorted(set(sent.tolist())):
        for c in clients[sent == t].tolist():
            indptr, indices = lists[t]
            row = indices[indptr[c] : indptr[c + 1]].tolist()
            source += [c] * len(row)
            target += row
    assert groups.entities[groups.source].tolist() == source
    assert groups.entities[groups.target].tolist() == target
    assert groups.edges == len(source) - len(clients)
    assert groups.entities.tolist() == sorted(set(source + target))
