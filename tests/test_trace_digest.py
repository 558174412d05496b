"""The trace digest (simsrv.metrics.trace_digest) against the pandas metrics of the whole trace,
and fed in blocks against fed at once: equal to the bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine.trace import Trace
from simsrv.metrics.kahan import GroupSums
from simsrv.metrics.level_sweep import LevelSweep
from simsrv.metrics.moments import moments, os_time_fraction
from simsrv.metrics.stages import per_thread
from simsrv.metrics.timeline import (
    all_busy_time,
    clip_intervals,
    cumulative_time,
    interval_levels,
    window_share,
)
from simsrv.metrics.trace_digest import ALL_FRAMES, TraceDigest, digest_store
from simsrv.metrics.waiting import waiting_fractions

ACTIVITIES = [
    "world", "request", "reply", "net_send", "teardown", "spawn", "frame",
    "lock_wait", "barrier_wait", "end_barrier_wait", "runqueue_wait",
]  # fmt: skip
THREADS = ["coordinator", "worker0", "worker1", "worker2"]


def random_run(seed: int, frames: int, cpus: int) -> tuple[Trace, pd.DataFrame]:
    """Frames one after another, each with rows inside it, listed frame by frame (what a
    machine that is idle between frames records); times on a coarse grid, so ties abound."""
    rng = np.random.default_rng(seed)
    trace, rows, t = Trace(), [], 0.0
    for f in range(frames):
        start = t
        length = float(rng.integers(1, 40)) * 2.5
        for _ in range(rng.integers(0, 8)):
            a, b = np.sort(rng.integers(0, 17, 2)) * length / 16
            if b > a:
                thread = (
                    THREADS[rng.integers(len(THREADS))] if rng.random() < 0.8 else "coordinator"
                )
                activity = ACTIVITIES[rng.integers(len(ACTIVITIES))]
                trace.record(f, int(rng.integers(cpus)), thread, activity, start + a, start + b)
        t = start + length + float(rng.integers(0, 3)) * 5.0
        rows.append((f, start * 1e-6, (start + length) * 1e-6))
    frames_df = pd.DataFrame(rows, columns=["frame", "start_s", "end_s"])
    return trace, frames_df


def pandas_metrics(trace: Trace, frames: pd.DataFrame, t0: float, t1: float, cpus: int) -> dict:
    """The summary's trace metrics with the pandas functions on the whole trace."""
    df = trace.to_frame()
    measured = frames[(frames["start_s"] >= t0) & (frames["start_s"] < t1)]
    busy_f = all_busy_time(df, cpus)
    clipped = clip_intervals(df, t0, t1)
    return {
        "parallel_fraction": window_share(busy_f, t0, t1),
        "moments": moments(measured, df, busy_f),
        "os_time_fraction": os_time_fraction(clipped, cpus, t1 - t0),
        **waiting_fractions(clipped, t0, t1),
        "per_thread": per_thread(clipped, t1 - t0),
    }


def digest_in_blocks(
    trace: Trace, frames: pd.DataFrame, t0: float, t1: float, cpus: int, cuts: list[int]
) -> dict:
    """The digest fed the rows in blocks cut at ``cuts``; after each block, the horizon is the
    earliest start of the rows still to come, and the complete frames those before theirs."""
    ints, times = trace.columns()
    digest = TraceDigest(t0, t1, cpus)
    edges = [0, *sorted(c % (len(ints) + 1) for c in cuts), len(ints)]
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        digest.add(ints[a:b], times[a:b], trace.threads.names, trace.activities.names)
        rest = slice(b, None)
        if b < len(ints):
            horizon = float(times[rest, 0].min() * 1e-6)
            complete = int(ints[rest, 0].min())
            digest.advance(min(horizon, float(frames["start_s"].iloc[complete])), complete, frames)
    digest.advance(np.inf, ALL_FRAMES, frames)
    return digest.summary()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    frames=st.integers(1, 30),
    cpus=st.integers(1, 3),
    window=st.tuples(st.integers(0, 400), st.integers(1, 800)),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_digest_equals_the_pandas_metrics_whatever_the_blocks(seed, frames, cpus, window, cuts):
    trace, frames_df = random_run(seed, frames, cpus)
    if len(trace) == 0:
        return
    t0 = window[0] * 1e-6
    t1 = t0 + window[1] * 1e-6
    whole = digest_store(trace, frames_df, t0, t1, cpus)
    reference = pandas_metrics(trace, frames_df, t0, t1, cpus)
    for key, value in reference.items():
        assert whole[key] == value, key
    assert digest_in_blocks(trace, frames_df, t0, t1, cpus, cuts) == whole


def test_kahan_group_sums_match_pandas_grouped_sums_bit_for_bit():
    rng = np.random.default_rng(3)
    values = rng.random(5000) * 10.0 ** rng.integers(-9, 4, 5000)
    groups = rng.integers(0, 6, 5000)
    sums = GroupSums()
    for block in np.array_split(np.arange(5000), 7):  # continued over blocks
        sums.add(values[block], groups[block])
    expected = pd.Series(values).groupby(groups).sum()
    assert [sums.get(g) for g in expected.index] == expected.tolist()
    assert sums.get(99, -1.0) == -1.0


def test_level_sweep_equals_the_whole_step_function_and_keeps_its_horizon():
    starts = np.array([0.0, 1.0, 1.0, 3.0, 6.0])
    ends = np.array([2.0, 4.0, 5.0, 4.0, 7.0])
    times, levels = interval_levels(starts, ends)
    whole = cumulative_time(times, levels >= 2)
    sweep = LevelSweep(2)
    sweep.add(starts[:3], ends[:3])
    sweep.advance(3.0)  # the next interval starts at 3
    assert sweep.at(2.5) == whole(2.5) == 1.5
    assert sweep.at(3.0) == whole(3.0)
    with pytest.raises(ValueError, match="horizon"):
        sweep.at(3.5)
    with pytest.raises(ValueError, match="horizon"):
        sweep.add(np.array([2.0]), np.array([2.5]))
    sweep.add(starts[3:], ends[3:])
    sweep.advance(np.inf)
    grid = np.linspace(-1.0, 8.0, 37)
    assert np.array_equal(sweep.at(grid), whole(grid))
    sweep.forget_before(4.5)
    assert np.array_equal(sweep.at(grid[grid >= 4.5]), whole(grid[grid >= 4.5]))
