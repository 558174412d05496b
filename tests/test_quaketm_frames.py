"""QuakeTM's per-frame records read into the frames and threads tables: exact values from a
hand-made record file, and the parts of the team's time adding up (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.testbed.quaketm_frames import MAGIC, RECORD, THREAD_SLOTS, read_quaketm_frames


def _write(path, records: np.ndarray) -> None:
    header = np.array([MAGIC, RECORD.itemsize, THREAD_SLOTS, 0], "<u4").tobytes()
    path.write_bytes(header + records.tobytes() + b"\x00" * 10)  # a partial record at the end


def _two_thread_frame() -> np.ndarray:
    r = np.zeros(2, RECORD)
    r["wall_start_s"] = [10.0, 10.1]
    r["wall_end_s"] = [10.002, 10.1005]
    r["threads"] = 2
    r["wall_region_s"] = [0.001, 0.0]  # the second frame had no packets
    r["packets"], r["tasks"] = [5, 0], [3, 0]
    t = r["thread"][0]
    # thread 0: enters at 0, tasks 10-400 us and 500-700 us, leaves at 950 us
    t[0] = (
        0.0,
        10e-6,
        700e-6,
        950e-6,
        590e-6,
        580e-6,
        940e-6,
        (20e-6, 0, 0, 0),
        (400e-6, 30e-6, 0, 0),
        (6, 9, 1, 2),
        (1, 0, 0, 0),
        2,
        3,
    )
    # thread 1: woken at 300 us, one task 310-900 us, leaves at 960 us
    t[1] = (
        300e-6,
        310e-6,
        900e-6,
        960e-6,
        590e-6,
        585e-6,
        655e-6,
        (50e-6, 5e-6, 0, 0),
        (200e-6, 10e-6, 0, 0),
        (3, 4, 0, 1),
        (1, 1, 0, 0),
        1,
        2,
    )
    return r


def test_a_hand_made_frame_reads_back_exactly(tmp_path):
    path = tmp_path / "frames.bin"
    _write(path, _two_thread_frame())
    frames, threads = read_quaketm_frames(path)
    assert list(frames["frame"]) == [0, 1]
    assert frames["wall_us"].tolist() == pytest.approx([2000.0, 500.0])
    assert list(threads["frame"]) == [0, 0]  # no request stage in frame 1
    t0, t1 = threads.iloc[0], threads.iloc[1]
    assert t0["idle_end_us"] == pytest.approx(250.0)  # 950 - 700
    assert t0["overhead_us"] == pytest.approx(950.0 - 0.0 - 590.0 - 250.0)
    assert t1["idle_end_us"] == pytest.approx(60.0)
    assert t1["overhead_us"] == pytest.approx(960.0 - 300.0 - 590.0 - 60.0)
    f = frames.iloc[0]
    assert f["request_work_us"] == pytest.approx(1180.0)
    assert f["lock_wait_global_us"] == pytest.approx(70.0)
    assert f["lock_wait_areanode_us"] == pytest.approx(5.0)
    assert f["lock_held_global_us"] == pytest.approx(600.0)
    assert f["lock_held_areanode_us"] == pytest.approx(40.0)
    assert f["lock_acquires_areanode"] == 13 and f["lock_contended_global"] == 2
    assert f["wake_us"] == pytest.approx(300.0)
    assert f["join_us"] == pytest.approx(2 * 1000.0 - 950.0 - 960.0)
    team = 2 * f["request_wall_us"]
    parts = f["wake_us"] + f["request_work_us"] + f["idle_end_us"] + f["overhead_us"] + f["join_us"]
    assert parts == pytest.approx(team)


def test_a_file_of_another_version_is_refused(tmp_path):
    path = tmp_path / "frames.bin"
    path.write_bytes(np.array([MAGIC, RECORD.itemsize + 8, THREAD_SLOTS, 0], "<u4").tobytes())
    with pytest.raises(ValueError, match="not a QuakeTM frame file of this version"):
        read_quaketm_frames(path)


@settings(max_examples=40, deadline=None)
@given(
    team=st.integers(1, THREAD_SLOTS),
    data=st.data(),
)
def test_the_parts_of_the_team_time_add_up(tmp_path_factory, team, data):
    """Whatever the threads' timelines inside a stage, wake + work + idle + overhead + join is
    the team's time, team x the stage's wall time."""
    r = np.zeros(1, RECORD)
    wall_us = data.draw(st.floats(50.0, 5000.0))
    r["wall_region_s"], r["threads"] = wall_us * 1e-6, team
    for k in range(team):
        enter = data.draw(st.floats(0.0, wall_us / 2))
        exit_ = data.draw(st.floats(enter, wall_us))
        tasks = data.draw(st.integers(0, 4))
        last = data.draw(st.floats(enter, exit_)) if tasks else -1e6
        work = data.draw(st.floats(0.0, max(last - enter, 0.0))) if tasks else 0.0
        slot = r["thread"][0, k]
        slot["enter_s"], slot["exit_s"], slot["tasks"] = enter * 1e-6, exit_ * 1e-6, tasks
        slot["last_task_end_s"], slot["task_wall_s"] = last * 1e-6, work * 1e-6
    path = tmp_path_factory.mktemp("q") / "frames.bin"
    _write(path, r)
    frames, _ = read_quaketm_frames(path)
    f = frames.iloc[0]
    parts = f["wake_us"] + f["request_work_us"] + f["idle_end_us"] + f["overhead_us"] + f["join_us"]
    assert parts == pytest.approx(team * wall_us, rel=1e-9, abs=1e-6)
