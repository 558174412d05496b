"""The CPU quota (CFS bandwidth control, :mod:`simsrv.machine.quota`): exact timelines on
both engines, the engines' agreement on random plans, the quota's own invariant (no period
holds more than the quota of running time) and the scenario fields' refusals."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.machine import Compute, FramePlan, Join, Machine, SpinSection, Thread
from simsrv.machine.quota import CpuQuota
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from tests.test_engines import SMT, _assert_identical, _execute, scripts_with_run_first

ENGINES = [Machine, SimpyMachine]


def rows(machine) -> list[tuple]:
    """Trace rows as (cpu, thread, activity, start_us, end_us), in time order."""
    return sorted(
        ((c, t, a, s, e) for _, c, t, a, s, e in machine.trace.rows), key=lambda r: (r[3], r[0])
    )


def run_frames(engine, frames, quota, cpus=1, **kwargs):
    """Execute ``(plan, start_us)`` frames in turn; the ends (us) and the machine."""
    machine = engine(cpus, quota=quota, **kwargs)
    ends = [machine.execute(plan, i, start * 1e-6) * 1e6 for i, (plan, start) in enumerate(frames)]
    machine.finish()
    return ends, machine


def one(name: str, cpu: int, *ops) -> Thread:
    return Thread(name, cpu, tuple(ops))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_computation_runs_the_quota_in_each_period_and_stops_for_the_rest(engine):
    plan = FramePlan((one("main", 0, Compute("work", 5000.0)),))
    ends, m = run_frames(engine, [(plan, 0.0)], CpuQuota(1000.0, 2000.0))
    assert ends == [9000.0]
    assert rows(m) == [(0, "main", "work", 2000.0 * k, 2000.0 * k + 1000.0) for k in range(5)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_frame_throttled_mid_computation_resumes_at_the_period_and_the_next_frame_shares_it(
    engine,
):
    first = FramePlan((one("main", 0, Compute("work", 1500.0)),))
    second = FramePlan((one("main", 0, Compute("work", 600.0)),))
    ends, m = run_frames(engine, [(first, 0.0), (second, 2600.0)], CpuQuota(1000.0, 2000.0))
    # the second frame finds 500 us of the period's quota used: 500 more, then the next period
    assert ends == [2500.0, 4100.0]
    assert rows(m) == [
        (0, "main", "work", 0.0, 1000.0),
        (0, "main", "work", 2000.0, 2500.0),
        (0, "main", "work", 2600.0, 3100.0),
        (0, "main", "work", 4000.0, 4100.0),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_computation_that_uses_the_quota_exactly_ends_and_the_next_waits_for_the_period(
    engine,
):
    first = FramePlan((one("main", 0, Compute("work", 1000.0)),))
    second = FramePlan((one("main", 0, Compute("work", 100.0)),))
    ends, m = run_frames(engine, [(first, 0.0), (second, 1500.0)], CpuQuota(1000.0, 2000.0))
    assert ends == [1000.0, 2100.0]
    assert rows(m) == [(0, "main", "work", 0.0, 1000.0), (0, "main", "work", 2000.0, 2100.0)]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_idle_period_does_not_carry_its_quota_over(engine):
    frame = FramePlan((one("main", 0, Compute("work", 900.0)),))
    ends, m = run_frames(engine, [(frame, 0.0), (frame, 2100.0)], CpuQuota(1000.0, 2000.0))
    assert ends == [900.0, 3000.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_running_threads_use_the_quota_twice_as_fast_and_both_stop(engine):
    plan = FramePlan(
        (
            one("a", 0, Compute("work", 3.0), Join("b")),
            one("b", 1, Compute("work", 3.0)),
        )
    )
    ends, m = run_frames(engine, [(plan, 0.0)], CpuQuota(4.0, 10.0), cpus=2)
    assert ends == [11.0]
    assert rows(m) == [
        (0, "a", "work", 0.0, 2.0),
        (1, "b", "work", 0.0, 2.0),
        (0, "a", "work", 10.0, 11.0),
        (1, "b", "work", 10.0, 11.0),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_spinner_uses_the_quota_and_stops_spinning_while_throttled(engine):
    plan = FramePlan(
        (
            one("a", 0, SpinSection("S", "xmit", 3.0), Join("b")),
            one("b", 1, SpinSection("S", "xmit", 3.0)),
        )
    )
    ends, m = run_frames(engine, [(plan, 0.0)], CpuQuota(4.0, 10.0), cpus=2)
    # a computes and b spins from 0: 4 us used at 2; both go on at 10; a releases S at 11,
    # b computes alone from 11 and has used the period's 4 us at 13; the rest at 20
    assert ends == [21.0]
    assert rows(m) == [
        (0, "a", "xmit", 0.0, 2.0),
        (1, "b", "lock_spin", 0.0, 2.0),
        (0, "a", "xmit", 10.0, 11.0),
        (1, "b", "lock_spin", 10.0, 11.0),
        (0, "a", "join_wait", 11.0, 21.0),
        (1, "b", "xmit", 11.0, 13.0),
        (1, "b", "xmit", 20.0, 21.0),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_smt_siblings_use_wall_time_of_the_quota_and_keep_their_speed_after_a_throttle(engine):
    plan = FramePlan(
        (
            one("a", 0, Compute("work", 2.0), Join("b")),
            one("b", 1, Compute("work", 2.0)),
        )
    )
    # one core, two logical CPUs at half speed while both compute: 3 us of quota is 1.5 us of
    # wall time for two, 0.75 us of work each, in every period; 0.5 left for the third
    ends, m = run_frames(
        engine, [(plan, 0.0)], CpuQuota(3.0, 10.0), cpus=2, smt_per_core=2, smt_throughput=0.5
    )
    assert ends == [21.0]
    assert rows(m) == [
        (0, "a", "work", 0.0, 1.5),
        (1, "b", "work", 0.0, 1.5),
        (0, "a", "work", 10.0, 11.5),
        (1, "b", "work", 10.0, 11.5),
        (0, "a", "work", 20.0, 21.0),
        (1, "b", "work", 20.0, 21.0),
    ]


QUOTAS = st.sampled_from([(1.0, 4.0), (2.0, 5.0), (3.0, 3.5), (0.5, 2.0), (4.0, 4.5)])


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(script=scripts_with_run_first(), quota=QUOTAS)
def test_generated_plans_with_a_cpu_quota_give_the_same_trace_on_both_engines(script, smt, quota):
    cpus, frames, gaps = script
    fast = Machine(cpus, *smt, quota=CpuQuota(*quota))
    slow = SimpyMachine(cpus, *smt, quota=CpuQuota(*quota))
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us


@settings(max_examples=100, deadline=None, derandomize=True)
@given(script=scripts_with_run_first(), quota=QUOTAS)
def test_no_period_holds_more_than_the_quota_and_every_computation_is_charged(script, quota):
    cpus, frames, gaps = script
    q, period = quota
    machine = Machine(cpus, quota=CpuQuota(q, period))
    _execute(machine, frames, gaps)
    running = defaultdict(float)  # running time in each period: computations and spins
    traced = defaultdict(float)  # computations' time in each frame
    for frame, _, _, activity, start, end in machine.trace.rows:
        if "wait" in activity:
            continue
        if activity != "lock_spin":
            traced[frame] += end - start
        k = int(start // period)
        while start < end:
            cut = min(end, (k + 1) * period)
            running[k] += cut - start
            start, k = cut, k + 1
    assert all(used <= q + 1e-9 for used in running.values()), dict(running)
    for frame, plan in enumerate(frames):
        assert traced[frame] == pytest.approx(plan.charged_us(), abs=1e-9)


def test_a_scenario_with_a_quota_gives_the_same_trace_on_both_engines():
    quota = ["machine.cpu_quota_us=1000", "machine.cpu_period_us=20000", "players.count=48"]
    short = ["run.duration_s=0.3", "run.warmup_s=0.1"]
    path = "scenarios/testbed/mvdsv-dm1.toml"
    fast = simulate(load_scenario(path, [*short, *quota]), KEEP_ALL, keep_frames=KEEP_ALL)
    slow = simulate(
        load_scenario(path, [*short, *quota, 'machine.engine="simpy"']),
        KEEP_ALL,
        keep_frames=KEEP_ALL,
    )
    _assert_identical(fast, slow)
    # the server ran 1 ms in every 20 ms: no period holds more, and it was throttled
    used = defaultdict(float)
    trace = fast.trace[fast.trace.busy]
    for start, end in zip(trace.start_s * 1e6, trace.end_s * 1e6, strict=True):
        k = int(start // 20000.0)
        while start < end:
            cut = min(end, (k + 1) * 20000.0)
            used[k] += cut - start
            start, k = cut, k + 1
    assert max(used.values()) <= 1000.0 + 1e-6
    assert sum(u > 999.0 for u in used.values()) >= 10  # throttled in most periods


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("machine.cpu_quota_us=999", "cpu_quota_us"),
        ("machine.cpu_quota_us=true", "cpu_quota_us"),
        ('machine.cpu_quota_us="5000"', "cpu_quota_us"),
        ("machine.cpu_period_us=2e6", "cpu_period_us"),
        ("machine.cpu_period_us=500", "cpu_period_us"),
    ],
)
def test_quota_fields_out_of_range_are_refused_naming_the_field(override, message):
    with pytest.raises(InputError, match=message):
        load_scenario("scenarios/testbed/mvdsv-dm1.toml", [override])


def test_a_quota_is_refused_with_background_load_or_an_interrupt_cpu():
    with pytest.raises(InputError, match="background"):
        load_scenario(
            "scenarios/cube-160.toml", ["machine.cpu_quota_us=5000", "machine.background=[0.5]"]
        )
    with pytest.raises(InputError, match="interrupt CPU"):
        load_scenario("scenarios/abdelkhalek2004/sequential.toml", ["machine.cpu_quota_us=5000"])


@pytest.mark.parametrize("engine", ENGINES)
def test_thousands_of_throttles_in_one_frame_have_room_in_the_trace(engine):
    """Each throttle splits the row of every running thread: a frame that is throttled 10,000
    times records 20,000 rows (the stores grow for them before the frame runs)."""
    plan = FramePlan((one("a", 0, Compute("w", 5000.0)), one("b", 1, Compute("w", 5000.0))))
    ends, m = run_frames(engine, [(plan, 0.0)], CpuQuota(1.0, 3.0), cpus=2)
    # two threads share 1 us a period: 0.5 us each, 10,000 periods; the last ends 0.5 in
    assert ends == [pytest.approx(29997.5)]
    assert len(m.trace.rows) == 20000
    assert all(e - s == pytest.approx(0.5) for _, _, _, _, s, e in m.trace.rows)
