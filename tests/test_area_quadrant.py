"""The area-quadrant strategy [R §3]: queues by areanode node, levels, locks, stage 3.

The cube map is 2048 x 2048: the root splits y at 1024 (node 1 above, node 2 below), the halves
split x at 1024, so the quarters are nodes 3 (x > 1024, y > 1024), 4 (x < 1024, y > 1024),
5 (x > 1024, y < 1024) and 6 (x < 1024, y < 1024), served by threads 0, 1, 2, 3 with 4 threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.metrics.stages import per_thread, stage_time_fraction
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.strategies.area_quadrant import area_depth, request_schedule
from simsrv.world.areanode import AreanodeTree
from tests.strategy_harness import execute, floor, frame_of, make_strategy

QUARTERS = [(1500.0, 1500.0), (500.0, 1500.0), (1500.0, 500.0), (500.0, 500.0)]
HALF_BORDERS = [(1024.0, 1500.0), (1024.0, 500.0)]  # straddle x = 1024 inside nodes 1 and 2
CENTRE = [(1024.0, 1024.0)]


def _requests(trace):
    rows = trace[trace.activity == "request"].copy()
    rows["start_us"] = (rows.start_s * 1e6).round(6)
    rows["end_us"] = (rows.end_s * 1e6).round(6)
    return rows.sort_values(["start_us", "thread"])


def test_area_level_gives_at_least_one_area_per_thread():
    assert [area_depth(t) for t in (1, 2, 3, 4, 5, 8, 16, 17)] == [0, 1, 2, 2, 3, 3, 4, 5]


def test_each_quarters_player_is_processed_by_that_quarters_thread():
    positions = floor(QUARTERS)
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 4}, 4, {"request_per_message": 100}
    )
    end, trace = execute(strategy, frame_of([0, 1, 2, 3]), 4)
    requests = _requests(trace)
    assert end == pytest.approx(100.0)  # the four quarters in parallel
    assert sorted(requests.thread) == ["thread0", "thread1", "thread2", "thread3"]
    assert requests.start_us.tolist() == [0.0] * 4
    # client c stands in quarter node 3 + c, served by thread c
    schedule = request_schedule(np.array([3, 4, 5, 6]), 4, "optimized")
    assert schedule.thread.tolist() == [0, 1, 2, 3] and schedule.step.tolist() == [0] * 4


def test_optimized_runs_quarters_then_halves_in_parallel_then_the_root_alone():
    # 4 quarter players (100 us each), 2 half-border players (50 us), 1 at the centre (30 us)
    positions = floor(QUARTERS + HALF_BORDERS + CENTRE)
    costs = {"request_per_range_entity": 1.0}
    strategy = make_strategy("area-quadrant", positions, {"threads": 4}, 4, costs)
    frame = frame_of(range(7), range_count=[100, 100, 100, 100, 50, 50, 30])
    end, trace = execute(strategy, frame, 4)
    r = _requests(trace)
    assert end == pytest.approx(180.0)
    assert list(zip(r.thread, r.start_us, r.end_us, strict=True)) == [
        ("thread0", 0.0, 100.0),
        ("thread1", 0.0, 100.0),
        ("thread2", 0.0, 100.0),
        ("thread3", 0.0, 100.0),
        ("thread0", 100.0, 150.0),  # node 1 (upper half): level-1 node 0
        ("thread1", 100.0, 150.0),  # node 2 (lower half): level-1 node 1, at the same time
        ("thread0", 150.0, 180.0),  # the root: alone, after every other request
    ]
    assert strategy.frame_record()["boundary_messages"] == 3


def test_basic_runs_every_boundary_player_on_thread_0_after_the_quarters():
    positions = floor(QUARTERS + HALF_BORDERS + CENTRE)
    costs = {"request_per_range_entity": 1.0}
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 4, "stage2": "basic"}, 4, costs
    )
    frame = frame_of(range(7), range_count=[100, 100, 100, 100, 50, 50, 30])
    end, trace = execute(strategy, frame, 4)
    r = _requests(trace)
    assert end == pytest.approx(230.0)  # 100 + 50 + 50 + 30: the boundary queue is serial
    assert r.thread.tolist()[4:] == ["thread0"] * 3
    assert r.start_us.tolist()[4:] == [100.0, 150.0, 200.0]


def test_barriers_cost_every_thread_at_every_level():
    positions = floor(QUARTERS)
    strategy = make_strategy("area-quadrant", positions, {"threads": 4}, 4, {"barrier": 10.0})
    end, trace = execute(strategy, frame_of([0, 1, 2, 3]), 4)
    # sorted, level0, level1, level2, internal, end: 6 barriers of 10 us, all threads together
    assert end == pytest.approx(60.0)
    paid = trace[trace.activity == "barrier"].groupby("thread", observed=True).size()
    assert paid.tolist() == [6, 6, 6, 6]


def test_area_locks_serialise_two_neighbours_across_a_quarter_border():
    # (1000, 500) is linked in quarter 6 (thread 3), (1048, 500) in quarter 5 (thread 2); each
    # one's action range reaches into the other's quarter: both lock areas 5 and 6
    positions = floor([(1000.0, 500.0), (1048.0, 500.0)])
    costs = {"request_per_message": 100.0}
    locked = make_strategy("area-quadrant", positions, {"threads": 4}, 4, costs)
    end, trace = execute(locked, frame_of([0, 1]), 4)
    assert end == pytest.approx(200.0)
    waits = trace[trace.activity == "lock_wait"]
    assert (waits.end_s - waits.start_s).sum() * 1e6 == pytest.approx(100.0)
    unlocked = make_strategy(
        "area-quadrant", positions, {"threads": 4, "locking": "none"}, 4, costs
    )
    end, trace = execute(unlocked, frame_of([0, 1]), 4)
    assert end == pytest.approx(100.0)  # unsafe: both run at once and share entities


def test_a_player_deep_in_its_quarter_takes_only_its_own_area_lock():
    positions = floor(QUARTERS)
    strategy = make_strategy("area-quadrant", positions, {"threads": 4}, 4, {})
    plan = strategy.plan(frame_of([0, 1, 2, 3])).to_plan()
    acquired = [op.lock for t in plan.threads for op in t.ops if type(op).__name__ == "Acquire"]
    assert sorted(acquired) == [("area", 3), ("area", 4), ("area", 5), ("area", 6)]


@pytest.mark.parametrize(
    ("stage3", "thread0_us", "end_waits_us"), [("cyclic", 400.0, 1200.0), ("active", 100.0, 0.0)]
)
def test_cyclic_slots_load_one_thread_and_active_clients_spread(stage3, thread0_us, end_waits_us):
    # clients 0, 4, 8, 12 send: their slots are all thread 0's under the cyclic division
    positions = floor([(500.0 + 10 * i, 500.0) for i in range(13)])
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 4, "stage3": stage3}, 4, {"reply_per_client": 100}
    )
    end, trace = execute(strategy, frame_of([0, 4, 8, 12]), 4)
    assert end == pytest.approx(thread0_us)
    replies = trace[trace.activity == "reply"]
    assert replies[replies.thread == "thread0"].pipe(lambda r: (r.end_s - r.start_s).sum()) * (
        1e6
    ) == pytest.approx(thread0_us)
    waits = trace[trace.activity == "end_barrier_wait"]
    assert (waits.end_s - waits.start_s).sum() * 1e6 == pytest.approx(end_waits_us)


def test_stage_3_only_ends_stage_2_with_its_own_barrier():
    positions = floor(QUARTERS)
    costs = {"request_per_message": 100.0, "reply_info_per_client": 10.0}
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 4, "stage2": "sequential"}, 4, costs
    )
    end, trace = execute(strategy, frame_of([0, 1, 2, 3]), 4)
    assert end == pytest.approx(440.0)  # 4 packets then part 1 (4 x 10 us), all on thread 0
    waits = trace[trace.thread != "thread0"].groupby("activity", observed=True)
    length = waits.apply(lambda w: (w.end_s - w.start_s).sum() * 1e6, include_groups=False)
    assert length["barrier_wait"] == pytest.approx(3 * 400.0)  # waiting through stage 2
    assert length["internal_barrier_wait"] == pytest.approx(3 * 40.0)  # waiting for part 1


def test_part_one_runs_on_thread_0_while_the_others_wait_at_the_internal_barrier():
    positions = floor(QUARTERS)
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 4}, 4, {"reply_info_per_client": 10.0}
    )
    end, trace = execute(strategy, frame_of([0, 1, 2, 3]), 4)
    assert end == pytest.approx(40.0)  # 4 connected clients x 10 us, on thread 0
    waits = trace[trace.activity == "internal_barrier_wait"]
    assert sorted(waits.thread) == ["thread1", "thread2", "thread3"]
    assert (waits.end_s - waits.start_s).sum() * 1e6 == pytest.approx(120.0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    players=st.integers(2, 24),
    threads=st.sampled_from([2, 3, 4, 8]),
    stage2=st.sampled_from(["basic", "optimized"]),
)
def test_no_entity_is_modified_by_two_threads_at_once(seed, players, threads, stage2):
    """Property: requests running at the same time on two threads never share an entity of
    their action ranges (every player inside the range box may be modified)."""
    rng = np.random.default_rng(seed)
    # clustered positions so that ranges overlap often, some near the central cross
    centres = rng.uniform(700, 1350, (players, 2))
    positions = floor(centres + rng.normal(0, 60, (players, 2)))
    senders = rng.permutation(players)[: rng.integers(1, players + 1)]
    costs = {"request_per_range_entity": 1.0, "lock_acquire": 0.5, "barrier": 1.0}
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": threads, "stage2": stage2}, 4, costs
    )
    unique_cost = (np.arange(len(senders)) + 1) * 7  # the duration names the packet
    end, trace = execute(strategy, frame_of(senders, range_count=unique_cost), 4)
    r = _requests(trace)
    assert len(r) == len(senders)  # every packet exactly once
    packet = np.rint((r.end_us - r.start_us).to_numpy() / 7).astype(int) - 1
    assert sorted(packet.tolist()) == list(range(len(senders)))
    half = 128.0
    origin = positions[senders[packet], :2]
    touched = np.all(np.abs(positions[None, :, :2] - origin[:, None]) <= half, axis=2)
    start, stop, thread = r.start_us.to_numpy(), r.end_us.to_numpy(), r.thread.to_numpy()
    for i in range(len(r)):
        for j in range(i + 1, len(r)):
            concurrent = start[i] < stop[j] and start[j] < stop[i]
            if concurrent and thread[i] != thread[j]:
                assert not np.any(touched[i] & touched[j])


def test_more_threads_than_quake_areanodes_use_a_deeper_tree():
    positions = floor([(64.0 * i + 40, 64.0 * (i % 5) + 700) for i in range(30)])
    strategy = make_strategy(
        "area-quadrant", positions, {"threads": 32}, 4, {"request_per_message": 1.0}
    )
    assert strategy.depth == 5 and strategy.tree.depth == 5
    _, trace = execute(strategy, frame_of(range(30)), 4)
    requests = trace[trace.activity == "request"]
    assert len(requests) == 30
    # each player's depth-5 area (node 31 + j) is thread j's: compare with the tree's own answer
    own = strategy.tree.link(positions + [-16, -16, -24], positions + [16, 16, 32])
    at_area = AreanodeTree.node_depth(own) == 5
    expected = {f"thread{n - 31}" for n in own[at_area]}
    assert expected and expected <= set(requests.thread.astype(str))


def test_one_thread_is_exactly_the_sequential_server():
    common = ["players.count=24", "run.duration_s=1", "run.warmup_s=0.5"]
    path = "scenarios/area2004/sequential.toml"
    sequential = run(load_scenario(path, common)).summary
    single = run(
        load_scenario(path, [*common, "server.strategy=area-quadrant", "server.options.threads=1"])
    ).summary
    assert single["frames"] == sequential["frames"]
    assert single["replies_per_s"] == sequential["replies_per_s"]
    assert single["time_breakdown"] == pytest.approx(sequential["time_breakdown"], rel=1e-9)
    assert single["barrier_wait_fraction"] == 0.0 and single["lock_wait_fraction"] == 0.0


def test_stage_fractions_of_a_hand_made_trace():
    import pandas as pd

    trace = pd.DataFrame(
        {
            "thread": ["a", "a", "a", "b", "b"],
            "activity": ["world", "request", "barrier", "end_barrier_wait", "reply"],
            "start_s": [0.0, 1.0, 2.0, 0.0, 3.0],
            "end_s": [1.0, 2.0, 3.0, 3.0, 4.0],
        }
    )
    threads = per_thread(trace, 10.0)
    assert threads == {
        "a": {"barrier": 0.1, "idle": 0.7, "stage1": 0.1, "stage2": 0.1},
        "b": {"end_barrier_wait": 0.3, "idle": 0.6, "stage3": 0.1},
    }
    mean = stage_time_fraction(threads)
    assert mean["intra_frame_wait"] == pytest.approx(0.2)
    assert mean["idle"] == pytest.approx(0.65) and mean["stage3"] == pytest.approx(0.05)


def test_schedule_rejects_nothing_and_puts_every_packet_somewhere():
    own = np.arange(31)
    for stage2 in ("basic", "optimized", "sequential"):
        s = request_schedule(own, 4, stage2)
        assert np.all((s.step >= 0) & (s.step < s.steps))
        assert np.all((s.thread >= 0) & (s.thread < 4))
    # nodes below the quarters belong to their quarter's thread
    s = request_schedule(own, 4, "optimized")
    quarter = AreanodeTree.ancestor(own[3:], 2) - 3
    np.testing.assert_array_equal(s.thread[3:], quarter)
