"""Each cost rule exists once (:mod:`simsrv.strategies.costs`), and every planner uses it.

For random platforms and random frames, every computation of every strategy's plan costs
exactly (bit for bit) what the shared cost functions give for the counts it covers: the whole
frame (``sequential``, the serial stages of ``area-quadrant``), a thread's packets and replies
(``abdelkhalek``, ``area-quadrant``), one packet (the request and lock costs of both thread
strategies), a process's share (``bsp-group``).  A rule re-typed inside a strategy (another
order of the terms, a parameter read from the wrong place) would give other bits.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine.plan_arrays import ACQUIRE, BARRIER, COMPUTE, PlanArrays
from simsrv.platforms.profile import Costs, load_platform
from simsrv.strategies import bsp_group
from simsrv.strategies import costs as c
from simsrv.workload.frame import FrameWorkload
from simsrv.workload.messages import MESSAGE_DTYPE
from tests.strategy_harness import floor, make_strategy


def random_costs(rng: np.random.Generator) -> dict[str, float]:
    """Every cost of the platform random (fractional, so that rounding tells orders apart),
    but the scan of the entity list, which a strategy folds into ``reply_per_client`` once
    (``tests/test_scanned_entities.py``), so that the plans' replies read the vector drawn."""
    costs = {name: float(rng.uniform(0.0, 300.0)) for name in Costs.model_fields}
    return {**costs, "reply_per_scanned_entity": 0.0}


def random_frame(rng: np.random.Generator, players: int) -> FrameWorkload:
    """A frame of random packets (any clients, repeats allowed, tick 0) and replies to their
    distinct senders, with random commands, action ranges, visible entities and PVS rooms."""
    m = int(rng.integers(0, 3 * players + 1))
    messages = np.zeros(m, MESSAGE_DTYPE)
    messages["client"] = rng.integers(0, players, m)
    messages["commands"] = rng.integers(1, 4, m)
    messages["range_count"] = rng.integers(0, 12, m) * rng.integers(0, 2, m)
    messages["shot"] = rng.integers(0, 2, m)
    replied = np.unique(messages["client"]).astype(np.int32)
    visible = rng.integers(0, 60, len(replied)).astype(np.int32)
    pvs = rng.integers(0, 40, len(replied)).astype(np.int32)
    return FrameWorkload(
        0, 0.0, messages, replied, visible, pvs, 0, bool(rng.integers(0, 2)),
        int(rng.integers(players, 4 * players)), int(messages["commands"].sum()),
        int(messages["range_count"].sum()), int(visible.sum()), int(pvs.sum()),
    )  # fmt: skip


def random_positions(rng: np.random.Generator, players: int) -> np.ndarray:
    """Players on the cube's floor, clustered near the centre so that ranges cross borders."""
    return floor(rng.uniform(600.0, 1450.0, (players, 2)))


def computations(plan, activity: str) -> list[tuple[int, float]]:
    """The plan's computations of ``activity`` as (thread, cost), in plan order (by thread,
    then in each thread's order)."""
    if activity not in plan.activities:
        return []
    mask = (plan.kind == COMPUTE) & (plan.activity == plan.activities.index(activity))
    return list(zip(plan.thread[mask].tolist(), plan.cost[mask].tolist(), strict=True))


def by_thread(expected: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """``expected`` (in emission order) in plan order: by thread, stably."""
    return sorted(expected, key=lambda row: row[0])


def lock_rows(plan) -> list[tuple[int, float, int]]:
    """Each ``lock`` computation as (thread, cost, locks it pays for): the acquisitions that
    follow it on its thread before the next lock computation or barrier."""
    lock = plan.activities.index("lock")
    rows, current = [], None
    for thread, kind, cost, activity in zip(
        plan.thread.tolist(), plan.kind.tolist(), plan.cost.tolist(), plan.activity.tolist(),
        strict=True,
    ):  # fmt: skip
        if current is not None and (thread != current[0] or kind == BARRIER):
            rows.append(tuple(current))
            current = None
        if kind == COMPUTE and activity == lock:
            if current is not None:
                rows.append(tuple(current))
            current = [thread, cost, 0]
        elif kind == ACQUIRE and current is not None:
            current[2] += 1
    if current is not None:
        rows.append(tuple(current))
    return rows


def per_thread_replies(frame: FrameWorkload, thread_of_reply: np.ndarray, threads: int):
    """Per thread: replies, visible entities and PVS rooms it answers (summed in reply order,
    as floats, as the strategies sum them)."""
    replies = [0] * threads
    visible, pvs = [0.0] * threads, [0.0] * threads
    for j, t in enumerate(thread_of_reply.tolist()):
        replies[t] += 1
        visible[t] += float(frame.reply_visible[j])
        pvs[t] += float(frame.reply_pvs_rooms[j])
    return replies, visible, pvs


def test_the_cost_vector_carries_every_cost_of_the_platform_by_name():
    costs = load_platform("abdelkhalek2004-xeon-ht").costs
    k = c.cost_vector(costs)
    assert k.dtype.names == tuple(Costs.model_fields) and k.shape == (1,)
    for name in Costs.model_fields:
        assert k[name][0] == getattr(costs, name)
    assert not k.flags.writeable


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_rules_are_the_model_equations_in_their_order(seed):
    """The compiled rules compute docs/model.md's equations term by term, left to right (so
    they give the bits the Python arithmetic of these formulas gives)."""
    rng = np.random.default_rng(seed)
    p = random_costs(rng)
    k = c.cost_vector(Costs(**p))
    e, m, n, r, v, rooms, locks, nodes, depth = (int(x) for x in rng.integers(0, 500, 9))
    cmds = int(rng.integers(0, 3 * m + 1))
    assert c.world_us(k, e) == p["world_base"] + p["world_per_entity"] * e
    assert c.net_recv_us(k, m) == p["net_recv_per_message"] * m
    assert c.request_us(k, m, cmds, r) == (
        p["request_per_message"] * m
        + p["request_per_command"] * cmds
        + p["request_per_range_entity"] * r
    )
    assert c.reply_info_us(k, n) == p["reply_info_per_client"] * n
    assert c.reply_us(k, r, v, rooms) == (
        p["reply_per_client"] * r
        + p["reply_per_visible_entity"] * v
        + p["reply_per_pvs_room"] * rooms
    )
    assert c.net_send_us(k, r) == p["net_send_per_reply"] * r
    idle = float(rng.random())
    assert c.send_wake_us(k, r, idle) == (p["net_send_wake"] * idle if r else 0.0)
    assert c.lock_us(k, locks, nodes) == p["lock_acquire"] * locks + p["lock_per_node"] * nodes
    assert c.sort_us(k, m, depth) == (p["queue_per_message"] + p["lock_per_node"] * depth) * m
    assert c.resume_us(k) == p["context_switch"] + p["thread_cache_refill"]
    assert c.grouping_us(k, m, r) == p["grouping_per_message"] * m + p["grouping_per_edge"] * r
    assert c.schedule_us(k, n) == p["schedule_per_group"] * n
    assert c.copy_us(k, e) == p["copy_per_entity"] * e
    assert c.cow_us(k, 2.5 * n) == p["cow_per_page"] * (2.5 * n)
    physics = bool(rng.integers(0, 2))
    assert c.frame_costs(k, physics, e, m, cmds, r, n, r, v, rooms, idle) == (
        p["frame_overhead"],
        c.world_us(k, e) if physics else 0.0,
        c.net_recv_us(k, m),
        c.request_us(k, m, cmds, r),
        c.reply_info_us(k, n),
        c.reply_us(k, r, v, rooms),
        c.net_send_us(k, r) + c.send_wake_us(k, r, idle),
    )


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 20))
def test_sequential_charges_the_frame_costs(seed, players):
    rng = np.random.default_rng(seed)
    strategy = make_strategy("sequential", random_positions(rng, players), {}, 1, random_costs(rng))
    k, frame = strategy.cost_vector, random_frame(rng, players)
    (thread,) = strategy.plan(frame).threads
    m, replies = len(frame.messages), len(frame.reply_clients)
    assert [(op.activity, op.cost_us) for op in thread.ops] == [
        ("frame", k["frame_overhead"][0]),
        ("world", c.world_us(k, frame.entities) if frame.physics else 0.0),
        ("net_recv", c.net_recv_us(k, m)),
        ("request", c.request_us(k, m, frame.commands, frame.range_entities)),
        ("reply_info", c.reply_info_us(k, players)),
        ("reply", c.reply_us(k, replies, frame.visible_entities, frame.pvs_rooms)),
        ("net_send", c.net_send_us(k, replies)),
    ]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    players=st.integers(1, 20),
    threads=st.sampled_from([1, 2, 3, 4, "per-client"]),
    cpus=st.sampled_from([1, 2, 4]),
    locking=st.sampled_from(["none", "region", "region-optimized"]),
    lock_scope=st.sampled_from(["leaf-to-root", "two-nodes"]),
    client_locks=st.booleans(),
    gamestate_share=st.sampled_from([0.0, 0.25, 0.6]),
)
def test_abdelkhalek_charges_each_thread_and_packet_the_shared_costs(
    seed, players, threads, cpus, locking, lock_scope, client_locks, gamestate_share
):
    rng = np.random.default_rng(seed)
    positions = random_positions(rng, players)
    options = {
        "threads": threads,
        "locking": locking,
        "lock_scope": lock_scope,
        "client_locks": client_locks,
        "gamestate_share": gamestate_share,
    }
    strategy = make_strategy("abdelkhalek", positions, options, cpus, random_costs(rng))
    k, frame = strategy.cost_vector, random_frame(rng, players)
    plan = strategy.plan(frame)
    t_count = strategy.threads
    messages = frame.messages
    clients = messages["client"].astype(np.int64)
    master = int(clients[0] % t_count) if len(clients) else 0

    assert computations(plan, "frame") == [(master, k["frame_overhead"][0])]
    world = c.world_us(k, frame.entities) if frame.physics else 0.0
    assert computations(plan, "world") == [(master, world)]
    assert computations(plan, "reply_info") == [(master, c.reply_info_us(k, players))]
    received = np.bincount(clients % t_count, minlength=t_count)
    assert computations(plan, "net_recv") == [
        (t, c.net_recv_us(k, int(n))) for t, n in enumerate(received) if n
    ]
    requests = []
    share = strategy.share
    for client, commands, range_count in zip(
        clients.tolist(), messages["commands"].tolist(), messages["range_count"].tolist(),
        strict=True,
    ):  # fmt: skip
        request = c.request_us(k, 1, commands, range_count)
        t = client % t_count
        if share > 0.0:
            requests += [(t, request - request * share), (t, request * share)]
        else:
            requests.append((t, request))
    assert computations(plan, "request") == by_thread(requests)
    if locking != "none":  # each packet's locks: the walk and the locks it takes
        start, scope, walked, own_start, own, own_walked = strategy._player_locks(positions)
        expected = []
        for client, range_count, shot in zip(
            clients.tolist(), messages["range_count"].tolist(), messages["shot"].tolist(),
            strict=True,
        ):  # fmt: skip
            mover_only = locking == "region-optimized" and range_count == 0 and not shot
            nodes = (own_walked if mover_only else walked)[client]
            expected.append((client % t_count, int(nodes)))
        rows, expected = lock_rows(plan), by_thread(expected)
        assert [t for t, _, _ in rows] == [t for t, _ in expected]
        for (_, cost, locks), (_, nodes) in zip(rows, expected, strict=True):
            assert cost == c.lock_us(k, locks, nodes)
    else:
        assert computations(plan, "lock") == []
    replies, visible, pvs = per_thread_replies(
        frame, frame.reply_clients.astype(np.int64) % t_count, t_count
    )
    assert computations(plan, "reply") == [
        (t, c.reply_us(k, replies[t], visible[t], pvs[t])) for t in range(t_count) if replies[t]
    ]
    assert computations(plan, "net_send") == [
        (t, c.net_send_us(k, replies[t])) for t in range(t_count) if replies[t]
    ]
    barriers = computations(plan, "barrier")
    assert len(barriers) == 3 * t_count
    assert {cost for _, cost in barriers} == {k["barrier"][0]}
    assert {cost for _, cost in computations(plan, "context_switch")} <= {c.resume_us(k)}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    players=st.integers(1, 20),
    threads=st.sampled_from([1, 2, 3, 4, 8]),
    cpus=st.sampled_from([1, 2, 4]),
    stage2=st.sampled_from(["basic", "optimized", "sequential"]),
    stage3=st.sampled_from(["cyclic", "active", "sequential"]),
    locking=st.sampled_from(["area", "none"]),
)
def test_area_quadrant_charges_each_stage_thread_and_packet_the_shared_costs(
    seed, players, threads, cpus, stage2, stage3, locking
):
    rng = np.random.default_rng(seed)
    options = {"threads": threads, "stage2": stage2, "stage3": stage3, "locking": locking}
    strategy = make_strategy(
        "area-quadrant", random_positions(rng, players), options, cpus, random_costs(rng)
    )
    k, frame = strategy.cost_vector, random_frame(rng, players)
    plan = strategy.plan(frame)
    messages = frame.messages
    m, n = len(messages), len(frame.reply_clients)

    assert computations(plan, "frame") == [(0, k["frame_overhead"][0])]
    world = c.world_us(k, frame.entities) if frame.physics else 0.0
    assert computations(plan, "world") == [(0, world)]
    assert computations(plan, "net_recv") == [(0, c.net_recv_us(k, m))]
    assert computations(plan, "reply_info") == [(0, c.reply_info_us(k, players))]
    requests = sorted(cost for _, cost in computations(plan, "request"))
    if strategy.stage2 == "sequential":
        assert requests == [c.request_us(k, m, frame.commands, frame.range_entities)]
        assert computations(plan, "sort") == [] and computations(plan, "lock") == []
    else:
        assert computations(plan, "sort") == [(0, c.sort_us(k, m, strategy.depth))]
        assert requests == sorted(
            c.request_us(k, 1, commands, range_count)
            for commands, range_count in zip(
                messages["commands"].tolist(), messages["range_count"].tolist(), strict=True
            )
        )
        rows = lock_rows(plan)
        assert len(rows) == (m if strategy.locking else 0)
        for _, cost, locks in rows:  # the areas the packet locks, found at the area level
            assert locks >= 1 and cost == c.lock_us(k, locks, strategy.depth)
    if strategy.stage3 == "sequential":
        assert computations(plan, "reply") == [
            (0, c.reply_us(k, n, frame.visible_entities, frame.pvs_rooms))
        ]
        assert computations(plan, "net_send") == [(0, c.net_send_us(k, n))]
    else:
        t_count = strategy.threads
        if strategy.stage3 == "active":  # dealt round-robin in slot order
            thread_of = np.empty(n, np.int64)
            thread_of[np.argsort(frame.reply_clients, kind="mergesort")] = np.arange(n) % t_count
        else:
            thread_of = frame.reply_clients.astype(np.int64) % t_count
        replies, visible, pvs = per_thread_replies(frame, thread_of, t_count)
        assert computations(plan, "reply") == [
            (t, c.reply_us(k, replies[t], visible[t], pvs[t])) for t in range(t_count) if replies[t]
        ]
        assert computations(plan, "net_send") == [
            (t, c.net_send_us(k, replies[t])) for t in range(t_count) if replies[t]
        ]
    assert {cost for _, cost in computations(plan, "barrier")} <= {k["barrier"][0]}
    assert {cost for _, cost in computations(plan, "context_switch")} <= {c.resume_us(k)}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    workers=st.integers(0, 4),
    pool=st.booleans(),
    pinned=st.booleans(),
    reap_wait=st.booleans(),
    action_list_share=st.sampled_from([0.0, 0.275, 0.5]),
    fork=st.booleans(),
)
def test_bsp_group_charges_the_coordinator_and_each_process_the_shared_costs(
    seed, workers, pool, pinned, reap_wait, action_list_share, fork
):
    """bsp-group's compiled planner, from a frame's counts and each process's share."""
    rng = np.random.default_rng(seed)
    k = c.cost_vector(Costs(**random_costs(rng)))
    processes = 1 + workers
    physics = bool(rng.integers(0, 2))
    entities, messages, commands, ranges, connected, edges, groups = (
        int(x) for x in rng.integers(0, 400, 7)
    )
    shares = [rng.integers(0, 100, processes).astype(np.float64) for _ in range(7)]
    pages = rng.integers(0, 100, processes) * 4.5 + 2  # cow_base_pages + per client
    flags = np.array(
        [workers, pool, pinned, reap_wait and not pool, action_list_share != 0, fork], np.int64
    )
    delay = float(rng.uniform(0, 50))
    thread, kind, cost, arg, activity = bsp_group._plan(
        flags, k, physics, entities, messages, commands, ranges, connected, edges, groups,
        action_list_share, delay, 0.0, *shares, pages,
    )  # fmt: skip
    plan = PlanArrays(
        thread, kind, cost, arg, activity, np.zeros(0, np.int64), (), bsp_group.ACTIVITIES, (),
        np.zeros(0, np.int64), (),
    )  # fmt: skip
    p_messages, p_commands, p_ranges, p_replies, p_visible, p_pvs, p_entities = shares
    step = 1 if pool else 2
    worker_thread = [0, *(step * w - step + 1 for w in range(1, workers + 1))]
    world = c.world_us(k, entities) if physics else 0.0
    assert computations(plan, "frame") == [(0, k["frame_overhead"][0])]
    assert computations(plan, "world") == [(0, world)]
    assert computations(plan, "net_recv") == [(0, c.net_recv_us(k, messages))]
    lists = action_list_share * c.request_us(k, messages, commands, ranges)
    assert computations(plan, "action_lists") == ([(0, lists)] if action_list_share else [])
    assert computations(plan, "grouping") == [(0, c.grouping_us(k, messages, edges))]
    assert computations(plan, "schedule") == [(0, c.schedule_us(k, groups))]
    assert computations(plan, "reply_info") == [(0, c.reply_info_us(k, connected))]
    create = k["context_switch" if pool else "fork" if fork else "clone"][0]
    spawn = [create, k["setaffinity"][0]] if pinned and not pool else [create]
    assert computations(plan, "spawn") == [(0, x) for x in spawn * workers]
    rest = 1.0 - action_list_share
    assert computations(plan, "request") == by_thread(
        [
            (worker_thread[p], rest * c.request_us(k, p_messages[p], p_commands[p], p_ranges[p]))
            for p in range(processes)
        ]
    )
    assert computations(plan, "reply") == by_thread(
        [
            (worker_thread[p], c.reply_us(k, p_replies[p], p_visible[p], p_pvs[p]))
            for p in range(processes)
        ]
    )
    assert computations(plan, "net_send") == by_thread(
        [(worker_thread[p], c.net_send_us(k, p_replies[p])) for p in range(processes)]
    )
    first = "copy_in" if pool else "copy_on_write"
    assert computations(plan, first) == [
        (worker_thread[w], c.copy_us(k, entities) if pool else c.cow_us(k, pages[w]))
        for w in range(1, processes)
    ]
    assert computations(plan, "copy_out") == [
        (worker_thread[w], c.copy_us(k, p_entities[w])) for w in range(1, processes)
    ]
    wait = k["barrier" if pool else "wait"][0]
    assert computations(plan, "wait") == [(0, wait)] * workers
    assert computations(plan, "copy_back") == [(0, c.copy_us(k, p_entities[1:].sum()))]
    teardown = [] if pool else [(t + 1, k["exit_teardown"][0]) for t in worker_thread[1:]]
    assert computations(plan, "teardown") == teardown
