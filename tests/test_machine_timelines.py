"""Exact timelines of hand-written plans on the simulated machine."""

from __future__ import annotations

import pytest

from simsrv.machine import (
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    Machine,
    Release,
    RunFirst,
    Spawn,
    SpinSection,
    Thread,
)
from simsrv.machine.executor import PlanError


def rows(machine: Machine) -> list[tuple]:
    """Trace rows as (cpu, thread, activity, start_us, end_us)."""
    return [(c, t, a, s, e) for _, c, t, a, s, e in machine.trace.rows]


def test_two_tasks_on_one_cpu_take_the_sum():
    m = Machine(2)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", 30.0),)),
            Thread("b", 0, (Compute("reply", 20.0),)),
        )
    )
    end = m.execute(plan, frame=0, start_s=0.0)
    assert end == pytest.approx(30e-6)  # the frame ends with its coordinator (thread a)
    m.run_until()  # let thread b finish
    assert m.now_us == 50.0
    assert rows(m) == [(0, "a", "request", 0.0, 30.0), (0, "b", "reply", 30.0, 50.0)]


def test_two_tasks_on_two_cpus_take_the_max():
    m = Machine(2)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", 30.0), Join("b"))),
            Thread("b", 1, (Compute("reply", 50.0),)),
        )
    )
    end = m.execute(plan, 0, 0.0)
    assert end * 1e6 == pytest.approx(50.0)
    assert rows(m) == [
        (0, "a", "request", 0.0, 30.0),
        (1, "b", "reply", 0.0, 50.0),
        (0, "a", "join_wait", 30.0, 50.0),
    ]


def test_serial_fast_path_equals_the_event_engine():
    ops = (Compute("frame", 7.0), Compute("world", 0.0), Compute("request", 13.5))
    fast, slow = Machine(1), Machine(1)
    end_fast = fast.execute(FramePlan((Thread("main", 0, ops),)), 3, 1.0)
    # a no-op second thread forces the event engine with the same main-thread timeline
    slow_plan = FramePlan((Thread("main", 0, ops), Thread("idle", 0, ())))
    end_slow = slow.execute(slow_plan, 3, 1.0)
    assert end_fast == end_slow == pytest.approx(1.0 + 20.5e-6)
    assert rows(fast) == rows(slow)


def test_barrier_releases_all_parties_when_the_last_arrives():
    m = Machine(2)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", 10.0), BarrierWait("b1"), Compute("reply", 5.0))),
            Thread("b", 1, (Compute("request", 25.0), BarrierWait("b1"), Compute("reply", 5.0))),
        ),
        barriers={"b1": 2},
    )
    end = m.execute(plan, 0, 0.0)
    assert end * 1e6 == pytest.approx(30.0)
    assert (0, "a", "barrier_wait", 10.0, 25.0) in rows(m)
    assert (1, "b", "reply", 25.0, 30.0) in rows(m)


def test_named_barrier_waits_are_waits_in_the_trace_and_the_waiting_metrics():
    from simsrv.metrics.waiting import waiting_fractions

    m = Machine(2)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("reply", 10.0), BarrierWait("end", "end_barrier_wait"))),
            Thread("b", 1, (Compute("reply", 30.0), BarrierWait("end", "end_barrier_wait"))),
        ),
        barriers={"end": 2},
    )
    m.execute(plan, 0, 0.0)
    assert (0, "a", "end_barrier_wait", 10.0, 30.0) in rows(m)
    trace = m.trace.to_frame()
    busy = dict(zip(trace.activity.astype(str) + trace.thread.astype(str), trace.busy, strict=True))
    assert busy == {"replya": True, "replyb": True, "end_barrier_waita": False}
    got = waiting_fractions(trace, 0.0, 30e-6)
    assert got["barrier_wait_fraction"] == pytest.approx(20 / 60)  # 20 us of 60 us thread time
    assert got["any_waiting_fraction"] == pytest.approx(20 / 30)


def test_lock_serialises_two_threads_exactly():
    m = Machine(2)
    critical = (Acquire("leaf"), Compute("request", 10.0), Release("leaf"))
    plan = FramePlan(
        threads=(
            Thread("a", 0, (*critical, Join("b"))),
            Thread("b", 1, critical),
        )
    )
    m.execute(plan, 0, 0.0)
    assert rows(m) == [
        (0, "a", "request", 0.0, 10.0),
        (1, "b", "lock_wait", 0.0, 10.0),
        (1, "b", "request", 10.0, 20.0),
        (0, "a", "join_wait", 10.0, 20.0),
    ]


def test_spawned_thread_starts_when_spawned_and_may_outlive_the_frame():
    m = Machine(2)
    plan = FramePlan(
        threads=(
            Thread("coord", 0, (Compute("fork", 4.0), Spawn("w"), Compute("world", 6.0))),
            Thread("w", 1, (Compute("exit", 100.0),), spawned=True),
        )
    )
    end = m.execute(plan, 0, 0.0)
    assert end * 1e6 == pytest.approx(10.0)
    assert not m.idle  # the worker is still tearing down
    next_plan = FramePlan((Thread("coord", 0, (Compute("world", 5.0),)),))
    m.execute(next_plan, 1, 20e-6)  # not the serial fast path: a thread is live
    m.run_until()  # let the worker finish its teardown
    assert (1, "w", "exit", 4.0, 104.0) in rows(m)
    assert (0, "coord", "world", 20.0, 25.0) in rows(m)


def test_inconsistent_plans_are_rejected():
    m = Machine(1)
    with pytest.raises(PlanError, match="out of range"):
        m.execute(FramePlan((Thread("a", 3, (Compute("x", 1.0),)),)), 0, 0.0)
    with pytest.raises(PlanError, match="undeclared barrier"):
        m.execute(FramePlan((Thread("a", 0, (BarrierWait("nope"),)),)), 0, 0.0)
    misnamed = FramePlan((Thread("a", 0, (BarrierWait("b", "end"),)),), barriers={"b": 1})
    with pytest.raises(PlanError, match="must end in _wait"):
        m.execute(misnamed, 0, 0.0)
    deadlock = FramePlan((Thread("a", 0, (BarrierWait("b"),)),), barriers={"b": 2})
    with pytest.raises(PlanError, match="deadlocked"):
        Machine(1).execute(deadlock, 0, 0.0)


def _pair(cost_a: float, cost_b: float, cpu_b: int) -> FramePlan:
    return FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", cost_a), Join("b"))),
            Thread("b", cpu_b, (Compute("reply", cost_b),)),
        )
    )


def test_smt_siblings_share_a_core():
    # CPUs 0 and 1 are one core at 0.6 speed each while both compute: a (30 us of work) ends at
    # 30 / 0.6 = 50; b has done 30 of its 60 by then and runs the rest alone: ends at 80.
    m = Machine(2, smt_per_core=2, smt_throughput=0.6)
    end = m.execute(_pair(30.0, 60.0, 1), 0, 0.0)
    assert end * 1e6 == pytest.approx(80.0)
    assert rows(m) == [
        (0, "a", "request", 0.0, pytest.approx(50.0)),
        (1, "b", "reply", 0.0, pytest.approx(80.0)),
        (0, "a", "join_wait", pytest.approx(50.0), pytest.approx(80.0)),
    ]


def test_smt_cpus_on_different_cores_do_not_interfere():
    m = Machine(4, smt_per_core=2, smt_throughput=0.6)
    assert m.execute(_pair(30.0, 60.0, 2), 0, 0.0) * 1e6 == pytest.approx(60.0)


def test_smt_blocked_sibling_does_not_slow_the_core():
    # b waits at a barrier (not computing) while a computes: a runs at full speed
    m = Machine(2, smt_per_core=2, smt_throughput=0.5)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("world", 40.0), BarrierWait("x"))),
            Thread("b", 1, (BarrierWait("x"), Compute("reply", 10.0))),
        ),
        barriers={"x": 2},
    )
    m.execute(plan, 0, 0.0)
    m.run_until()
    assert rows(m) == [
        (0, "a", "world", 0.0, 40.0),
        (1, "b", "barrier_wait", 0.0, 40.0),
        (1, "b", "reply", 40.0, 50.0),
    ]


def _fork_plan(child_us: float, migrate_after_us: float, busy_cpu1_us: float = 0.0) -> FramePlan:
    threads = [
        Thread(
            "parent",
            0,
            (
                Compute("fork", 10.0),
                Spawn("child"),
                RunFirst("child", migrate_after_us),
                Compute("request", 50.0),
            ),
        ),
        Thread("child", 0, (Compute("request", child_us),), spawned=True),
    ]
    if busy_cpu1_us:
        threads.append(Thread("other", 1, (Compute("world", busy_cpu1_us),)))
    return FramePlan(threads=tuple(threads))


def test_child_runs_first_and_short_children_serialise():
    m = Machine(2)
    end = m.execute(_fork_plan(child_us=100.0, migrate_after_us=500.0), 0, 0.0)
    assert end * 1e6 == pytest.approx(160.0)  # 10 fork + 100 child + 50 parent, all on CPU 0
    assert rows(m) == [
        (0, "parent", "fork", 0.0, 10.0),
        (0, "child", "request", 10.0, 110.0),
        (0, "parent", "runqueue_wait", 10.0, 110.0),
        (0, "parent", "request", 110.0, 160.0),
    ]


def test_waiting_parent_migrates_to_an_idle_cpu():
    m = Machine(2)
    end = m.execute(_fork_plan(child_us=1000.0, migrate_after_us=300.0), 0, 0.0)
    assert end * 1e6 == pytest.approx(360.0)  # pulled to CPU 1 at 310, runs 50 there
    assert (1, "parent", "request", 310.0, 360.0) in rows(m)
    assert (0, "parent", "runqueue_wait", 10.0, 310.0) in rows(m)


def test_no_migration_when_no_cpu_is_idle():
    m = Machine(2)
    end = m.execute(
        _fork_plan(child_us=1000.0, migrate_after_us=300.0, busy_cpu1_us=5000.0), 0, 0.0
    )
    assert end * 1e6 == pytest.approx(1060.0)


# -- a thread library that wakes sleepers with signals (LinuxThreads) ------------------------


def _signal_engines():
    from simsrv.machine.simpy_engine import SimpyMachine

    return [Machine, SimpyMachine]


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_linuxthreads_barrier_costs_its_last_thread_one_send_per_sleeper_in_arrival_order(
    engine,
):
    """Three threads on three CPUs reach a barrier at 4, 6 and 10 us.  The last (a) sends two
    signals (2 us each, 10-14); b, first to sleep, is woken at 12 and t at 14; each pays its
    wake-up (3 us) before its next computation."""
    m = engine(3, signal_send_us=2.0, signal_wakeup_us=3.0)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", 10.0), BarrierWait("sync"), Compute("reply", 1.0))),
            Thread("b", 1, (Compute("request", 4.0), BarrierWait("sync"), Compute("reply", 1.0))),
            Thread("t", 2, (Compute("request", 6.0), BarrierWait("sync"), Compute("reply", 1.0))),
        ),
        barriers={"sync": 3},
    )
    m.execute(plan, 0, 0.0)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "request", 0.0, 10.0),
        (0, "a", "signal_send", 10.0, 14.0),
        (0, "a", "reply", 14.0, 15.0),
        (1, "b", "request", 0.0, 4.0),
        (1, "b", "barrier_wait", 4.0, 12.0),
        (1, "b", "signal_wakeup", 12.0, 15.0),
        (1, "b", "reply", 15.0, 16.0),
        (2, "t", "request", 0.0, 6.0),
        (2, "t", "barrier_wait", 6.0, 14.0),
        (2, "t", "signal_wakeup", 14.0, 17.0),
        (2, "t", "reply", 17.0, 18.0),
    ]
    assert m.charged_us == [23.0]  # the plan's own costs: the signals are the machine's


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_contended_linuxthreads_unlock_signals_the_waiter_who_holds_the_lock_meanwhile(engine):
    """a holds L 0-5; b asks at 1.  At 5 the lock passes to b and a sends the signal (5-7); b
    is woken at 7, pays its wake-up (7-10), then its critical section (10-12)."""
    m = engine(2, signal_send_us=2.0, signal_wakeup_us=3.0)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Acquire("L"), Compute("request", 5.0), Release("L"), Join("b"))),
            Thread(
                "b", 1, (Compute("frame", 1.0), Acquire("L"), Compute("lock", 2.0), Release("L"))
            ),
        )
    )
    m.execute(plan, 0, 0.0)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "request", 0.0, 5.0),
        (0, "a", "signal_send", 5.0, 7.0),
        (0, "a", "join_wait", 7.0, 12.0),
        (1, "b", "frame", 0.0, 1.0),
        (1, "b", "lock_wait", 1.0, 7.0),
        (1, "b", "signal_wakeup", 7.0, 10.0),
        (1, "b", "lock", 10.0, 12.0),
    ]
    holds = sorted((h[2], h[3], h[4]) for h in m.lock_holds.rows)
    assert holds == [("a", 0.0, 5.0), ("b", 5.0, 12.0)]


@pytest.mark.parametrize("engine", _signal_engines())
def test_without_signal_costs_a_barrier_releases_everyone_at_once(engine):
    m = engine(2)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("request", 10.0), BarrierWait("sync"), Compute("reply", 1.0))),
            Thread("b", 1, (Compute("request", 4.0), BarrierWait("sync"), Compute("reply", 1.0))),
        ),
        barriers={"sync": 2},
    )
    m.execute(plan, 0, 0.0)
    m.finish()
    assert (1, "b", "reply", 10.0, 11.0) in rows(m)
    assert not [r for r in rows(m) if r[2].startswith("signal")]


# -- the network card's interrupts on one CPU (Linux before receive packet steering) ---------


def _interrupt_machine(engine, cpus, arrivals_us, softirq_us=5.0, irq_cpu=0, smt=(1, 1.0)):
    m = engine(cpus, *smt, irq_cpu=irq_cpu, softirq_us=softirq_us)
    m.readable_us = list(m.add_interrupts(arrivals_us, float("inf")))
    return m


@pytest.mark.parametrize("engine", _signal_engines())
def test_two_threads_receives_queue_behind_each_other_on_the_interrupt_cpu(engine):
    """Packets for thread a (at 1 us) and for thread b (at 2 us) reach the card, whose
    interrupts CPU 0 takes: their softirqs (5 us each) run one after the other, 1-6 and 6-11
    (b's waits 4 us behind a's): a's packet is on its socket at 6, b's at 11.  Thread a,
    computing on CPU 0, stands still meanwhile: its 10 us take 0-1 and 11-20.  Thread b on
    CPU 1 is not touched: 0-10."""
    m = _interrupt_machine(engine, 2, [1.0, 2.0])
    assert m.readable_us == [6.0, 11.0]
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("net_recv", 10.0),)),
            Thread("b", 1, (Compute("net_recv", 10.0),)),
        )
    )
    assert m.execute(plan, 0, 0.0) == pytest.approx(20e-6)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "net_recv", 0.0, 1.0),
        (0, "a", "net_recv", 11.0, 20.0),
        (1, "b", "net_recv", 0.0, 10.0),
    ]
    assert m.charged_us == [20.0]  # the softirqs are the platform's, not the plan's


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_computation_that_starts_as_a_softirq_starts_waits_for_its_end(engine):
    """A busy period's start comes before every other event of its instant: a thread that
    starts computing on the interrupt CPU at 0, when a packet arrives, computes 5-15."""
    m = _interrupt_machine(engine, 2, [0.0])
    plan = FramePlan(threads=(Thread("a", 0, (Compute("request", 10.0),)),))
    assert m.execute(plan, 0, 0.0) == pytest.approx(15e-6)
    assert rows(m) == [(0, "a", "request", 5.0, 15.0)]


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_softirq_on_an_smt_sibling_slows_the_thread_on_its_core(engine):
    """CPUs 0 and 1 share a core (throughput 0.5 each while both compute).  Softirqs on CPU 1
    from 1 to 11 (two packets): thread a on CPU 0 does 1 us of work by 1, 5 more by 11 at
    half speed, its last 4 by 15."""
    m = _interrupt_machine(engine, 2, [1.0, 2.0], irq_cpu=1, smt=(2, 0.5))
    plan = FramePlan(threads=(Thread("a", 0, (Compute("request", 10.0),)),))
    assert m.execute(plan, 0, 0.0) == pytest.approx(15e-6)
    assert rows(m) == [(0, "a", "request", 0.0, 15.0)]


def test_the_machine_asks_for_the_packets_after_its_horizon():
    """A frame on the interrupt CPU that may run past the horizon asks the machine's interrupt
    source for more (here there is none); one on another CPU does not need them."""
    m = Machine(2, irq_cpu=0, softirq_us=5.0)
    m.add_interrupts([1.0], 50.0)
    elsewhere = FramePlan(threads=(Thread("a", 1, (Compute("request", 100.0),)),))
    assert m.execute(elsewhere, 0, 0.0) == pytest.approx(100e-6)
    here = FramePlan(threads=(Thread("a", 0, (Compute("request", 100.0),)),))
    with pytest.raises(RuntimeError, match="packets arriving after 50.0 us"):
        m.execute(here, 1, 100e-6)


# -- kernel spinlocks (the device's transmit lock): the waiter spins on its CPU -------------


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_spinning_sender_holds_its_cpu_until_it_has_the_lock_and_has_sent(engine):
    """a (CPU 0) and b (CPU 1) send at 0 through one transmit lock (5 and 3 us under it): a,
    first in plan order, holds it 0-5; b spins on CPU 1 0-5, busy (the machine's charge, no
    signal even with a signalling thread library), then sends 5-8.  c on CPU 1 wants 2 us
    at 0: the spinner keeps the CPU, so c computes 8-10."""
    m = engine(2, signal_send_us=2.0, signal_wakeup_us=3.0)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (SpinSection("dev", "net_send", 5.0), Join("c"))),
            Thread("b", 1, (SpinSection("dev", "net_send", 3.0),)),
            Thread("c", 1, (Compute("reply", 2.0),)),
        )
    )
    assert m.execute(plan, 0, 0.0) == pytest.approx(10e-6)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "net_send", 0.0, 5.0),
        (0, "a", "join_wait", 5.0, 10.0),
        (1, "b", "lock_spin", 0.0, 5.0),
        (1, "b", "net_send", 5.0, 8.0),
        (1, "c", "reply", 8.0, 10.0),
    ]
    assert m.charged_us == [10.0]  # the spin is the machine's, not the plan's
    holds = sorted((h[2], h[3], h[4]) for h in m.lock_holds.rows)
    assert holds == [("a", 0.0, 5.0), ("b", 5.0, 8.0)]


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_spinning_smt_sibling_does_not_slow_the_holder(engine):
    """CPUs 0 and 1 share a core (throughput 0.5 while both compute).  b spins on CPU 1
    while a sends on CPU 0: a's 4 us take 0-4 (a spin loop's pause does not compete), then
    b's 4 us take 4-8."""
    m = engine(2, 2, 0.5)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (SpinSection("dev", "net_send", 4.0),)),
            Thread("b", 1, (SpinSection("dev", "net_send", 4.0),)),
        )
    )
    m.execute(plan, 0, 0.0)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "net_send", 0.0, 4.0),
        (1, "b", "lock_spin", 0.0, 4.0),
        (1, "b", "net_send", 4.0, 8.0),
    ]


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_softirq_interrupts_a_spinner_and_its_section(engine):
    """CPU 0 takes the interrupts; packets at 1 and 9 us cost 2 us of softirq each (1-3,
    9-11).  a on CPU 1 holds the transmit lock 0-6; b on CPU 0 spins 0-1 and 3-6 (the
    softirq is not spin), then sends 6-9 and 11-13 (its 5 us, the second softirq aside)."""
    m = _interrupt_machine(engine, 2, [1.0, 9.0], softirq_us=2.0)
    plan = FramePlan(
        threads=(
            Thread("a", 1, (SpinSection("dev", "net_send", 6.0), Join("b"))),
            Thread("b", 0, (SpinSection("dev", "net_send", 5.0),)),
        )
    )
    assert m.execute(plan, 0, 0.0) == pytest.approx(13e-6)
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (1, "a", "net_send", 0.0, 6.0),
        (1, "a", "join_wait", 6.0, 13.0),
        (0, "b", "lock_spin", 0.0, 1.0),
        (0, "b", "lock_spin", 3.0, 6.0),
        (0, "b", "net_send", 6.0, 9.0),
        (0, "b", "net_send", 11.0, 13.0),
    ]


# -- futex mutexes: a release frees the lock and wakes a waiter, who must try again ---------


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_barging_release_lets_the_releaser_take_the_lock_again_before_the_woken_waiter(
    engine,
):
    """a holds L 0-10, b asks at 2 and sleeps.  At 10 a frees L and wakes b (send 1: a's
    futex wake, 10-11), who tries again at 10 + 1 + 4 = 15; a, after 1 us of work (11-12),
    takes L again at 12 (free: barging) and holds it 12-22.  b finds it held at 15 and sleeps;
    a's release at 22 wakes it (a's send 22-23) and b takes L at 27.  b's wait is one row,
    2-27; the locks' holds are a's two and b's."""
    m = engine(2, signal_send_us=1.0, signal_wakeup_us=4.0, lock_barging=True)
    a_ops = (
        Acquire("L"), Compute("request", 10.0), Release("L"), Compute("frame", 1.0),
        Acquire("L"), Compute("request", 10.0), Release("L"), Join("b"),
    )  # fmt: skip
    b_ops = (Compute("frame", 2.0), Acquire("L"), Compute("lock", 5.0), Release("L"))
    plan = FramePlan(threads=(Thread("a", 0, a_ops), Thread("b", 1, b_ops)))
    m.execute(plan, 0, 0.0)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "request", 0.0, 10.0),
        (0, "a", "signal_send", 10.0, 11.0),
        (0, "a", "frame", 11.0, 12.0),
        (0, "a", "request", 12.0, 22.0),
        (0, "a", "signal_send", 22.0, 23.0),
        (0, "a", "join_wait", 23.0, 32.0),
        (1, "b", "frame", 0.0, 2.0),
        (1, "b", "lock_wait", 2.0, 27.0),
        (1, "b", "lock", 27.0, 32.0),
    ]
    holds = sorted((h[2], h[3], h[4]) for h in m.lock_holds.rows)
    assert holds == [("a", 0.0, 10.0), ("a", 12.0, 22.0), ("b", 27.0, 32.0)]


@pytest.mark.parametrize("engine", _signal_engines())
def test_a_barging_waiter_woken_while_the_lock_is_free_takes_it(engine):
    """The same plan with a releaser that does not come back: b, woken by the release at 10,
    takes the free lock at 15."""
    m = engine(2, signal_send_us=1.0, signal_wakeup_us=4.0, lock_barging=True)
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Acquire("L"), Compute("request", 10.0), Release("L"), Join("b"))),
            Thread("b", 1, (Compute("frame", 2.0), Acquire("L"), Compute("lock", 5.0),
                            Release("L"))),
        )
    )  # fmt: skip
    m.execute(plan, 0, 0.0)
    m.finish()
    assert sorted(rows(m), key=lambda r: (r[1], r[3])) == [
        (0, "a", "request", 0.0, 10.0),
        (0, "a", "signal_send", 10.0, 11.0),
        (0, "a", "join_wait", 11.0, 20.0),
        (1, "b", "frame", 0.0, 2.0),
        (1, "b", "lock_wait", 2.0, 15.0),
        (1, "b", "lock", 15.0, 20.0),
    ]
