"""Plans as arrays with spawned threads, joins and run-first waits (the operations of
``bsp-group``): the conversions keep every operation, a machine runs them as the same plan
as objects, and ``bsp-group``'s array plans are well formed and run alike on both engines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bsp_group import _frame, _strategy
from test_compiled_engine import run
from test_machine_properties import plans

from simsrv.machine import Compute, FramePlan, Join, Machine, Spawn, Thread
from simsrv.machine.plan import SPAWNER_CPU, RunFirst
from simsrv.machine.plan_arrays import JOIN, RUN_FIRST, SPAWN, from_plan
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.world.proximity import neighbour_lists


@st.composite
def spawning_plans(draw, cpus: int) -> FramePlan:
    """The machine properties' random plans (spawns, joins, barriers, locks), some with the
    spawn followed by a run-first wait of the coordinator."""
    plan = draw(plans(cpus))
    if plan.threads[-1].spawned and draw(st.booleans()):
        coordinator = plan.threads[0]
        ops = list(coordinator.ops)
        at = ops.index(Spawn("worker")) + 1
        ops.insert(at, RunFirst("worker", draw(st.sampled_from([0.0, 1.0, 2.5]))))
        if Join("worker") in ops:
            ops.remove(Join("worker"))
        threads = (coordinator._replace(ops=tuple(ops)), *plan.threads[1:])
        plan = plan._replace(threads=threads)
    return plan


@st.composite
def scripts(draw):
    cpus = draw(st.integers(1, 3))
    frames = draw(st.lists(spawning_plans(cpus), min_size=1, max_size=3))
    gaps = draw(st.lists(st.sampled_from([0.0, 1.0, 4.0]), min_size=3, max_size=3))
    return cpus, frames, gaps


@settings(max_examples=150, deadline=None)
@given(scripts())
def test_spawning_plans_round_trip_and_run_as_their_objects(script):
    cpus, frames, gaps = script
    arrays = [from_plan(p) for p in frames]
    assert [a.to_plan() for a in arrays] == frames
    assert run(Machine(cpus), arrays, gaps) == run(Machine(cpus), frames, gaps)


def test_schema_rows_of_spawn_join_and_run_first():
    plan = from_plan(
        FramePlan(
            (
                Thread("c", 0, (Spawn("w"), RunFirst("w", 2.5), Spawn("v"), Join("v"))),
                Thread("w", SPAWNER_CPU, (Compute("a", 1.0),), spawned=True),
                Thread("v", 1, (), spawned=True),
            )
        )
    )
    assert plan.kind.tolist() == [SPAWN, RUN_FIRST, SPAWN, JOIN, 0]
    assert plan.arg.tolist() == [1, 1, 2, 2, -1]
    assert plan.cost.tolist() == [0.0, 2.5, 0.0, 0.0, 1.0]
    assert plan.activity.tolist() == [-1, -1, -1, -1, 0]
    assert plan.thread_cpu.tolist() == [0, SPAWNER_CPU, 1]
    assert plan.thread_spawned.tolist() == [False, True, True]
    assert plan.spawns()
    assert from_plan(FramePlan((Thread("c", 0, (Compute("a", 1.0),)),))).thread_spawned is None


def test_a_join_of_a_thread_that_is_not_spawned_runs_in_the_engine():
    """A join of a thread that is not spawned is legal: as arrays or as objects, the machine
    gives the simpy reference's timeline (b ends at 3 us, a resumes: 4 us)."""
    plan = FramePlan(
        (
            Thread("a", 0, (Compute("x", 1.0), Join("b"), Compute("y", 1.0))),
            Thread("b", 1, (Compute("z", 3.0),)),
        )
    )
    arrays = from_plan(plan)
    assert not arrays.spawns()
    assert run(Machine(2), [arrays], [0.0]) == run(Machine(2), [plan], [0.0])
    fast, slow = run(Machine(2), [plan], [0.0]), run(SimpyMachine(2), [plan], [0.0])
    assert fast[0] == slow[0] == [pytest.approx(4e-6)]
    assert sorted(fast[1]) == sorted(slow[1])
    assert (0, 0, "a", "join_wait", 1.0, 3.0) in fast[1]


BSP_COSTS = (
    "frame_overhead",
    "net_recv_per_message",
    "request_per_message",
    "request_per_range_entity",
    "grouping_per_message",
    "grouping_per_edge",
    "schedule_per_group",
    "fork",
    "clone",
    "setaffinity",
    "context_switch",
    "cow_per_page",
    "copy_per_entity",
    "exit_teardown",
    "wait",
    "barrier",
    "reply_per_client",
    "net_send_per_reply",
)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    players=st.integers(1, 20),
    cpus=st.sampled_from([1, 2, 3, 4]),
    spawn=st.sampled_from(["fork", "clone", "pool", "none"]),
    affinity=st.sampled_from(["os-default", "pinned"]),
    reap=st.sampled_from(["wait", "nowait"]),
    lists=st.sampled_from([0.0, 0.275]),
    whole=st.booleans(),
)
def test_bsp_group_array_plans_are_well_formed_and_run_alike_on_both_engines(
    seed, players, cpus, spawn, affinity, reap, lists, whole
):
    """Every option of the process model: rows grouped by thread, each spawned thread
    spawned once by an earlier thread, joins and run-first waits of spawned threads, the
    activities of the plan's table; the object and the simpy engines give the same frame
    ends and trace rows over three frames (the teardowns overlap the next frame or not)."""
    rng = np.random.default_rng(seed)
    neighbours = neighbour_lists(rng.uniform(0, 900, (players, 3)), np.zeros((0, 3)), 256.0)
    values = rng.integers(1, 9, len(BSP_COSTS)) if whole else rng.uniform(0.1, 9, len(BSP_COSTS))
    costs = dict(zip(BSP_COSTS, values.tolist(), strict=True))
    options = {"spawn": spawn, "affinity": affinity, "reap": reap, "action_list_share": lists}
    strategy = _strategy(options, cpus, costs, neighbours, migration_delay_us=2.0)
    frames = []
    for _ in range(3):
        senders = rng.permutation(players)[: rng.integers(1, players + 1)]
        plan = strategy.plan(_frame(senders.tolist(), neighbours, players))
        frames.append(plan)
        assert np.all(np.diff(plan.thread) >= 0)
        spawned = plan.kind == SPAWN
        targets = plan.arg[spawned]
        assert sorted(targets.tolist()) == list(range(1, len(plan.thread_names)))
        assert np.all(plan.thread[spawned] < targets)
        waits = (plan.kind == JOIN) | (plan.kind == RUN_FIRST)
        assert np.all(plan.thread[waits] == 0) and np.all(plan.arg[waits] > 0)
        compute = plan.kind == 0
        assert np.all(plan.activity[compute] >= 0) and np.all(plan.activity[~compute] == -1)
        assert plan.spawns() == (len(plan.thread_names) > 1)
    gaps = rng.choice([0.0, 1.0, 40.0], 3).tolist()
    fast = run(Machine(cpus), frames, gaps)
    assert all(type(end) is float for end in fast[0])
    slow = run(SimpyMachine(cpus, 1, 1.0), frames, gaps)
    assert slow[0] == fast[0]
    assert sorted(slow[1]) == sorted(fast[1])
