"""The compiled engine on plans as arrays gives what the object engine gives, bit for bit: the
same trace rows in the same order, the same frame ends, charged CPU time and critical
sections, on random plans with many exact ties (and frames it refuses run as objects)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategy_harness import floor, frame_of, make_strategy
from test_machine_properties import segment

from simsrv.machine import BarrierWait, Compute, FramePlan, Machine, Release, Thread
from simsrv.machine.plan_arrays import from_plan
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.scenario.load import load_scenario
from simsrv.simulation import simulate


@st.composite
def array_plans(draw, cpus: int) -> FramePlan:
    """Threads passing the same barriers (sometimes not: then nothing is phased), on distinct
    CPUs (sometimes shared: the compiled engine refuses those), locks between barriers."""
    threads = draw(st.integers(1, cpus))
    barriers = draw(st.integers(0, 3))
    shared = draw(st.integers(0, 9)) == 0
    placement = draw(st.permutations(range(cpus)))[:threads]
    closed = draw(st.booleans())  # a last barrier: no thread outlives the coordinator
    out = []
    for t in range(threads):
        ops: list = []
        for b in range(barriers):
            ops += draw(segment())
            if t == 0 or draw(st.integers(0, 19)):
                ops.append(BarrierWait(f"b{b}", draw(st.sampled_from(["barrier_wait", "x_wait"]))))
        ops += draw(segment())
        if closed:
            ops.append(BarrierWait("end"))
        cpu = draw(st.integers(0, cpus - 1)) if shared else placement[t]
        out.append(Thread(f"t{t}", cpu, tuple(ops)))
    names = [f"b{b}" for b in range(barriers)] + (["end"] if closed else [])
    return FramePlan(tuple(out), dict.fromkeys(names, threads))


@st.composite
def scripts(draw):
    cpus = draw(st.integers(1, 4))
    frames = draw(st.lists(array_plans(cpus), min_size=1, max_size=6))
    gaps = draw(st.lists(st.sampled_from([0.0, 1.0, 4.0]), min_size=6, max_size=6))
    return cpus, frames, gaps


def run(machine, frames: list, gaps: list[float]):
    """Execute each frame after the previous one's end plus a gap; what the machine recorded."""
    now, ends = 0.0, []
    for index, (plan, gap) in enumerate(zip(frames, gaps, strict=False)):
        try:
            now = machine.execute(plan, index, now + gap * 1e-6)
        except Exception as error:  # noqa: BLE001 (both engines must raise the same)
            ends.append(type(error).__name__)
            break
        ends.append(now)
    machine.finish()
    return ends, machine.trace.rows, machine.charged_us, sorted(machine.lock_holds, key=repr)


def _valid(frames: list) -> bool:
    """Plans whose barriers all threads pass (else they deadlock, in both engines)."""
    return all(
        all(sum(type(o) is BarrierWait for o in t.ops) == len(p.barriers) for t in p.threads)
        for p in frames
    )


@settings(max_examples=400, deadline=None)
@given(scripts())
def test_compiled_engine_gives_the_object_engines_trace_bit_for_bit(script):
    cpus, frames, gaps = script
    objects = run(Machine(cpus), frames, gaps)
    arrays = run(Machine(cpus), [from_plan(p) for p in frames], gaps)
    assert arrays == objects


@settings(max_examples=60, deadline=None)
@given(scripts())
def test_plans_as_arrays_on_the_reference_engine(script):
    """The simpy engine takes arrays too (converted to objects): same trace as the compiled
    engine, as a set of rows (the two engines record in different orders)."""
    cpus, frames, gaps = script
    if not _valid(frames):
        return
    arrays = [from_plan(p) for p in frames]
    fast = run(Machine(cpus), arrays, gaps)
    slow = run(SimpyMachine(cpus, 1, 1.0), arrays, gaps)
    assert fast[0] == slow[0]
    assert sorted(fast[1]) == sorted(slow[1])


@given(st.data())
@settings(max_examples=100, deadline=None)
def test_arrays_round_trip(data):
    plan = data.draw(array_plans(3))
    assert from_plan(plan).to_plan() == plan


def test_compiled_engine_takes_the_paths_of_the_object_engine():
    """One serial thread, a contended and an uncontended phased plan: rows match and the
    phased back-off state too."""
    serial = FramePlan((Thread("t0", 1, (Compute("a", 2.0), Compute("b", 0.0))),))
    phased = FramePlan(
        (
            Thread("t0", 0, (Compute("a", 1.0), BarrierWait("w"), Compute("b", 1.0))),
            Thread("t1", 1, (Compute("a", 3.0), BarrierWait("w"))),
        ),
        {"w": 2},
    )
    frames = [serial, phased, phased, serial]
    gaps = [0.0, 1.0, 0.0, 2.0]
    one, two = Machine(2), Machine(2)
    assert run(one, frames, gaps) == run(two, [from_plan(p) for p in frames], gaps)
    assert (one._phased_refusals, one._phased_skip) == (two._phased_refusals, two._phased_skip)
    assert len(two.trace.rows) == 10


def test_an_inconsistent_plan_raises_the_engines_error():
    bad = FramePlan((Thread("t0", 0, (Compute("a", 1.0), Release("L"))), Thread("t1", 1, ())), {})
    with pytest.raises(Exception) as objects:
        Machine(1).execute(bad, 0, 0.0)
    with pytest.raises(type(objects.value)):
        Machine(1).execute(from_plan(bad), 0, 0.0)


def test_schema_columns():
    plan = from_plan(
        FramePlan((Thread("t0", 0, (Compute("a", 1.5), BarrierWait("w", "w_wait"))),), {"w": 1})
    )
    assert plan.kind.tolist() == [0, 1]
    assert plan.cost.tolist() == [1.5, 0.0]
    assert plan.activities == ("a", "w_wait")
    assert np.array_equal(plan.barrier_parties, [1])


@pytest.mark.parametrize(
    "overrides",
    [
        ["server.strategy=abdelkhalek"],
        ["server.strategy=abdelkhalek", "server.options.lock_scope=two-nodes"],
        ["server.strategy=abdelkhalek", "server.options.locking=region-optimized"],
        ["server.strategy=abdelkhalek", "server.options.locking=none", "machine.cpus=3"],
        ["server.strategy=area-quadrant"],
        ["server.strategy=area-quadrant", "machine.cpus=4", "server.options.stage2=basic"],
        ["server.strategy=area-quadrant", "machine.cpus=3", "server.options.stage3=active"],
        ["server.strategy=area-quadrant", "server.options.stage2=sequential"],
    ],
)
def test_a_strategys_array_plans_give_the_same_run_compiled_or_as_objects(overrides, monkeypatch):
    scenario = load_scenario(
        "scenarios/cube-160.toml", ["run.duration_s=0.3", "run.warmup_s=0.2", *overrides]
    )
    compiled = simulate(scenario)
    monkeypatch.setattr(Machine, "_execute_arrays", lambda *args: None)
    objects = simulate(scenario)
    pd.testing.assert_frame_equal(compiled.frames, objects.frames, check_exact=True)
    pd.testing.assert_frame_equal(compiled.trace, objects.trace, check_exact=True)


AREA_COSTS = (
    "frame_overhead",
    "net_recv_per_message",
    "queue_per_message",
    "lock_per_node",
    "lock_acquire",
    "request_per_message",
    "request_per_range_entity",
    "barrier",
    "context_switch",
    "reply_info_per_client",
    "reply_per_client",
    "net_send_per_reply",
)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    players=st.integers(1, 24),
    threads=st.sampled_from([1, 2, 3, 4, 8]),
    cpus=st.sampled_from([2, 4, 8]),
    stage2=st.sampled_from(["basic", "optimized", "sequential"]),
    stage3=st.sampled_from(["cyclic", "active", "sequential"]),
    locking=st.sampled_from(["area", "none"]),
    whole=st.booleans(),
    frames=st.integers(1, 3),
)
def test_area_quadrants_array_plans_give_the_object_and_simpy_engines_timeline(
    seed, players, threads, cpus, stage2, stage3, locking, whole, frames
):
    """``area-quadrant`` builds its plans as arrays: the compiled engine (when the threads fit
    the CPUs; else the fallback), the object engine on the same plans as objects and the
    simpy engine give the same frame ends and trace rows.  Players cluster near the centre
    (locks contended across area borders); costs are whole numbers (exact ties) or not."""
    rng = np.random.default_rng(seed)
    positions = floor(rng.uniform(700, 1350, (players, 2)) + rng.normal(0, 60, (players, 2)))
    values = rng.integers(1, 9, len(AREA_COSTS)) if whole else rng.uniform(0.1, 9, len(AREA_COSTS))
    costs = dict(zip(AREA_COSTS, values.tolist(), strict=True))
    options = {"threads": threads, "stage2": stage2, "stage3": stage3, "locking": locking}
    strategy = make_strategy("area-quadrant", positions, options, cpus, costs)
    plans = []
    for _ in range(frames):
        senders = rng.permutation(players)[: rng.integers(0, players + 1)]
        plans.append(strategy.plan(frame_of(senders, range_count=rng.integers(0, 9, len(senders)))))
    gaps = rng.choice([0.0, 1.0, 40.0], 6).tolist()
    arrays = run(Machine(cpus), plans, gaps)
    objects = run(Machine(cpus), [p.to_plan() for p in plans], gaps)
    assert arrays == objects
    assert all(type(end) is float for end in arrays[0])  # no plan deadlocked or failed
    slow = run(SimpyMachine(cpus, 1, 1.0), plans, gaps)
    assert slow[0] == arrays[0]
    assert sorted(slow[1]) == sorted(arrays[1])
