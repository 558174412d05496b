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

from simsrv.keep_window import KEEP_ALL
from simsrv.machine import Acquire, BarrierWait, Compute, FramePlan, Machine, Release, Thread
from simsrv.machine.compiled_engine import EVENTS, execute_arrays
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


@st.composite
def locked_plans(draw, cpus: int) -> FramePlan:
    """Frames shaped as ``abdelkhalek``'s with many locks: every thread serves packets, each
    taking some of 12 region locks (in one global order: no deadlock), a client lock of its
    own or a shared one, and often one game-state lock everybody contends for; short
    computations between (exact ties), barriers between phases (and mostly after the last:
    else threads outlive the coordinator, which the compiled engine leaves to the objects)."""
    threads = draw(st.integers(2, cpus))
    phases = draw(st.integers(1, 3))
    cost = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.0])
    closed = draw(st.integers(0, 3)) > 0  # a last barrier: no thread outlives the frame
    out = []
    for t in range(threads):
        ops: list = []
        for phase in range(phases):
            for _ in range(draw(st.integers(0, 5))):
                ops.append(Compute("recv", draw(cost)))
                regions = sorted(draw(st.sets(st.integers(0, 11), max_size=4)))
                client = f"c{draw(st.integers(0, 40))}"
                taken = [f"r{r:02d}" for r in regions] + [client]
                ops += [Acquire(k) for k in taken]
                ops.append(Compute("request", draw(cost)))
                if draw(st.integers(0, 3)):
                    ops += [Acquire("world"), Compute("update", draw(cost)), Release("world")]
                ops += [Release(k) for k in reversed(taken)]
            if phase < phases - 1 or closed:
                ops.append(BarrierWait(f"b{phase}"))
        if t == 0 or not closed:
            ops.append(Compute("reply", draw(cost)))
        out.append(Thread(f"t{t}", t, tuple(ops)))
    barriers = phases if closed else phases - 1
    return FramePlan(tuple(out), {f"b{b}": threads for b in range(barriers)})


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_frames_with_many_contended_locks_compiled_as_objects(data):
    """Up to 8 threads contending for ~50 locks: the compiled event loop (runs truncated at
    a release a thread waits for, locks handed to the first waiter, threads acting in turn at
    equal times) gives the object engine's frames, rows and critical sections bit for bit."""
    cpus = data.draw(st.integers(2, 8))
    frames = data.draw(st.lists(locked_plans(cpus), min_size=1, max_size=3))
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1.0, 4.0]), min_size=3, max_size=3))
    objects = run(Machine(cpus), frames, gaps)
    arrays = run(Machine(cpus), [from_plan(p) for p in frames], gaps)
    assert arrays == objects


def test_a_contended_frame_in_the_event_loop_has_this_timeline():
    """t0 holds L through a run whose release is deferred; t1 asks for L before that release:
    t0's run is cut at the release (not at the run's end, 5 us), L passes to t1 at 2 us, t1's
    wait is recorded, t0 computes on.  Worked out by hand."""
    plan = from_plan(
        FramePlan(
            (
                Thread("t0", 0, (Acquire("L"), Compute("a", 2.0), Release("L"), Compute("b", 3.0))),
                Thread("t1", 1, (Compute("c", 1.0), Acquire("L"), Compute("d", 1.0), Release("L"))),
            )
        )
    )
    n = len(plan.kind)
    ints, times, out = np.zeros((4, n), np.int64), np.zeros((4, n)), np.zeros(4)
    status = execute_arrays(
        plan.thread, plan.kind, plan.cost, plan.arg, plan.activity, plan.thread_cpu,
        plan.barrier_parties, np.zeros(len(plan.activities) + 1, np.bool_), len(plan.locks),
        len(plan.activities), 2, 0.0, 0.0, True, ints[0], ints[1], times[0], times[1], ints[2],
        ints[3], times[2], times[3], out,
    )  # fmt: skip
    assert status == EVENTS  # locks contended: not phased
    end, charged, rows, holds = out
    assert (end, charged, rows, holds) == (5.0, 7.0, 5, 2)
    names = (*plan.activities, "lock_wait")
    timeline = [
        (int(t), names[a], s, e)
        for t, a, s, e in zip(ints[0, :5], ints[1, :5], times[0, :5], times[1, :5], strict=True)
    ]
    assert timeline == [
        (1, "c", 0.0, 1.0),
        (0, "a", 0.0, 2.0),
        (1, "lock_wait", 1.0, 2.0),
        (1, "d", 2.0, 3.0),
        (0, "b", 2.0, 5.0),
    ]
    sections = list(zip(ints[2, :2], ints[3, :2], times[2, :2], times[3, :2], strict=True))
    assert sections == [(0, 0, 0.0, 2.0), (0, 1, 2.0, 3.0)]  # L by t0, then by t1
    machine = Machine(2)
    assert run(machine, [plan], [0.0])[1] == [
        (0, thread % 2, f"t{thread}", name, start, stop) for thread, name, start, stop in timeline
    ]


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
    compiled = simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
    monkeypatch.setattr(Machine, "_execute_arrays", lambda *args: None)
    objects = simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
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


def test_the_phased_back_off_doubles_after_each_refusal_up_to_63_frames_and_resets():
    from simsrv.machine.compiled_engine import EVENTS, PHASED, SERIAL, phased_backoff

    skip, refusals, skips = 0, 0, []
    for _ in range(9):  # every frame refuses the shortcut
        while skip:
            skip, refusals = phased_backoff(EVENTS, False, skip, refusals)
        skip, refusals = phased_backoff(EVENTS, True, skip, refusals)
        skips.append(skip)
    assert skips == [0, 1, 3, 7, 15, 31, 63, 63, 63]
    assert phased_backoff(SERIAL, True, 5, 3) == (5, 3)  # a serial frame changes nothing
    assert phased_backoff(PHASED, True, 0, 7) == (0, 0)
