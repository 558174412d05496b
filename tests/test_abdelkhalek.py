"""AB04's multithreaded server: areanode tree, region locks, barriers, waiting metrics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simsrv.machine.plan import Acquire, Release
from simsrv.metrics.waiting import waiting_fractions
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.platforms.profile import load_platform
from simsrv.strategies import STRATEGIES, StrategyContext
from simsrv.strategies.region_locks import path_locks, path_nodes
from simsrv.world.areanode import AreanodeTree
from tests.strategy_harness import FakeWorld, execute, floor, frame_of, make_strategy

TREE = AreanodeTree.build(np.zeros(3), np.array([2048.0, 1024.0, 512.0]))


def test_tree_has_quakeworlds_31_nodes_split_on_the_longer_side():
    assert TREE.nodes == 31
    assert TREE.axis[0] == 0 and TREE.dist[0] == 1024.0  # x is longer: split x at the middle
    assert TREE.axis[1] == 1 and TREE.dist[1] == 512.0  # then 1024 x 1024: y (x not longer)
    leaves = np.arange(15, 31)
    area = np.prod(TREE.hi[leaves] - TREE.lo[leaves], axis=1)
    assert np.allclose(area, 2048 * 1024 / 16)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31), size=st.floats(1.0, 900.0))
def test_link_is_the_deepest_node_containing_the_whole_box(seed, size):
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0, 1, (200, 2)) * (np.array([2048.0, 1024.0]) - size)
    hi = lo + rng.uniform(0.5, size, (200, 2))
    got = TREE.link(lo, hi)
    inside = np.all((TREE.lo[None] < lo[:, None]) & (hi[:, None] < TREE.hi[None]), axis=2)
    inside[:, 0] = True  # the root holds whatever straddles its split
    depth = AreanodeTree.node_depth(np.arange(TREE.nodes))
    deepest = np.where(inside, depth[None], -1).argmax(axis=1)
    np.testing.assert_array_equal(got, deepest)
    # walking up from the linked node reaches a node containing the box without moving
    node, steps = TREE.covering(got, lo, hi)
    assert np.all(steps == 0) and np.array_equal(node, got)


def _plan(positions, clients, options, cpus, costs):
    # the areanode locks alone unless a test asks for the game-state lock
    options = {"gamestate_share": 0.0, **options}
    strategy = make_strategy("abdelkhalek", positions, options, cpus, costs)
    return execute(strategy, frame_of(clients), cpus)


_floor = floor


def test_two_threads_on_one_leaf_serialise_exactly():
    # clients 0 and 1 (threads 0 and 1) stand together in the middle of one quarter of the cube:
    # both lock that quarter's covering node; 3 packets each of 100 us
    positions = _floor([(500.0, 500.0), (520.0, 500.0)])
    end, trace = _plan(
        positions, [0, 1, 0, 1, 0, 1], {"threads": 2}, 2, {"request_per_message": 100}
    )
    assert end == pytest.approx(600.0)  # fully serial: 6 x 100 us
    waits = trace[trace.activity == "lock_wait"]
    # the lock alternates: each packet but the first waits for the other thread's 100 us
    assert waits.end_s.sub(waits.start_s).sum() * 1e6 == pytest.approx(500.0)
    requests = trace[trace.activity == "request"].sort_values("start_s")
    starts = (requests.start_s * 1e6).round(6).tolist()
    assert starts == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    assert requests.thread.tolist() == ["thread0", "thread1"] * 3  # FIFO hand-over


def test_threads_in_disjoint_regions_never_wait_for_each_other():
    positions = _floor([(300.0, 300.0), (1700.0, 1700.0)])  # opposite corners of the cube
    end, trace = _plan(
        positions, [0, 1, 0, 1, 0, 1], {"threads": 2}, 2, {"request_per_message": 100}
    )
    assert end == pytest.approx(300.0)
    assert "lock_wait" not in set(trace.activity)


def test_one_thread_never_waits_for_a_lock():
    positions = _floor([(500.0, 500.0), (520.0, 500.0)])
    _, trace = _plan(positions, [0, 1, 0, 1], {"threads": 1}, 1, {"request_per_message": 100})
    assert "lock_wait" not in set(trace.activity)


def test_region_optimized_locks_only_the_movers_node_when_it_is_alone():
    positions = _floor([(500.0, 500.0), (520.0, 500.0)])
    scenario_clients = [0, 1]
    # |L_a| = 1 for both (they see each other): optimisation does not apply, still serial
    end, _ = _plan(
        positions,
        scenario_clients,
        {"threads": 2, "locking": "region-optimized"},
        2,
        {"request_per_message": 100},
    )
    assert end == pytest.approx(200.0)
    end, _ = _plan(
        positions,
        scenario_clients,
        {"threads": 2, "locking": "none"},
        2,
        {"request_per_message": 100},
    )
    assert end == pytest.approx(100.0)


def test_waiting_fractions_on_a_hand_made_trace():
    import pandas as pd

    trace = pd.DataFrame(
        {
            "activity": ["request", "lock_wait", "request", "barrier_wait"],
            "start_s": [0.0, 0.0, 1.0, 3.0],
            "end_s": [4.0, 1.0, 3.0, 4.0],
        }
    )
    got = waiting_fractions(trace, 0.0, 4.0)
    assert got == {
        "lock_wait_fraction": 1 / 8,
        "barrier_wait_fraction": 1 / 8,
        "any_waiting_fraction": 0.5,
    }


@pytest.mark.parametrize("locking", ["region", "region-optimized", "none"])
def test_every_packet_is_processed_exactly_once(locking):
    scenario = load_scenario(
        None,
        [
            "server.strategy=abdelkhalek",
            f'server.options.locking="{locking}"',
            "machine.cpus=4",
            "players.count=64",
            "run.duration_s=1",
            "run.warmup_s=0",
        ],
    )
    result = run(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    frames, trace = result.frames, result.trace
    # a packet's execution is one interval, or two around the game-state lock when locking
    per_packet = 1 if locking == "none" else 2
    assert int((trace.activity == "request").sum()) == per_packet * int(frames.messages.sum())
    assert result.summary["dropped_fraction"] == 0.0
    if locking == "none":
        assert result.summary["lock_wait_fraction"] == 0.0


def test_threads_spread_over_cores_and_extra_threads_pay_switches():
    positions = _floor([(500.0, 500.0), (1500.0, 1500.0)])
    scenario = load_scenario(
        None, ["server.strategy=abdelkhalek", "machine.cpus=8", "players.count=2"]
    )
    plat = load_platform("cordeiro2007-xeon").model_copy(update={"smt_per_core": 2})
    kind = STRATEGIES.get("abdelkhalek", "server.strategy")
    four = kind.create(
        kind.options(threads=4),
        StrategyContext(scenario, plat, 8, FakeWorld(positions), np.random.default_rng(0)),
    )
    assert four.cpu_of.tolist() == [0, 2, 4, 6]  # one per physical core first
    assert not any(four.resume_us)
    per_client = kind.create(
        kind.options(threads="per-client"),
        StrategyContext(scenario, plat, 1, FakeWorld(positions), np.random.default_rng(0)),
    )
    k = plat.costs
    assert per_client.threads == 2
    assert per_client.resume_us.tolist() == [k.context_switch + k.thread_cache_refill] * 2


def test_capacity_cli_reports_the_last_count_that_kept_up(capsys):
    import json

    from simsrv.cli.main import main

    args = ["capacity", "--start", "8", "--step", "8", "--max", "200", "--json"]
    heavy = ["--set", "machine.costs.request_per_message=3000", "--set", "run.duration_s=1"]
    assert main([*args, *heavy]) == 0
    out = json.loads(capsys.readouterr().out)
    points = out["points"]
    # 3 ms per packet at 31.25 packets/s per client: one CPU keeps up with ~10 clients
    assert out["capacity_clients"] == 8 and out["complete"]
    assert [p["met"] for p in points] == [True, False]
    assert points[1]["replies_per_s"] < 0.8 * points[1]["offered_per_s"]
    with pytest.raises(SystemExit) as refused:  # refused by the parser (one line, exit 2)
        main(["capacity", "--step", "0"])
    assert refused.value.code == 2
    assert "--step: must be a whole number >= 1, got 0" in capsys.readouterr().err


# -- the sources' mechanisms --------------------------------------------------------


def _expected_path(tree, origin, half):
    """By brute force: the nodes containing the origin, deepest first, up to and including the
    first whose region contains the whole range box (the root at the latest)."""
    depth = AreanodeTree.node_depth(np.arange(tree.nodes))
    holding = [
        n
        for n in np.argsort(-depth, kind="stable")
        if np.all(tree.lo[n] <= origin[:2]) and np.all(origin[:2] <= tree.hi[n])
    ]
    path = []
    for n in holding:
        if path and (path[-1] - 1) // 2 != n:
            continue  # another leaf holding a point on a split plane: not on this path
        path.append(int(n))
        if np.all(tree.lo[n] <= origin[:2] - half) and np.all(origin[:2] + half <= tree.hi[n]):
            break
    return tuple(path)


@settings(max_examples=60, deadline=None)
@given(
    extent=st.tuples(st.floats(600.0, 4096.0), st.floats(600.0, 4096.0)),
    where=st.tuples(st.floats(0.05, 0.95), st.floats(0.05, 0.95)),
    half=st.sampled_from([8.0, 64.0, 128.0, 300.0]),
)
def test_a_requests_lock_set_is_the_path_from_its_leaf_up_to_the_node_covering_its_region(
    extent, where, half
):
    tree = AreanodeTree.build(np.zeros(3), np.array([*extent, 512.0]))
    origin = np.array([where[0] * extent[0], where[1] * extent[1], 24.0])
    inner = tree.axis >= 0
    assume(not np.any(origin[tree.axis[inner]] == tree.dist[inner]))  # not on a split plane
    leaf, top = path_locks(
        tree, origin[None], origin[None] - [half, half, 0], origin[None] + [half, half, 0]
    )
    got = path_nodes(int(leaf[0]), int(top[0]))
    assert got == _expected_path(tree, origin, half)
    assert AreanodeTree.node_depth(np.array([got[0]]))[0] == tree.depth  # starts at a leaf


def test_the_strategy_takes_exactly_the_leaf_to_root_path_and_the_walk_costs_per_node():
    # two players of the cube: one well inside a leaf, one whose range crosses split planes
    strategy = make_strategy(
        "abdelkhalek",
        _floor([(700.0, 700.0), (1000.0, 700.0)]),
        {"threads": 2, "client_locks": False, "gamestate_share": 0.0},
        2,
        {"lock_acquire": 1.0, "lock_per_node": 10.0},
    )
    plan = strategy.plan(frame_of([0, 1])).to_plan()
    tree = strategy.tree
    for client, thread in enumerate(plan.threads):
        origin = np.array([[700.0, 700.0, 24.0], [1000.0, 700.0, 24.0]])[client]
        expected = _expected_path(tree, origin, 128.0)
        locks = tuple(op.lock[1] for op in thread.ops if type(op) is Acquire)
        assert locks == expected
        releases = tuple(op.lock[1] for op in thread.ops if type(op) is Release)
        assert releases == expected[::-1]
        lock_cost = next(op.cost_us for op in thread.ops if getattr(op, "activity", "") == "lock")
        walked = tree.depth + len(expected) - 1  # down to the leaf, then up
        assert lock_cost == pytest.approx(1.0 * len(expected) + 10.0 * walked)
    inside, crossing = (
        _expected_path(tree, np.array([x, 700.0, 24.0]), 128.0) for x in (700.0, 1000.0)
    )
    assert len(crossing) > len(inside) >= 1


def test_two_nodes_scope_locks_at_most_the_linked_and_covering_nodes():
    strategy = make_strategy(
        "abdelkhalek",
        _floor([(700.0, 700.0)]),
        {"threads": 1, "client_locks": False, "gamestate_share": 0.0, "lock_scope": "two-nodes"},
        1,
        {},
    )
    ops = strategy.plan(frame_of([0])).to_plan().threads[0].ops
    assert 1 <= sum(type(op) is Acquire for op in ops) <= 2


@settings(max_examples=25, deadline=None)
@given(share=st.floats(0.0, 1.0), threads=st.integers(1, 6), cost=st.floats(10.0, 1000.0))
def test_the_game_state_lock_serialises_exactly_its_share_of_the_request_work(share, threads, cost):
    # one packet per thread, players in far-apart corners (no areanode lock in common): only
    # the game-state lock can make a thread wait.  The first share*cost parts run one after the
    # other: the frame lasts (1 - share) * cost + threads * share * cost.
    # centres of six leaves (512 x 512 on the 2048 cube): each range stays in its leaf
    corners = [(256.0, 256.0), (1792.0, 1792.0), (256.0, 1792.0), (1792.0, 256.0)]
    corners += [(768.0, 256.0), (256.0, 768.0)]
    positions = _floor(corners[:threads])
    strategy = make_strategy(
        "abdelkhalek",
        positions,
        {"threads": threads, "gamestate_share": share},
        2 * threads,  # one thread per physical core whatever the platform's SMT
        {"request_per_message": cost},
    )
    assert len(set(strategy.cpu_of.tolist())) == threads
    end, trace = execute(strategy, frame_of(list(range(threads))), 2 * threads)
    assert end == pytest.approx((1 - share) * cost + threads * share * cost, rel=1e-9)
    waits = trace[trace.activity == "lock_wait"]
    waited = float((waits.end_s - waits.start_s).sum()) * 1e6
    # thread k waits k shares: share * cost * (0 + 1 + ... + threads - 1)
    assert waited == pytest.approx(share * cost * threads * (threads - 1) / 2, abs=1e-6)
    work = trace[trace.activity == "request"]
    assert float((work.end_s - work.start_s).sum()) * 1e6 == pytest.approx(threads * cost)


def test_client_records_are_locked_per_packet():
    strategy = make_strategy(
        "abdelkhalek", _floor([(300.0, 300.0)]), {"threads": 1, "gamestate_share": 0.0}, 1, {}
    )
    ops = strategy.plan(frame_of([0, 0])).to_plan().threads[0].ops
    # (named tuples compare as tuples: check the type too)
    assert sum(type(op) is Acquire and op.lock == ("client", 0) for op in ops) == 2
    assert sum(type(op) is Release and op.lock == ("client", 0) for op in ops) == 2


def test_thread_stacks_memory_grows_with_the_threads():
    scenario = load_scenario(
        "scenarios/abdelkhalek2004/thread-per-client.toml",
        ["players.count=16", "run.duration_s=0.2", "run.warmup_s=0"],
    )
    summary = run(scenario).summary
    assert summary["memory_bytes"] == 16 * 4096
    assert summary["memory_reserved_bytes"] == 16 * 2 * 1024 * 1024
    eight = run(
        load_scenario(
            "scenarios/abdelkhalek2004/threads8-region.toml",
            ["players.count=16", "run.duration_s=0.2", "run.warmup_s=0"],
        )
    ).summary
    assert eight["memory_bytes"] == 8 * 4096
