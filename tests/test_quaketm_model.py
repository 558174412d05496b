"""The QuakeTM comparison's arithmetic: the request stage read from a model trace, the
speedups and the tolerances (exact values from hand-made tables)."""

from __future__ import annotations

import pandas as pd
import pytest

from simsrv.testbed.quaketm_model import compare_rows, speedups, stage_split, waking_s


def _trace(rows):
    return pd.DataFrame(rows, columns=["frame", "thread", "activity", "start_s", "end_s"])


def test_the_request_stage_splits_into_waking_work_lock_waits_and_idle():
    """Frame 1, two threads: the stage runs from thread 0's fork-barrier cost (ends at 10) to
    its first reply (at 50).  Thread 1 wakes 10-14 (signal) and starts work at 14; thread 0
    works 10-20, waits for the lock 20-30 and is woken 30-32 (both the lock's), works 32-40
    and idles at the closing barrier 40-50; thread 1 works 14-45, idles 45-50."""
    us = 1e-6
    trace = _trace(
        [
            (1, "thread0", "frame", 0 * us, 5 * us),
            (1, "thread0", "barrier", 5 * us, 10 * us),
            (1, "thread0", "request", 10 * us, 20 * us),
            (1, "thread0", "lock_wait", 20 * us, 30 * us),
            (1, "thread0", "signal_wakeup", 30 * us, 32 * us),
            (1, "thread0", "request_locked", 32 * us, 40 * us),
            (1, "thread0", "barrier", 40 * us, 40 * us),
            (1, "thread0", "barrier_wait", 40 * us, 50 * us),
            (1, "thread0", "reply", 50 * us, 60 * us),
            (1, "thread1", "barrier", 0 * us, 1 * us),
            (1, "thread1", "fork_wait", 1 * us, 10 * us),
            (1, "thread1", "signal_wakeup", 10 * us, 14 * us),
            (1, "thread1", "request", 14 * us, 45 * us),
            (1, "thread1", "barrier", 45 * us, 45 * us),
            (1, "thread1", "barrier_wait", 45 * us, 50 * us),
        ]
    )
    parts = stage_split(trace, team=2)
    assert parts["stages"] == 1
    assert parts["stage"] == pytest.approx(40 * us)
    assert parts["team"] == pytest.approx(80 * us)
    assert parts["wake"] == pytest.approx(4 * us)  # thread 1's 10-14
    assert parts["work"] == pytest.approx((10 + 8 + 31) * us)
    assert parts["lock_wait"] == pytest.approx(12 * us)  # the wait and its wake-up
    assert parts["idle_end"] == pytest.approx((10 + 5) * us)


def test_the_main_thread_s_leading_cold_start_is_not_frame_compute():
    us = 1e-6
    trace = _trace(
        [
            (3, "thread0", "cold_start", 0 * us, 2 * us),
            (3, "thread0", "cold_refill", 2 * us, 7 * us),
            (3, "thread0", "frame", 7 * us, 9 * us),
            (3, "thread0", "cold_refill", 20 * us, 21 * us),  # later: not the wake
            (4, "thread0", "frame", 100 * us, 101 * us),
        ]
    )
    frames = pd.DataFrame({"frame": [3, 4]})
    assert waking_s(trace, frames) == pytest.approx([7 * us, 0.0])


def _pooled(rows):
    base = {
        "role": "prediction",
        "question": "threads",
        "config.map": "dm1",
        "config.phases": "independent",
        "config.frame_s": 0.1,
        "config.omp_wait": "passive",
        "config.server_cpu": None,
        "config.bind": False,
        "repeats": 3,
    }
    return pd.DataFrame([{**base, **r} for r in rows])


def test_speedups_divide_the_one_thread_time_by_the_many_and_widen_with_the_spread():
    pooled = _pooled(
        [
            {"label": "a", "config.server": "quaketm-fine", "config.threads": 1,
             "config.clients": 16, "frame_compute_ms.mean": 2.0,
             "spread.frame_compute_ms.mean": 0.1},
            {"label": "b", "config.server": "quaketm-fine", "config.threads": 2,
             "config.clients": 16, "frame_compute_ms.mean": 2.5,
             "spread.frame_compute_ms.mean": 0.25},
        ]
    )  # fmt: skip
    model = [{"frame_compute_ms": 1.9}, {"frame_compute_ms": 2.0}]
    table = compare_rows(pooled, model)
    frame = table[table["quantity"] == "frame compute time"]
    assert frame["error"].tolist() == pytest.approx([-0.05, -0.2])
    assert frame["tolerance"].tolist() == pytest.approx([0.10, 0.10])
    gains = speedups(table)
    assert len(gains) == 1
    g = gains.iloc[0]
    assert g["measured"] == pytest.approx(0.8) and g["model"] == pytest.approx(0.95)
    assert g["error"] == pytest.approx(0.95 / 0.8 - 1)
    # the ratio's spread: 0.8 x (0.05 + 0.1) = 0.12, relative 15 %, wider than 10 %
    assert g["tolerance"] == pytest.approx(0.15)
    assert not g["within"]
