"""The two machine engines give identical traces: ``fast`` (the default, with exact
shortcuts) and ``simpy`` (simpy processes, resources and events, op by op), on every scenario in
scenarios/ and on generated plans, with and without SMT."""

from __future__ import annotations

from math import inf
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine import Compute, FramePlan, Join, Machine, RunFirst, Thread
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from tests.scenario_files import HEAVY, SCENARIOS, scenario_params
from tests.test_machine_properties import scripts

ROOT = Path(__file__).resolve().parents[1]
SHORT = ["run.duration_s=0.2", "run.warmup_s=0.1"]
SMT = [(1, 1.0), (2, 0.6), (3, 0.5)]  # (logical CPUs per core, throughput while shared)


def _sorted(trace: pd.DataFrame) -> pd.DataFrame:
    columns = ["frame", "cpu", "thread", "activity", "start_s", "end_s", "busy"]
    out = trace[columns].astype({"thread": str, "activity": str})
    return out.sort_values(columns).reset_index(drop=True)


def _both(path: str) -> tuple:
    fast = simulate(load_scenario(ROOT / path, SHORT), KEEP_ALL, keep_frames=KEEP_ALL)
    slow = simulate(
        load_scenario(ROOT / path, [*SHORT, 'machine.engine="simpy"']),
        KEEP_ALL,
        keep_frames=KEEP_ALL,
    )
    return fast, slow


def _assert_identical(fast, slow) -> None:
    pd.testing.assert_frame_equal(_sorted(fast.trace), _sorted(slow.trace), check_exact=True)
    pd.testing.assert_frame_equal(fast.frames, slow.frames, check_exact=True)
    assert fast.accounting == slow.accounting
    assert fast.end_s == slow.end_s
    assert slow.checks == fast.checks


@pytest.mark.parametrize("path", scenario_params([p for p in SCENARIOS if p not in HEAVY]))
def test_every_scenario_gives_the_same_trace_on_both_engines(path):
    fast, slow = _both(path)
    assert len(fast.trace) > 0
    _assert_identical(fast, slow)


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(HEAVY))
def test_the_scale_scenarios_give_the_same_trace_on_both_engines(path):
    _assert_identical(*_both(path))


def _execute(machine, frames, gaps) -> tuple[list[float], list[tuple]]:
    now, ends = 0.0, []
    for index, (plan, gap) in enumerate(zip(frames, gaps, strict=False)):
        now = machine.execute(plan, index, now + gap * 1e-6)
        ends.append(now)
    machine.finish()
    return ends, sorted(machine.trace.rows, key=repr)


@st.composite
def scripts_with_run_first(draw):
    """The machine property scripts, where a join may be a run-first wait (the parent of a
    forked child may migrate to an idle CPU after a delay)."""
    cpus, frames, gaps = draw(scripts())
    out = []
    for plan in frames:
        threads = []
        for thread in plan.threads:
            ops = tuple(
                RunFirst(op.thread, draw(st.sampled_from([0.0, 1.0, 2.5])))
                if type(op) is Join and draw(st.booleans())
                else op
                for op in thread.ops
            )
            threads.append(thread._replace(ops=ops))
        out.append(plan._replace(threads=tuple(threads)))
    return cpus, out, gaps


def _same_on_both(script, smt: tuple[int, float]) -> None:
    cpus, frames, gaps = script
    fast = Machine(cpus, *smt)
    slow = SimpyMachine(cpus, *smt)
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=40, deadline=None)
@given(script=scripts_with_run_first())
def test_generated_plans_give_the_same_trace_on_both_engines(script, smt):
    _same_on_both(script, smt)


@pytest.mark.slow
@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=500, deadline=None)
@given(script=scripts_with_run_first())
def test_generated_plans_give_the_same_trace_on_both_engines_long(script, smt):
    _same_on_both(script, smt)


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    script=scripts_with_run_first(),
    shares=st.lists(st.sampled_from([0.0, 0.25, 0.5]), min_size=1, max_size=4),
)
def test_generated_plans_with_background_load_give_the_same_trace_on_both_engines(
    script, smt, shares
):
    cpus, frames, gaps = script
    background = tuple(shares[:cpus])
    fast = Machine(cpus, *smt, background=background)
    slow = SimpyMachine(cpus, *smt, background=background)
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us


@pytest.mark.parametrize("engine", [Machine, SimpyMachine])
@settings(max_examples=30, deadline=None)
@given(
    share=st.floats(0.0, 0.9),
    cost=st.floats(1.0, 1e4),
    smt=st.sampled_from([(1, 1.0), (2, 0.6)]),
)
def test_background_load_slows_a_computation_on_its_cpu_by_exactly_its_share(
    engine, share, cost, smt
):
    # CPU 1 carries the load; a thread there and one on CPU 2 (another core) compute the same
    machine = engine(4, *smt, background=(0.0, share))
    plan = FramePlan(
        (
            Thread("main", 2, (Compute("work", cost),)),
            Thread("loaded", 1, (Compute("work", cost),)),
        )
    )
    machine.execute(plan, 0, 0.0)
    machine.finish()
    took = {row[2]: (row[5] - row[4]) for row in machine.trace.rows}
    assert took["main"] == pytest.approx(cost, rel=1e-9)  # an unloaded CPU: full speed
    assert took["loaded"] * (1.0 - share) == pytest.approx(cost, rel=1e-9)


def test_a_scenario_with_background_load_gives_the_same_trace_on_both_engines():
    sets = [
        "server.strategy=abdelkhalek",
        "machine.cpus=4",
        "machine.background=[0, 0, 0, 0.5]",
        "players.count=24",
        "run.duration_s=0.3",
        "run.warmup_s=0",
    ]
    fast = simulate(load_scenario(None, sets), KEEP_ALL, keep_frames=KEEP_ALL)
    slow = simulate(
        load_scenario(None, [*sets, 'machine.engine="simpy"']), KEEP_ALL, keep_frames=KEEP_ALL
    )
    pd.testing.assert_frame_equal(fast.trace, slow.trace)
    on_loaded = fast.trace[(fast.trace.cpu == 3) & (fast.trace.activity == "request")]
    assert len(on_loaded) > 0


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    script=scripts_with_run_first(),
    send=st.sampled_from([0.0, 0.5, 2.0]),
    wakeup=st.sampled_from([0.0, 1.0, 3.5]),
)
def test_generated_plans_with_signal_wakeups_give_the_same_trace_on_both_engines(
    script, smt, send, wakeup
):
    """A thread library that wakes sleepers with signals (LinuxThreads): barriers' and locks'
    wake-ups cost the same on both engines, to the bit."""
    cpus, frames, gaps = script
    fast = Machine(cpus, *smt, signal_send_us=send, signal_wakeup_us=wakeup)
    slow = SimpyMachine(cpus, *smt, signal_send_us=send, signal_wakeup_us=wakeup)
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    script=scripts_with_run_first(),
    send=st.sampled_from([0.0, 0.5, 2.0]),
    wakeup=st.sampled_from([0.0, 1.0, 3.5, 20.0]),
)
def test_generated_plans_with_barging_locks_give_the_same_trace_on_both_engines(
    script, smt, send, wakeup
):
    """Futex mutexes (a release frees the lock and wakes a waiter who tries again): the same
    trace, lock holds and frame ends on both engines, to the bit."""
    cpus, frames, gaps = script
    kwargs = {"signal_send_us": send, "signal_wakeup_us": wakeup, "lock_barging": True}
    fast = Machine(cpus, *smt, **kwargs)
    slow = SimpyMachine(cpus, *smt, **kwargs)
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us
    assert sorted(fast.lock_holds.rows, key=repr) == sorted(slow.lock_holds.rows, key=repr)


class _Arrivals:
    """Packet arrivals handed to a machine ``chunk_us`` at a time, as the client stream does
    (the machine asks for the next chunk when it must look past the last one)."""

    def __init__(self, times: list[float], chunk_us: float) -> None:
        self.times, self.chunk_us, self.horizon = sorted(times), chunk_us, 0.0
        self.machine, self.readable = None, []

    def __call__(self) -> None:
        start, self.horizon = self.horizon, self.horizon + self.chunk_us
        chunk = [t for t in self.times if start <= t < self.horizon]
        last = self.horizon >= (self.times[-1] if self.times else 0.0) + self.chunk_us
        self.readable.extend(self.machine.add_interrupts(chunk, inf if last else self.horizon))


def _with_interrupts(engine, cpus, smt, irq_cpu, softirq, times, chunk, backlog, **signals):
    arrivals = _Arrivals(times, chunk)
    machine = engine(
        cpus, *smt, irq_cpu=irq_cpu, softirq_us=softirq, max_backlog=backlog,
        interrupt_source=arrivals, **signals,
    )  # fmt: skip
    arrivals.machine = machine
    return machine


@pytest.mark.parametrize("smt", SMT)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    script=scripts_with_run_first(),
    irq=st.integers(0, 7),
    softirq=st.sampled_from([0.5, 2.0, 7.0]),
    times=st.lists(st.integers(0, 400).map(lambda t: t / 2), max_size=60),
    chunk=st.sampled_from([3.0, 20.0, 1e4]),
    signals=st.sampled_from([(0.0, 0.0), (0.5, 1.0)]),
    backlog=st.sampled_from([1, 3, 300]),
)
def test_generated_plans_with_an_interrupt_cpu_give_the_same_trace_on_both_engines(
    script, smt, irq, softirq, times, chunk, signals, backlog
):
    """Packets' softirqs on an interrupt CPU (preempting its thread, busy for its SMT
    siblings; a short backlog drops some), the schedule handed over in chunks: the same trace
    on both engines, to the bit; arrivals on a half-us grid meet the plans' event times
    exactly."""
    cpus, frames, gaps = script
    send, wakeup = signals
    kwargs = {"signal_send_us": send, "signal_wakeup_us": wakeup}
    args = (cpus, smt, irq % cpus, softirq, times, chunk, backlog)
    fast = _with_interrupts(Machine, *args, **kwargs)
    slow = _with_interrupts(SimpyMachine, *args, **kwargs)
    assert _execute(fast, frames, gaps) == _execute(slow, frames, gaps)
    assert fast.charged_us == slow.charged_us
    # the same packets dropped, the same readable times (of those both asked for: the fast
    # engine asks ahead, for the latest end a frame may have)
    fast_ends, slow_ends = fast.interrupt_source.readable, slow.interrupt_source.readable
    both = min(len(fast_ends), len(slow_ends))
    np.testing.assert_array_equal(fast_ends[:both], slow_ends[:both])
