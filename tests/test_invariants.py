"""The invariants checked in every run: they hold on every scenario and on random
plans, and each one catches the violation it is about, naming the frame and the entities."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.cli.main import main
from simsrv.frame_steps import state as STATE
from simsrv.machine import Acquire, Machine, SpinSection
from simsrv.machine.invariants import (
    CHECKS,
    InvariantViolation,
    check_conservation,
    check_locks,
    check_packet_workers,
    check_partition,
    check_trace,
)
from simsrv.pipeline import trace_stream
from simsrv.pipeline.frame_loop import FrameLoop
from tests.scenario_files import HEAVY
from tests.test_machine_properties import scripts

ROOT = Path(__file__).resolve().parents[1]
SHORT = ["--set", "run.duration_s=0.3", "--set", "run.warmup_s=0.1"]


def _run_json(capsys, path: str) -> dict:
    assert main(["run", str(ROOT / path), "--json", *SHORT]) == 0
    return json.loads(capsys.readouterr().out)


# every other shipped scenario reports every check true in tests/test_determinism.py


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(HEAVY))
def test_the_scale_scenarios_report_every_check_true(capsys, path):
    assert _run_json(capsys, path)["checks"] == dict.fromkeys(CHECKS, True)


@pytest.fixture
def lossy_machine(monkeypatch):
    """A machine that loses the trace row of a computation in frame 5 (breaks
    costs_accounted)."""
    original = FrameLoop._plan_and_finish

    def lossy(self, loop, before_execute=None):
        original(self, loop, before_execute)
        if self.table.size - 1 == 5:
            self.machine.trace.size -= 1  # the frame's last row
        return None

    monkeypatch.setattr(FrameLoop, "_plan_and_finish", lossy)


def test_a_violation_is_exit_3_with_one_line_naming_invariant_frame_and_threads(
    capsys, lossy_machine
):
    assert main(["run", "--json", *SHORT]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(
        "simsrv: invariant violated: costs_accounted: frame 5: the plan charged"
    )


@pytest.mark.parametrize("block_rows", [None, 16])
def test_a_violation_still_writes_the_trace_asked_for(
    capsys, lossy_machine, tmp_path, monkeypatch, block_rows
):
    """Found at the end of the run, or as it goes (blocks of 16 rows): the trace written holds
    the frames up to the violation, its own included."""
    if block_rows is not None:
        monkeypatch.setattr(trace_stream, "BLOCK_ROWS", block_rows)
    trace = tmp_path / "t.csv"
    assert main(["run", "--trace", str(trace), *SHORT]) == 3
    assert "costs_accounted: frame 5" in capsys.readouterr().err
    frames = set(pd.read_csv(trace)["frame"])
    assert set(range(6)) <= frames
    assert (max(frames) > 30) == (block_rows is None)  # as it goes: found soon after


def test_a_cpu_running_two_threads_at_once_is_caught(monkeypatch, capsys):
    original = FrameLoop._plan_and_finish

    def overlapping(self, loop, before_execute=None):
        start_s = float(loop.floats[STATE.NOW])
        original(self, loop, before_execute)
        if self.table.size - 1 == 3:  # a phantom thread on CPU 0 in the middle of the frame
            machine = self.machine
            now, end_us = start_s * 1e6, float(loop.floats[STATE.NOW]) * 1e6
            machine.trace.pending.append((3, 0, "ghost", "world", now, end_us))
            machine.trace.flush()
            machine.charged_us[-1] += end_us - now
        return None

    monkeypatch.setattr(FrameLoop, "_plan_and_finish", overlapping)
    assert main(["run", *SHORT]) == 3
    err = capsys.readouterr().err
    assert err.startswith("simsrv: invariant violated: cpu_exclusive: frame 3: cpu 0 runs thread")
    assert "ghost" in err and err.count("\n") == 1


def test_check_trace_names_the_overlapping_threads():
    frame = np.array([0, 0, 1])
    cpu = np.array([0, 1, 0])
    start, end = np.array([0.0, 0.0, 1.0]), np.array([2.0, 2.0, 3.0])
    busy = np.array([True, True, True])
    names = ["a", "b", "c"]
    with pytest.raises(InvariantViolation, match="cpu_exclusive: frame 1: cpu 0 runs thread a"):
        check_trace(frame, cpu, names.__getitem__, start, end, busy, np.array([4.0, 2.0]), 1.0)
    busy[2] = False  # a wait does not hold the CPU
    check_trace(frame, cpu, names.__getitem__, start, end, busy, np.array([4.0, 0.0]), 1.0)
    with pytest.raises(InvariantViolation, match="costs_accounted: frame 1: the plan charged"):
        check_trace(frame, cpu, names.__getitem__, start, end, busy, np.array([4.0, 1.0]), 1.0)
    # with SMT a computation may last up to cost / throughput, not longer
    check_trace(frame, cpu, names.__getitem__, start, end, busy, np.array([2.5, 0.0]), 0.6)
    with pytest.raises(InvariantViolation, match="costs_accounted: frame 0"):
        check_trace(frame, cpu, names.__getitem__, start, end, busy, np.array([2.0, 0.0]), 0.6)


def test_check_locks_names_the_lock_and_both_threads():
    check_locks([("L", 0, "a", 0.0, 2.0), ("L", 0, "b", 2.0, 3.0), (("n", 1), 0, "c", 1.0, 4.0)])
    with pytest.raises(
        InvariantViolation,
        match=r"lock_exclusive: frame 1: lock \('n', 1\) held by thread c \(frame 0\) until "
        r"4.000 us and taken by thread d",
    ):
        check_locks([(("n", 1), 0, "c", 1.0, 4.0), ("L", 0, "a", 0, 9), (("n", 1), 1, "d", 3.0, 5)])


def test_check_conservation_names_every_term():
    ok = {"sent": 10, "lost": 1, "in_flight": 2, "dropped": 0, "processed": 5, "queued": 2}
    check_conservation(ok, 5)
    with pytest.raises(InvariantViolation, match="message_conservation: at the end of the run: "):
        check_conservation({**ok, "sent": 11}, 5)
    with pytest.raises(InvariantViolation, match="5 packets processed but the frames read 6"):
        check_conservation(ok, 6)


GOOD_FRAME = {
    "frame": 7,
    "senders": np.array([3, 9]),
    "entities": np.array([1, 3, 9]),
    "entity_group": np.array([0, 0, 1]),
    "sizes": np.array([2, 1]),
    "assignment": np.array([1, 0]),
    "workers": 2,
}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({}, None),
        ({"entities": np.array([1, 3, 3])}, "frame 7: entity 3 is listed twice"),
        ({"senders": np.array([3, 4])}, "frame 7: entity 4 sent a packet but is in no group"),
        ({"entity_group": np.array([0, 1, 1])}, "frame 7: group 0 holds 1 entities but is sized 2"),
        ({"entity_group": np.array([0, 2, 1])}, "an entity has no group or a group that does"),
        ({"assignment": np.array([1, 2])}, "a group is on no worker or on one that does not"),
        ({"assignment": np.array([1])}, "a group is on no worker"),
    ],
)
def test_the_partition_check_catches_each_kind_of_break(changes, message):
    frame = {**GOOD_FRAME, **changes}
    if message is None:
        check_partition(**frame)
        return
    with pytest.raises(InvariantViolation, match=f"entity_partition: .*{message}"):
        check_partition(**frame)


@pytest.mark.parametrize(
    ("worker", "message"),
    [
        ([0, 1, 1], None),
        ([], None),
        ([0, 2], "frame 3: packet 1 is on worker 2, which does not exist"),
        ([-1, 0], "frame 3: packet 0 is on worker -1"),
    ],
)
def test_the_packet_worker_check_catches_a_packet_on_no_thread(worker, message):
    args = (3, np.array(worker, dtype=np.int64), 2)
    if message is None:
        check_packet_workers(*args)
        return
    with pytest.raises(InvariantViolation, match=f"entity_partition: .*{message}"):
        check_packet_workers(*args)


@settings(max_examples=200, deadline=None)
@given(scripts())
def test_random_plans_keep_every_machine_invariant_and_log_every_critical_section(script):
    cpus, frames, gaps = script
    machine = Machine(cpus)
    now = 0.0
    for index, (plan, gap) in enumerate(zip(frames, gaps, strict=False)):
        now = machine.execute(plan, index, now + gap * 1e-6)
    machine.finish()
    check_locks(machine.lock_holds)
    rows = machine.trace.rows
    columns = list(zip(*rows, strict=True)) if rows else [()] * 6
    frame, cpu, thread, activity, start, end = (np.array(c) for c in columns)
    busy = np.array([not a.endswith("_wait") for a in activity], dtype=bool)
    spin = np.array([a == "lock_spin" for a in activity], dtype=bool)
    check_trace(
        frame.astype(int),
        cpu.astype(int),
        lambda i: thread[i],
        start.astype(float),
        end.astype(float),
        busy,
        np.array(machine.charged_us),
        1.0,
        by_machine=spin,
    )
    # every thread that takes a lock has a logged critical section of it (the phased shortcut
    # logs one superset per lock and phase, the engine one per acquisition)
    taken = {
        (op.lock, index, t.name)
        for index, plan in enumerate(frames)
        for t in plan.threads
        for op in t.ops
        if type(op) in (Acquire, SpinSection)
    }
    assert {hold[:3] for hold in machine.lock_holds} == taken
    acquires = sum(
        type(op) in (Acquire, SpinSection) for plan in frames for t in plan.threads for op in t.ops
    )
    assert len(machine.lock_holds) <= acquires


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(0, 6)),
        max_size=30,
    ),
    st.booleans(),
)
def test_the_in_order_scan_never_passes_what_the_sorted_check_rejects(intervals, by_end):
    """The compiled scan of ``cpu_exclusive`` and ``lock_exclusive`` answers True only when the
    exact check (sort by owner, start (, end), then compare neighbours) finds no overlap; on
    intervals listed in time order per owner it answers exactly that check."""
    from simsrv.machine.invariant_kernels import listed_in_order_without_overlap
    from simsrv.machine.invariants import _first_overlap

    owner = np.array([o for o, _, _ in intervals], np.int64)
    start = np.array([s for _, s, _ in intervals], np.float64)
    end = start + np.array([d for _, _, d in intervals], np.float64)
    rows = np.arange(len(intervals))
    keys = (end, start, owner) if by_end else (start, owner)
    exact = _first_overlap(np.lexsort(keys), owner, start, end) is None
    scan = listed_in_order_without_overlap(rows, owner, start, end, 4, by_end)
    assert not scan or exact
    ordered = np.lexsort((rows, *keys))  # the same intervals listed in time order per owner
    again = listed_in_order_without_overlap(ordered, owner, start, end, 4, by_end)
    assert again == exact
