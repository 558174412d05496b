"""Metrics derived from hand-made traces."""

from __future__ import annotations

import pandas as pd
import pytest

from simsrv.metrics import parallel_fraction
from simsrv.metrics.timeline import busy_cpu_levels


def trace(rows):
    df = pd.DataFrame(rows, columns=["cpu", "activity", "start_s", "end_s"])
    df["busy"] = ~df["activity"].isin(["barrier_wait", "lock_wait", "join_wait"])
    return df


def test_parallel_fraction_counts_only_all_cpus_busy():
    t = trace(
        [
            (0, "world", 0.0, 4.0),
            (1, "request", 1.0, 3.0),
            (1, "barrier_wait", 3.0, 4.0),  # blocked: not busy
            (0, "request", 6.0, 8.0),
            (1, "request", 6.0, 10.0),
        ]
    )
    # both busy during [1, 3] and [6, 8]: 4 of 10 seconds
    assert parallel_fraction(t, 2, 0.0, 10.0) == pytest.approx(0.4)
    assert parallel_fraction(t, 2, 2.0, 7.0) == pytest.approx(2.0 / 5.0)
    assert parallel_fraction(t, 1, 0.0, 10.0) == pytest.approx(8.0 / 10.0)


def test_back_to_back_intervals_do_not_create_spurious_levels():
    t = trace([(0, "a", 0.0, 1.0), (0, "b", 1.0, 2.0), (1, "c", 0.0, 2.0)])
    times, levels = busy_cpu_levels(t)
    assert times.tolist() == [0.0, 1.0, 2.0]
    assert levels.tolist() == [2, 2, 0]
    assert parallel_fraction(t, 2, 0.0, 2.0) == pytest.approx(1.0)


def test_cumulative_time_is_zero_before_the_first_event():
    import numpy as np

    from simsrv.metrics.timeline import cumulative_time, interval_levels

    times, levels = interval_levels(np.array([10.0]), np.array([30.0]))
    at = cumulative_time(times, levels >= 1)
    assert at(0.0) == 0.0 and at(10.0) == 0.0
    assert at(20.0) == 10.0 and at(40.0) == 20.0
