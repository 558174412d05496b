"""The cold start of an idle CPU (:mod:`simsrv.machine.cold_start`): exact timelines on both
engines (its wake-up ``cold_start`` then its refill ``cold_refill``), the engines' agreement
on random plans (alone, with SMT, with a CPU quota), the rule's own invariant (every cold
start is ``cold(g)`` of the idle time before it) and the platform fields' refusals."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.machine import Compute, FramePlan, Join, Machine, SpinSection
from simsrv.machine.cold_start import ColdStart, cold_us
from simsrv.machine.quota import CpuQuota
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from tests.test_cpu_quota import one, rows
from tests.test_engines import SMT, _assert_identical, _execute, scripts_with_run_first

ENGINES = [Machine, SimpyMachine]
COLD = ColdStart(5.0, 50.0, 1000.0)


def refill(g: float) -> float:
    """:data:`COLD`'s refill after ``g`` us of idleness (its wake-up is 5 us)."""
    return COLD.refill_part(g)


def run_frames(engine, frames, cold=COLD, cpus=1, **kwargs):
    """Execute ``(plan, start_us)`` frames in turn; the ends (us) and the machine."""
    machine = engine(cpus, cold_start=cold, **kwargs)
    ends = [machine.execute(plan, i, start * 1e-6) * 1e6 for i, (plan, start) in enumerate(frames)]
    machine.finish()
    return ends, machine


def test_the_cost_is_the_wake_up_plus_a_refill_that_grows_with_the_idle_time():
    assert COLD.cost(0.0) == 0.0
    assert COLD.cost(1e-9) == pytest.approx(5.0)
    assert COLD.cost(1000.0) == pytest.approx(5.0 + 50.0 * (1.0 - math.exp(-1.0)), rel=1e-15)
    assert COLD.cost(1e6) == 55.0
    assert COLD.wake_part(1e-9) == 5.0 and COLD.wake_part(0.0) == 0.0
    assert COLD.refill_part(1000.0) == 50.0 * -math.expm1(-1.0)
    costs = [COLD.cost(g) for g in (1.0, 10.0, 100.0, 1000.0, 5000.0)]
    assert costs == sorted(costs) and costs[-1] < 55.0
    with pytest.raises(ValueError, match="decay_us > 0"):
        ColdStart(1.0, 10.0, 0.0)
    with pytest.raises(ValueError, match="wake_us or refill_us"):
        ColdStart(0.0, 0.0, 1000.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_frame_after_idleness_first_computes_its_cold_start_and_one_after_another_does_not(
    engine,
):
    plan = FramePlan((one("main", 0, Compute("work", 100.0), Compute("send", 20.0)),))
    # frame 0 at 0 (idle for 0: nothing), frame 1 right at frame 0's end (not idle), frame 2
    # after 1000 us of idleness
    ends, m = run_frames(engine, [(plan, 0.0), (plan, 120.0), (plan, 1240.0)])
    t = 1245.0 + refill(1000.0)  # the wake-up (5 us), then the refill
    assert ends == [120.0, 240.0, t + 120.0]
    assert rows(m) == [
        (0, "main", "work", 0.0, 100.0),
        (0, "main", "send", 100.0, 120.0),
        (0, "main", "work", 120.0, 220.0),
        (0, "main", "send", 220.0, 240.0),
        (0, "main", "cold_start", 1240.0, 1245.0),
        (0, "main", "cold_refill", 1245.0, t),
        (0, "main", "work", t, t + 100.0),
        (0, "main", "send", t + 100.0, t + 120.0),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cpu_handed_to_a_queued_thread_is_not_idle_and_each_cpu_has_its_own_idle_time(engine):
    plan = FramePlan(
        (
            one("a", 0, Compute("work", 10.0), Join("b"), Join("c")),
            one("b", 0, Compute("work", 10.0)),  # queued behind a on CPU 0
            one("c", 1, Compute("work", 10.0)),  # CPU 1, idle since 0
        )
    )
    ends, m = run_frames(engine, [(plan, 500.0)], cpus=2)
    t = 505.0 + refill(500.0)
    assert rows(m) == [
        (0, "a", "cold_start", 500.0, 505.0),
        (1, "c", "cold_start", 500.0, 505.0),
        (0, "a", "cold_refill", 505.0, t),
        (1, "c", "cold_refill", 505.0, t),
        (0, "a", "work", t, t + 10.0),
        (1, "c", "work", t, t + 10.0),
        (0, "b", "work", t + 10.0, t + 20.0),
        (0, "a", "join_wait", t + 10.0, t + 20.0),
    ]
    assert ends == [t + 20.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_spin_section_pays_its_cold_start_before_it_tries_the_lock(engine):
    plan = FramePlan(
        (
            one("a", 0, SpinSection("S", "xmit", 30.0), Join("b")),
            one("b", 1, Compute("work", 5.0), SpinSection("S", "xmit", 10.0)),
        )
    )
    ends, m = run_frames(engine, [(plan, 1000.0)], cpus=2)
    t = 1005.0 + refill(1000.0)
    # both CPUs start cold; a holds S from t to t + 30, b spins from t + 5 (its CPU warm)
    assert rows(m) == [
        (0, "a", "cold_start", 1000.0, 1005.0),
        (1, "b", "cold_start", 1000.0, 1005.0),
        (0, "a", "cold_refill", 1005.0, t),
        (1, "b", "cold_refill", 1005.0, t),
        (0, "a", "xmit", t, t + 30.0),
        (1, "b", "work", t, t + 5.0),
        (1, "b", "lock_spin", t + 5.0, t + 30.0),
        (0, "a", "join_wait", t + 30.0, t + 40.0),
        (1, "b", "xmit", t + 30.0, t + 40.0),
    ]
    assert ends == [t + 40.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cold_start_uses_the_cpu_quota_and_stands_still_when_it_runs_out(engine):
    plan = FramePlan((one("main", 0, Compute("work", 100.0)),))
    cold = ColdStart(10.0, 40.0, 1.0)  # (a full 50 us after any idleness of ms)
    ends, m = run_frames(engine, [(plan, 10_000.0)], cold, quota=CpuQuota(30.0, 1000.0))
    c = cold.cost(10_000.0)
    assert c == 50.0
    # 30 us of the cold start in period 10 (its 10 us wake-up, 20 of the refill), 20 more
    # in period 11, then the work: 10 us there, 30 in each of the next periods
    assert rows(m) == [
        (0, "main", "cold_start", 10_000.0, 10_010.0),
        (0, "main", "cold_refill", 10_010.0, 10_030.0),
        (0, "main", "cold_refill", 11_000.0, 11_020.0),
        (0, "main", "work", 11_020.0, 11_030.0),
        (0, "main", "work", 12_000.0, 12_030.0),
        (0, "main", "work", 13_000.0, 13_030.0),
        (0, "main", "work", 14_000.0, 14_030.0),
    ]
    assert ends == [14_030.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_smt_sibling_computing_slows_a_cold_start_as_any_computation(engine):
    plan = FramePlan(
        (
            one("a", 0, Compute("work", 100.0), Join("b")),
            one("b", 1, Compute("work", 20.0)),
        )
    )
    cold = ColdStart(0.0, 10.0, 1.0)  # 10 us after any idleness of ms
    ends, m = run_frames(engine, [(plan, 5000.0)], cold, cpus=2, smt_per_core=2, smt_throughput=0.5)
    # both cold starts (refills only: no wake-up part) run shared at half speed: 20 us; then
    # the work shared until b's 20 are done (40 us, a's 20 too), a's other 80 alone
    assert rows(m) == [
        (0, "a", "cold_refill", 5000.0, 5020.0),
        (1, "b", "cold_refill", 5000.0, 5020.0),
        (0, "a", "work", 5020.0, 5140.0),
        (1, "b", "work", 5020.0, 5060.0),
    ]
    assert ends == [5140.0]


COLDS = st.sampled_from([(0.0, 0.5, 1.0), (1.0, 2.0, 3.0), (0.5, 5.0, 0.5), (2.0, 0.0, 20.0)])


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(script=scripts_with_run_first(), cold=COLDS, quota=st.none() | st.just((2.0, 5.0)))
def test_generated_plans_with_cold_starts_give_the_same_trace_on_both_engines(
    script, smt, cold, quota
):
    cpus, frames, gaps = script
    quota = None if quota is None else CpuQuota(*quota)
    fast = Machine(cpus, *smt, quota=quota, cold_start=ColdStart(*cold))
    slow = SimpyMachine(cpus, *smt, quota=quota, cold_start=ColdStart(*cold))
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us


@settings(max_examples=100, deadline=None, derandomize=True)
@given(script=scripts_with_run_first(), cold=COLDS)
def test_every_cold_start_is_the_cost_of_the_idle_time_before_it_and_work_is_all_charged(
    script, cold
):
    cpus, frames, gaps = script
    machine = Machine(cpus, cold_start=ColdStart(*cold))
    _execute(machine, frames, gaps)
    on_cpu = defaultdict(list)  # busy rows (computations, spins, cold starts) by CPU
    traced = defaultdict(float)  # computations' time in each frame
    for frame, cpu, _, activity, start, end in machine.trace.rows:
        if "wait" in activity:
            continue
        on_cpu[cpu].append((start, end, activity))
        if activity not in ("lock_spin", "cold_start", "cold_refill"):
            traced[frame] += end - start
    wake, refill_us, decay = cold
    for busy in on_cpu.values():
        busy.sort()
        last_end, idle_end, idle = 0.0, 0.0, 0.0  # the last idle spell: its end and length
        for start, end, activity in busy:
            if activity == "cold_start":  # the wake-up, only after idleness
                assert start > last_end
                assert end - start == pytest.approx(wake, rel=1e-12)
                idle_end, idle = start, start - last_end
            elif activity == "cold_refill":  # the refill: after the wake-up, or alone
                if wake == 0.0:
                    assert start > last_end
                    idle_end, idle = start, start - last_end
                else:
                    assert start == pytest.approx(last_end, abs=1e-9)
                expected = cold_us(0.0, refill_us, decay, idle)
                assert end - start == pytest.approx(expected, rel=1e-12, abs=1e-12)
            else:
                assert start == pytest.approx(last_end, abs=1e-9) or start > last_end
            last_end = max(last_end, end)
        assert idle_end <= last_end
    for frame, plan in enumerate(frames):
        assert traced[frame] == pytest.approx(plan.charged_us(), abs=1e-9)


def cold_platform(tmp_path, wake_us: str, refill_us: str, decay_us: str) -> str:
    """The testbed's platform file with a cold start (its lines before ``[costs]``)."""
    source = Path("simsrv/platforms/this-machine-mvdsv.toml").read_text()
    for key in ("cold_start_us", "cold_refill_us", "cold_decay_us"):
        source = "\n".join(line for line in source.splitlines() if not line.startswith(key))
    lines = (
        f"cold_start_us = {wake_us}\ncold_refill_us = {refill_us}\n"
        f"cold_decay_us = {decay_us}\n\n[costs]"
    )
    path = tmp_path / "cold.toml"
    path.write_text(source.replace("[costs]", lines, 1))
    return f'machine.platform="{path}"'


def test_a_scenario_with_cold_starts_gives_the_same_trace_on_both_engines(tmp_path):
    platform = cold_platform(tmp_path, "10.0", "40.0", "2000.0")
    short = ["run.duration_s=0.2", "run.warmup_s=0.1", "players.count=12", platform]
    path = "scenarios/testbed/mvdsv-dm1.toml"
    fast = simulate(load_scenario(path, short), KEEP_ALL, keep_frames=KEEP_ALL)
    slow = simulate(
        load_scenario(path, [*short, 'machine.engine="simpy"']), KEEP_ALL, keep_frames=KEEP_ALL
    )
    _assert_identical(fast, slow)
    starts = fast.trace[fast.trace.activity == "cold_start"]
    refills = fast.trace[fast.trace.activity == "cold_refill"]
    assert len(starts) > 100 and len(refills) == len(starts)
    assert (starts.end_s - starts.start_s).max() * 1e6 == pytest.approx(10.0, abs=1e-6)
    assert (refills.end_s - refills.start_s).max() * 1e6 <= 40.0


@pytest.mark.parametrize(
    ("wake_us", "refill_us", "decay_us", "field"),
    [
        ("-1.0", "0.0", "1000.0", "cold_start_us"),
        ("0.0", "-2.0", "1000.0", "cold_refill_us"),
        ("1.0", "10.0", "0.0", "cold_decay_us"),
    ],
)
def test_cold_start_fields_out_of_range_are_refused_naming_the_field(
    tmp_path, wake_us, refill_us, decay_us, field
):
    platform = cold_platform(tmp_path, wake_us, refill_us, decay_us)
    with pytest.raises(InputError, match=field):
        load_scenario("scenarios/testbed/mvdsv-dm1.toml", [platform])
