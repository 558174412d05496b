"""Properties of the machine on random plans: the run and phased shortcuts change nothing,
CPUs never run two things at once, every computation is charged in full, locks (sleeping and
spin) exclude each other."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine import (
    SPAWNER_CPU,
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    Machine,
    Release,
    Spawn,
    SpinSection,
    Thread,
)

COSTS = st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 2.5])  # small values: many exact ties


@st.composite
def segment(draw) -> list:
    """Computations, critical sections (locks taken in a fixed order: no deadlock) and spin
    sections (lock ``S``, maybe inside the others)."""
    ops: list = []
    for _ in range(draw(st.integers(0, 4))):
        ops.append(Compute(draw(st.sampled_from(["a", "b"])), draw(COSTS)))
        if draw(st.integers(0, 3)) == 0:
            ops.append(SpinSection("S", "xmit", draw(COSTS.filter(lambda c: c > 0))))
        if draw(st.booleans()):
            locks = draw(st.sampled_from([["L0"], ["L1"], ["L0", "L1"]]))
            ops += [Acquire(k) for k in locks]
            ops += [Compute("critical", draw(COSTS)) for _ in range(draw(st.integers(0, 2)))]
            ops += [Release(k) for k in reversed(locks)]
    return ops


@st.composite
def plans(draw, cpus: int) -> FramePlan:
    threads = draw(st.integers(1, 4))
    barriers = draw(st.integers(0, 2))
    spawn = draw(st.booleans())
    join = spawn and draw(st.booleans())
    out = []
    for t in range(threads):
        ops: list = []
        for b in range(barriers):
            ops += draw(segment())
            ops.append(BarrierWait(f"b{b}"))
            if t == 0 and spawn and b == 0:
                ops.append(Spawn("worker"))
        ops += draw(segment())
        if t == 0 and spawn and barriers == 0:
            ops.insert(0, Spawn("worker"))
        if t == 0 and join:
            ops.append(Join("worker"))
        out.append(Thread(f"t{t}", draw(st.integers(0, cpus - 1)), tuple(ops)))
    if spawn:
        cpu = draw(st.sampled_from([SPAWNER_CPU, *range(cpus)]))
        out.append(Thread("worker", cpu, tuple(draw(segment())), spawned=True))
    return FramePlan(tuple(out), {f"b{b}": threads for b in range(barriers)})


@st.composite
def scripts(draw):
    cpus = draw(st.integers(1, 3))
    frames = draw(st.lists(plans(cpus), min_size=1, max_size=3))
    gaps = draw(st.lists(st.sampled_from([0.0, 1.0, 4.0]), min_size=3, max_size=3))
    return cpus, frames, gaps


def execute(cpus: int, frames: list[FramePlan], gaps: list[float], runs: bool):
    machine = Machine(cpus, runs=runs)
    now, ends = 0.0, []
    for index, (plan, gap) in enumerate(zip(frames, gaps, strict=False)):
        now = machine.execute(plan, index, now + gap * 1e-6)
        ends.append(round(now * 1e6, 9))
    machine.run_until()
    return ends, machine.trace.rows


@settings(max_examples=300, deadline=None)
@given(scripts())
def test_the_run_shortcut_gives_the_op_by_op_timeline(script):
    cpus, frames, gaps = script
    fast_ends, fast = execute(cpus, frames, gaps, runs=True)
    slow_ends, slow = execute(cpus, frames, gaps, runs=False)
    assert fast_ends == slow_ends
    assert sorted(fast) == sorted(slow)


@settings(max_examples=300, deadline=None)
@given(scripts())
def test_cpus_run_one_thing_at_a_time_and_charge_every_computation(script):
    cpus, frames, gaps = script
    _, rows = execute(cpus, frames, gaps, runs=True)
    busy = sorted(  # (a spin busy-waits on its CPU: it holds it)
        (cpu, start, end) for _, cpu, _, activity, start, end in rows if "wait" not in activity
    )
    for (cpu_a, _, end_a), (cpu_b, start_b, _) in zip(busy, busy[1:], strict=False):
        assert cpu_a != cpu_b or end_a <= start_b + 1e-9
    charged = defaultdict(float)
    for frame, _, thread, activity, start, end in rows:
        if "wait" not in activity and activity != "lock_spin":
            charged[frame, thread] += end - start
    for frame, plan in enumerate(frames):
        for thread in plan.threads:
            planned = sum(
                op.cost_us
                for op in thread.ops
                if type(op) in (Compute, SpinSection) and op.cost_us > 0
            )
            assert abs(charged[frame, thread.name] - planned) < 1e-9


@settings(max_examples=200, deadline=None)
@given(scripts())
def test_critical_sections_of_one_lock_never_overlap(script):
    cpus, frames, gaps = script
    # every critical section computes under both locks' names: label them by lock set
    labelled = [
        FramePlan(
            tuple(Thread(t.name, t.cpu, _label_critical(t.ops), t.spawned) for t in plan.threads),
            plan.barriers,
        )
        for plan in frames
    ]
    _, rows = execute(cpus, labelled, gaps, runs=True)
    for lock in ("L0", "L1", "S"):
        spans = sorted((s, e) for *_, activity, s, e in rows if lock in activity.split("+"))
        for (_, end_a), (start_b, _) in zip(spans, spans[1:], strict=False):
            assert end_a <= start_b + 1e-9


def _label_critical(ops: tuple) -> tuple:
    held: list[str] = []
    out = []
    for op in ops:
        if type(op) is Acquire:
            held.append(op.lock)
        elif type(op) is Release:
            held.remove(op.lock)
        elif type(op) is Compute and held:
            op = Compute("+".join(held), op.cost_us)
        elif type(op) is SpinSection:
            op = op._replace(activity="+".join([*held, op.lock]))
        out.append(op)
    return tuple(out)


WAITS = ["barrier_wait", "end_barrier_wait"]


@st.composite
def phased_plans(draw, cpus: int) -> FramePlan:
    """One thread per CPU, all passing the same barriers; locks private to a thread (``P<t>``)
    or wanted by several (``S``): the shapes of the thread strategies' frames."""
    threads = draw(st.integers(1, cpus))
    placed = draw(st.permutations(range(cpus)))[:threads]
    barriers = draw(st.integers(0, 3))
    out = []
    for t in range(threads):
        ops: list = []
        for b in range(barriers + 1):
            for _ in range(draw(st.integers(0, 3))):
                ops.append(Compute(draw(st.sampled_from(["a", "b"])), draw(COSTS)))
                if draw(st.booleans()):
                    lock = draw(st.sampled_from([f"P{t}", f"P{t}", "S"]))
                    ops += [Acquire(lock), Compute("critical", draw(COSTS)), Release(lock)]
            if b < barriers:
                ops.append(BarrierWait(f"b{b}", draw(st.sampled_from(WAITS))))
        out.append(Thread(f"t{t}", placed[t], tuple(ops)))
    return FramePlan(tuple(out), {f"b{b}": threads for b in range(barriers)})


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_phased_shortcut_gives_the_op_by_op_timeline(data):
    cpus = data.draw(st.integers(1, 4))
    frames = data.draw(st.lists(phased_plans(cpus), min_size=1, max_size=3))
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=3, max_size=3))
    fast_ends, fast = execute(cpus, frames, gaps, runs=True)
    slow_ends, slow = execute(cpus, frames, gaps, runs=False)
    assert fast_ends == slow_ends
    assert sorted(fast) == sorted(slow)


def test_the_phased_shortcut_takes_only_uncontended_barrier_phased_plans():
    def plan(*threads: Thread, barriers=("b",)) -> FramePlan:
        return FramePlan(threads, dict.fromkeys(barriers, len(threads)))

    def thread(name: str, cpu: int, *ops) -> Thread:
        return Thread(name, cpu, ops)

    a, b = Compute("a", 2.0), Compute("b", 3.0)
    wait = BarrierWait("b")
    private = plan(
        thread("t0", 0, a, Acquire("P0"), b, Release("P0"), wait, a),
        thread("t1", 1, b, b, wait, Acquire("P1"), a, Release("P1")),
    )
    machine = Machine(2)
    assert machine.execute(private, 7, 10e-6) == pytest.approx(18e-6)  # t1 arrives at 16
    assert machine.path == "phased" and machine.idle
    assert sorted(machine.trace.rows) == [
        (7, 0, "t0", "a", 10.0, 12.0),
        (7, 0, "t0", "a", 16.0, 18.0),
        (7, 0, "t0", "b", 12.0, 15.0),
        (7, 0, "t0", "barrier_wait", 15.0, 16.0),
        (7, 1, "t1", "a", 16.0, 18.0),
        (7, 1, "t1", "b", 10.0, 13.0),
        (7, 1, "t1", "b", 13.0, 16.0),
    ]
    assert sorted(machine.trace.rows) == sorted(rows_at(private, 7, 10.0))
    shared = plan(
        thread("t0", 0, Acquire("L"), a, Release("L"), wait),
        thread("t1", 1, Acquire("L"), b, Release("L"), wait),
    )
    same_cpu = plan(thread("t0", 0, a, wait), thread("t1", 0, b, wait))
    other_order = plan(
        thread("t0", 0, BarrierWait("x"), wait),
        thread("t1", 1, wait, BarrierWait("x")),
        barriers=("b", "x"),
    )
    outlives = plan(thread("t0", 0, wait), thread("t1", 1, wait, a))
    held_over = plan(thread("t0", 0, Acquire("L"), wait, Release("L")), thread("t1", 1, wait))
    for refused in (shared, same_cpu, other_order, outlives, held_over):
        machine = Machine(2)
        try:
            machine.execute(refused, 0, 0.0)
        except Exception:  # noqa: BLE001 (other_order deadlocks: not phased either)
            continue
        machine.finish()
        assert machine.path == "events"
        assert sorted(machine.trace.rows) == sorted(rows_at(refused, 0, 0.0))


def rows_at(plan: FramePlan, frame: int, start_us: float) -> list:
    machine = Machine(2, runs=False)
    machine.execute(plan, frame, start_us * 1e-6)
    machine.run_until()
    return machine.trace.rows
