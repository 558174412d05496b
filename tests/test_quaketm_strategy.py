"""The ``quaketm`` strategy: exact timelines of hand-made frames, and the fixed frame period."""

from __future__ import annotations

import numpy as np
import pytest

from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from tests.strategy_harness import execute, floor, frame_of, make_strategy

POSITIONS = floor([(100.0, 100.0), (300.0, 300.0), (500.0, 500.0)])


def _strategy(variant: str, threads: int, **costs):
    options = {"variant": variant, "threads": threads, "locked_share": 0.5}
    return make_strategy("quaketm", POSITIONS, options, 2, costs)


def _intervals(trace, thread: str, activity: str) -> list[tuple[float, float]]:
    rows = trace[(trace["thread"] == thread) & (trace["activity"] == activity)]
    return [
        (round(s * 1e6, 6), round(e * 1e6, 6))
        for s, e in zip(rows.start_s, rows.end_s, strict=True)
    ]


def test_the_global_build_runs_one_task_at_a_time_under_the_global_lock():
    """Two clients, one packet each (10 us of request work): thread 0 runs client 0's task
    0-10, thread 1 waits for the lock and runs client 1's 10-20; the replies follow."""
    strategy = _strategy("global", 2, request_per_message=10.0, reply_per_client=1.0)
    end, trace = execute(strategy, frame_of([0, 1]), 2)
    assert _intervals(trace, "thread0", "request") == [(0.0, 10.0)]
    assert _intervals(trace, "thread1", "request") == [(10.0, 20.0)]
    assert _intervals(trace, "thread1", "lock_wait") == [(0.0, 10.0)]
    assert _intervals(trace, "thread0", "reply") == [(20.0, 22.0)]
    assert end == pytest.approx(22.0)


def test_the_coarse_build_overlaps_the_unlocked_parsing_and_serialises_the_sections():
    """Two clients, 10 us each, half of it in five global-lock sections of 1 us: both threads
    parse at once (0-5), then take turns at the lock: 5 section pairs, 10 us in all."""
    strategy = _strategy("coarse", 2, request_per_message=10.0)
    end, trace = execute(strategy, frame_of([0, 1]), 2)
    assert _intervals(trace, "thread0", "request") == [(0.0, 5.0)]
    assert _intervals(trace, "thread1", "request") == [(0.0, 5.0)]
    locked = sorted(
        _intervals(trace, "thread0", "request_locked")
        + _intervals(trace, "thread1", "request_locked")
    )
    assert len(locked) == 10 and locked[0][0] == 5.0 and locked[-1][1] == 15.0
    assert all(b[0] >= a[1] for a, b in zip(locked, locked[1:], strict=False))  # never two at once
    assert end == pytest.approx(15.0)


def test_a_client_s_packets_stay_in_one_task_and_tasks_go_to_the_first_free_thread():
    """Client 0 sends two packets, client 1 one (5 us each, no locks contended in the serial
    parse share): list scheduling gives client 0's task (10 us) to thread 0 and client 1's to
    thread 1, free first."""
    strategy = _strategy("global", 2, request_per_message=5.0)
    _, trace = execute(strategy, frame_of([0, 1, 0]), 2)
    assert len(_intervals(trace, "thread0", "request")) == 2
    assert len(_intervals(trace, "thread1", "request")) == 1


def test_the_serial_build_is_one_thread_reading_and_processing():
    strategy = _strategy("serial", 2, request_per_message=4.0, net_recv_per_message=1.0)
    end, trace = execute(strategy, frame_of([0, 1, 2]), 2)
    assert set(trace["thread"]) == {"thread0"}
    assert end == pytest.approx(3 * 5.0)


def _periodic_frames(period_s: float, clients: int = 8) -> np.ndarray:
    scenario = load_scenario(
        None,
        [
            f"server.frame_period_s={period_s!r}",
            f"players.count={clients}",
            "run.duration_s=1.0",
            "run.warmup_s=0.2",
        ],
    )
    return run(scenario, keep_frames=KEEP_ALL).frames


def test_frames_start_every_period_whether_packets_wait_or_not():
    frames = _periodic_frames(0.05)
    gaps = np.diff(frames["start_s"].to_numpy())
    assert gaps == pytest.approx(np.full(len(gaps), 0.05), abs=1e-9)
    assert len(frames) == pytest.approx(1.2 / 0.05, abs=1)


def test_a_frame_that_overruns_the_period_starts_the_next_at_once():
    frames = _periodic_frames(1e-5, clients=160)  # a 10 us period: every frame overruns
    starts, ends = frames["start_s"].to_numpy(), frames["end_s"].to_numpy()
    assert (frames["duration_s"] > 1e-5).all()
    assert starts[1:] == pytest.approx(ends[:-1], abs=1e-12)
