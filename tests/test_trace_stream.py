"""The trace taken as the run goes (simsrv.pipeline.trace_stream): what the machine says is settled
holds; runs give the same results to the bit whatever the blocks; the checks taken in blocks
give the whole-trace verdicts; the kept window is the whole trace's rows in it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine import Machine
from simsrv.machine.invariants import InvariantViolation, TraceChecks, check_locks, check_trace
from simsrv.machine.simpy_engine import SimpyMachine
from simsrv.machine.trace import US, LockHolds, Trace
from simsrv.pipeline import frame_loop as runner
from simsrv.pipeline import trace_stream
from simsrv.pipeline.frame_stream import FrameStream
from simsrv.pipeline.keep_window import KEEP_ALL, KeepWindow
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.trace_stream import TraceStream
from simsrv.sweep.grid import GridPoint, GridRun
from simsrv.sweep.records import _gantt, gantt_window
from simsrv.workload.frame_table import FrameTable
from tests.test_engines import scripts_with_run_first

ROOT = Path(__file__).resolve().parents[1]
STREAM_INIT = TraceStream.__init__


# -- what an engine says is settled ------------------------------------------------------------


def _promises_hold(machine, frames, gaps) -> None:
    """Execute the frames; after each, ask how far the records are settled before the next
    frame's start, and check it against every row and critical section recorded later."""
    now, promises = 0.0, []
    starts = [now]
    for index, plan in enumerate(frames):
        now = machine.execute(plan, index, starts[-1])
        starts.append(now + gaps[(index + 1) % len(gaps)] * 1e-6)
        settled = machine.settled_us(starts[-1] * 1e6)
        promises.append((len(machine.trace), len(machine.lock_holds), index, settled))
    machine.finish()
    rows, holds = machine.trace.rows, list(machine.lock_holds)
    for trace_rows, hold_rows, index, settled in promises:
        later_rows, later_holds = rows[trace_rows:], holds[hold_rows:]
        assert all(start >= settled.trace_us for *_, start, _ in later_rows)
        assert all(start >= settled.holds_us for *_, start, _ in later_holds)
        assert settled.holds_us <= settled.trace_us
        open_frame = index + 1 if settled.open_frame is None else settled.open_frame
        assert all(frame >= open_frame for frame, *_ in later_rows)


@settings(max_examples=300, deadline=None)
@given(scripts_with_run_first(), st.booleans())
def test_what_the_machine_says_is_settled_holds_for_every_later_row(script, runs):
    cpus, frames, gaps = script
    _promises_hold(Machine(cpus, runs=runs), frames, gaps)


@settings(max_examples=60, deadline=None)
@given(scripts_with_run_first())
def test_what_the_simpy_engine_says_is_settled_holds_too(script):
    cpus, frames, gaps = script
    _promises_hold(SimpyMachine(cpus), frames, gaps)


@settings(max_examples=100, deadline=None)
@given(scripts_with_run_first())
def test_smt_and_background_load_settle_as_well(script):
    cpus, frames, gaps = script
    machine = Machine(cpus, smt_per_core=2, smt_throughput=0.6, background=(0.3,))
    _promises_hold(machine, frames, gaps)


# -- whole runs: the same to the bit, whatever the blocks --------------------------------------

CASES = {
    "sequential": ("scenarios/cube-160.toml", []),
    "bsp-group": ("scenarios/cube-160.toml", ["server.strategy=bsp-group"]),
    "abdelkhalek (compiled loop)": ("scenarios/cube-160.toml", ["server.strategy=abdelkhalek"]),
    "area-quadrant (compiled loop)": (
        "scenarios/cube-160.toml",
        ["server.strategy=area-quadrant"],
    ),
    "thread per client (threads outlive frames)": (
        "scenarios/abdelkhalek2004/thread-per-client.toml",
        [],
    ),
    "clone, no wait (processes outlive frames)": ("scenarios/cordeiro2007/clone-nowait.toml", []),
    "fork and wait": ("scenarios/cordeiro2007/fork-wait.toml", []),
    "SMT and background load": (
        "scenarios/area2004/threads4-optimized-three-unloaded.toml",
        [],
    ),
    "bandwidth control": ("scenarios/cordeiro2007/sequential-bwcontrol.toml", []),
    "cluster of four": ("scenarios/cluster/nodes4-cpus2-640.toml", []),
    # the reference settles (and drains) only when the machine is idle between frames: without
    # the thread library's signals, whose wake-ups after the last barrier outlive the frame
    "simpy engine": (
        "scenarios/abdelkhalek2004/threads4-region.toml",
        ['machine.engine="simpy"', "machine.costs.signal_send=0", "machine.costs.signal_wakeup=0"],
    ),
}


def _run_in_blocks(monkeypatch, path: str, sets: list[str], block_rows: int):
    """The run's result and the number of blocks its trace was taken in."""
    blocks = []

    def counting_init(self, *args, **kwargs):
        STREAM_INIT(self, *args, **{**kwargs, "block_rows": block_rows})
        blocks.append(self)

    monkeypatch.setattr(TraceStream, "__init__", counting_init)
    monkeypatch.setattr(runner, "STORE_ROOM", min(block_rows, runner.STORE_ROOM))  # calls stop
    scenario = load_scenario(ROOT / path, ["run.duration_s=0.4", "run.warmup_s=0.2", *sets])
    result = run(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    return result, max(stream.blocks for stream in blocks)


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_taken_in_small_blocks_is_the_same_to_the_bit(monkeypatch, case):
    path, sets = CASES[case]
    whole, one = _run_in_blocks(monkeypatch, path, sets, block_rows=1 << 60)
    blocks, many = _run_in_blocks(monkeypatch, path, sets, block_rows=16)
    assert one == 1  # everything at the end
    assert many > 3  # taken as the run went
    a, b = whole.to_json_dict(), blocks.to_json_dict()
    a.pop("wall_time_s"), b.pop("wall_time_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    pd.testing.assert_frame_equal(whole.frames, blocks.frames, check_exact=True)
    pd.testing.assert_frame_equal(whole.trace, blocks.trace, check_exact=True)


def test_a_run_keeps_no_trace_or_frames_unless_asked_and_the_windows_it_asks_for():
    scenario = load_scenario(
        ROOT / "scenarios/cube-160.toml",
        ["run.duration_s=0.3", "run.warmup_s=0.2", "server.strategy=abdelkhalek"],
    )
    nothing = run(scenario)
    assert nothing.trace is None and nothing.frames is None
    whole = run(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    everything, frames = whole.trace, whole.frames
    assert frames.index.tolist() == frames["frame"].tolist() == list(range(len(frames)))
    window = run(scenario, keep_trace=KeepWindow(0.25, 0.3), keep_frames=KeepWindow(0.25, 0.3))
    inside = everything[(everything["end_s"] > 0.25) & (everything["start_s"] < 0.3)]
    pd.testing.assert_frame_equal(
        window.trace.reset_index(drop=True).astype({"thread": str, "activity": str}),
        inside.reset_index(drop=True).astype({"thread": str, "activity": str}),
        check_exact=True,
    )
    inside = frames[(frames["end_s"] > 0.25) & (frames["start_s"] < 0.3)]
    pd.testing.assert_frame_equal(window.frames, inside, check_exact=True)
    first = run(scenario, keep_frames=KeepWindow(0.25, frames=3)).frames
    starting = frames[frames["start_s"] >= 0.25].head(3)
    pd.testing.assert_frame_equal(first[first["start_s"] >= 0.25], starting, check_exact=True)


@pytest.mark.parametrize("strategy", ["abdelkhalek", "bsp-group"])
def test_the_sweeps_gantt_rows_are_the_same_from_its_window(monkeypatch, strategy):
    scenario = load_scenario(
        ROOT / "scenarios/cube-160.toml",
        ["run.duration_s=0.3", "run.warmup_s=0.2", f"server.strategy={strategy}"],
    )
    point = GridPoint(strategy=strategy, cpus=2, clients=160, seed_index=0, seed=1)
    grid_run = GridRun(point, scenario)
    monkeypatch.setattr(trace_stream, "BLOCK_ROWS", 64)
    whole = _gantt(grid_run, run(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL))
    window = gantt_window(grid_run)
    kept = run(scenario, keep_trace=window, keep_frames=window)
    assert len(kept.trace) < len(run(scenario, keep_trace=KEEP_ALL).trace)
    pd.testing.assert_frame_equal(_gantt(grid_run, kept), whole, check_exact=True)


# -- the checks, block by block ----------------------------------------------------------------


@st.composite
def recorded_intervals(draw):
    """Intervals on owners (CPUs, locks) in recording order (by end, as an event engine
    records), frames in time order, a grid of times full of ties; some overlap."""
    n = draw(st.integers(0, 30))
    owners = draw(st.integers(1, 3))
    rows = []
    for _ in range(n):
        start = draw(st.integers(0, 40)) * 0.5
        rows.append((draw(st.integers(0, owners - 1)), start, start + draw(st.integers(1, 6))))
    rows.sort(key=lambda r: (r[2], r[1]))
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=5))))
    return owners, rows, cuts


def _horizons(starts: list[float], cuts: list[int]) -> list[float]:
    """At each cut, the best horizon: the earliest start of a row after it."""
    return [min(starts[c:], default=np.inf) for c in cuts]


@settings(max_examples=300, deadline=None)
@given(recorded_intervals(), st.booleans(), st.integers(-1, 8))
def test_cpu_checks_in_blocks_give_the_whole_trace_verdict(data, waits, bumped):
    """Blocks cut anywhere, with the best horizons: the same verdict as the whole trace
    (``bumped``: a frame whose plan charged 1 us more than it traced; a costs violation in an
    early frame may then be found before a CPU overlap of a later block)."""
    cpus, rows, cuts = data
    frame = np.array([int(start // 5) for _, start, _ in rows], np.int64)
    ints = np.zeros((len(rows), 4), np.int64)
    ints[:, 0], ints[:, 1] = frame, [cpu for cpu, _, _ in rows]
    ints[:, 2] = np.arange(len(rows)) % 2
    times = np.array([(s, e) for _, s, e in rows], np.float64).reshape(-1, 2)
    busy = np.ones(len(rows), bool) if not waits else np.arange(len(rows)) % 3 != 0
    frames = int(frame.max()) + 1 if len(rows) else 0
    b = np.flatnonzero(busy)
    charged = np.bincount(frame[b], weights=times[b, 1] - times[b, 0], minlength=frames)
    if 0 <= bumped < frames:
        charged[bumped] += 1.0
    names = ["a", "b"]
    whole = _verdict(
        lambda: check_trace(
            frame,
            ints[:, 1],
            lambda r: names[ints[r, 2]],
            times[:, 0] * US,
            times[:, 1] * US,
            busy,
            charged * US,
            1.0,
        )  # fmt: skip
    )

    def in_blocks() -> None:
        checks = TraceChecks(names, [], 1.0)
        bounds = [0, *cuts, len(rows)]
        horizons = [*_horizons(list(times[:, 0]), cuts), np.inf]
        for i, horizon in enumerate(horizons):
            lo, hi = bounds[i], bounds[i + 1]
            complete = int(frame[hi:].min()) if hi < len(rows) else frames
            charged_now = charged.tolist() if i == 0 else []
            checks.add(ints[lo:hi], times[lo:hi], busy[lo:hi], *_no_holds(), charged_now)
            checks.advance(horizon, horizon, complete)
        checks.finish()

    blocks = _verdict(in_blocks)
    assert (blocks is None) == (whole is None)
    if not 0 <= bumped < frames:
        assert blocks == whole


def _verdict(check) -> str | None:
    """The invariant a check reports violated, or None."""
    try:
        check()
    except InvariantViolation as violation:
        return violation.invariant
    return None


@settings(max_examples=300, deadline=None)
@given(recorded_intervals())
def test_lock_checks_in_blocks_give_the_whole_trace_verdict(data):
    locks, rows, cuts = data
    holds = LockHolds()
    for i, (lock, start, end) in enumerate(rows):
        holds.pending.append((f"L{lock}", i // 4, "t", start, end))
    whole = _verdict(lambda: check_locks(holds))
    ints, times = holds.columns()
    horizons = [*_horizons(list(times[:, 0]), cuts), np.inf]
    bounds = [0, *cuts, len(rows)]

    def in_blocks() -> None:
        checks = TraceChecks(holds.threads.names, holds.locks.names, 1.0)
        empty = np.zeros((0, 4), np.int64)
        for i, horizon in enumerate(horizons):
            lo, hi = bounds[i], bounds[i + 1]
            checks.add(empty, np.zeros((0, 2)), np.zeros(0, bool), ints[lo:hi], times[lo:hi], [])
            checks.advance(horizon, horizon, 0)

    assert _verdict(in_blocks) == whole


def test_a_row_of_a_frame_already_checked_is_a_violation():
    checks = TraceChecks(["a"], [], 1.0)
    row = np.array([[0, 0, 0, 0]], np.int64)
    checks.add(row, np.array([[0.0, 2.0]]), np.array([True]), *_no_holds(), [2.0])
    checks.advance(3.0, 3.0, 1)
    with pytest.raises(InvariantViolation, match="costs_accounted: frame 0: trace rows of a"):
        checks.add(row, np.array([[3.0, 4.0]]), np.array([True]), *_no_holds(), [])
    checks = TraceChecks(["a"], [], 1.0)
    checks.add(row + [[1, 0, 0, 0]], np.array([[0.0, 2.0]]), np.array([True]), *_no_holds(), [])
    with pytest.raises(InvariantViolation, match="costs_accounted: frame 1: .*never planned"):
        checks.finish()


def _no_holds() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((0, 3), np.int64), np.zeros((0, 2))


def test_a_trace_window_of_frames_ends_with_its_last_frame():
    machine = Machine(1)
    table = FrameTable()
    window = KeepWindow(start_s=2e-6, frames=2)
    stream = TraceStream(machine, table, (0.0, 1.0), 1.0, window, 1)
    frames = FrameStream(table, (0.0, 1.0), window)
    trace: Trace = machine.trace
    for f in range(6):  # frames of 1 us, one row each, from 0 us
        trace.record(f, 0, "main", "world", f, f + 1.0)
        machine.charged_us.append(1.0)
        table.append((f, f * US, (f + 1) * US, US, 1, 1, 0, 0, False, 0), None)
        stream.drain((f + 1) * US)
        frames.release(stream.closed_frames)
    assert table.base >= 4  # frames taken as the run went (drained every 1-row block)
    stream.close()
    frames.close()
    assert stream.kept_trace()["frame"].tolist() == [2, 3]  # frames 2, 3 start at or after 2 us
    assert frames.kept_frames()["frame"].tolist() == [2, 3]
    assert frames.kept_frames().index.tolist() == [2, 3]


def _rows_late_in_a_long_run(costs_us: list[float], at_us: float) -> tuple[np.ndarray, ...]:
    """One frame's busy rows one after another from ``at_us``, each ending at its start plus
    its cost as the machine computes it (a double: the end rounds to the ulp of ``at_us``)."""
    starts, ends, t = [], [], at_us
    for cost in costs_us:
        starts.append(t)
        t = t + cost
        ends.append(t)
    ints = np.zeros((len(costs_us), 4), np.int64)
    return ints, np.column_stack([starts, ends])


@pytest.mark.parametrize("at_s", [1.0, 2e4, 1e6])  # 1e6 s: the longest run the schema allows
def test_costs_accounted_holds_however_late_the_frame(at_s):
    """At 20,000 s a time in us has an ulp of 3.8e-6 us: a frame of a few rows traces a few
    ulps more or less than it was charged, which is rounding, not a lost computation."""
    costs = [37.1233, 0.3, 12.0001, 271.7438, 0.0001]
    ints, times_us = _rows_late_in_a_long_run(costs, at_s * 1e6 + 0.123)
    traced = float((times_us[:, 1] - times_us[:, 0]).sum())
    assert traced != sum(costs) or at_s == 1.0  # the rounding the check must allow
    busy = np.ones(len(costs), bool)
    check_trace(ints[:, 0], ints[:, 1], str, times_us[:, 0] * US, times_us[:, 1] * US, busy,
                np.array([sum(costs) * US]), 1.0)  # fmt: skip
    checks = TraceChecks(["a"], [], 1.0)
    checks.add(ints, times_us, busy, *_no_holds(), [sum(costs)])
    checks.finish()


@pytest.mark.parametrize("at_s", [1.0, 2e4, 1e6])
def test_costs_accounted_still_finds_ten_lost_nanoseconds_late_in_a_long_run(at_s):
    costs = [37.1233, 0.3, 12.0001, 271.7438]
    ints, times_us = _rows_late_in_a_long_run(costs, at_s * 1e6)
    charged = [sum(costs) + 1e-2]  # 10 ns charged that no row traces (ulp at 1e6 s: 0.1 ns)
    checks = TraceChecks(["a"], [], 1.0)
    checks.add(ints, times_us, np.ones(len(costs), bool), *_no_holds(), charged)
    with pytest.raises(InvariantViolation, match="costs_accounted: frame 0"):
        checks.finish()
