"""The compiled frame path's storage: the trace and lock holds as numpy columns, and the ring of
per-tick player arrays the thread strategies plan from."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine.invariants import InvariantViolation, check_locks
from simsrv.machine.trace import LockHolds, Trace, is_wait
from simsrv.strategies.positions import PerTick, slot_of
from tests.strategy_harness import frame_of, make_strategy

THREADS = ["main", "thread0", "thread1", "worker7"]
ACTIVITIES = ["world", "request", "barrier_wait", "lock_wait", "reply"]


@st.composite
def trace_rows(draw):
    """Rows (frame, cpu, thread, activity, start_us, end_us) in batches: each batch is stored
    either as pending tuples or as a direct write of codes into reserved columns."""
    batches = []
    for _ in range(draw(st.integers(0, 6))):
        rows = draw(
            st.lists(
                st.tuples(
                    st.integers(0, 50),
                    st.integers(0, 7),
                    st.sampled_from(THREADS),
                    st.sampled_from(ACTIVITIES),
                    st.floats(0.0, 1e6),
                    st.floats(0.0, 1e6),
                ),
                max_size=40,
            )
        )
        batches.append((draw(st.booleans()), rows))
    return batches


def _write(trace: Trace, direct: bool, rows: list[tuple]) -> None:
    """Store ``rows`` as the array path does (codes written into reserved rows) or as the
    Python engines do (pending tuples)."""
    if not direct:
        trace.pending.extend(rows)
        return
    trace.flush()
    trace.reserve(len(rows))
    for i, (f, c, t, a, s, e) in enumerate(rows):
        row = trace.size + i
        trace.ints[row] = f, c, trace.threads.code(t), trace.activities.code(a)
        trace.times[row] = s, e
    trace.size += len(rows)


@settings(max_examples=100, deadline=None)
@given(trace_rows())
def test_the_trace_keeps_every_row_in_order_and_its_frame_is_the_tuples_frame(batches):
    trace = Trace(capacity=4)  # small: growth happens
    for direct, rows in batches:
        _write(trace, direct, rows)
    expected = [row for _, rows in batches for row in rows]
    assert len(trace) == len(expected)
    assert trace.rows == expected
    # the DataFrame the tuples gave before the columns
    table = np.array(expected, dtype=object).reshape(len(expected), 6)
    old = pd.DataFrame(
        {
            "frame": table[:, 0].astype(np.int64),
            "cpu": table[:, 1].astype(np.int32),
            "thread": pd.Categorical(table[:, 2]),
            "activity": pd.Categorical(table[:, 3]),
            "start_s": table[:, 4].astype(np.float64) * 1e-6,
            "end_s": table[:, 5].astype(np.float64) * 1e-6,
        }
    )
    old["busy"] = ~old["activity"].isin([a for a in ACTIVITIES if is_wait(a)])
    new = trace.to_frame()
    if len(expected):
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert new["busy"].tolist() == trace.busy().tolist()


def test_lock_holds_share_the_traces_thread_codes_and_check_as_tuples():
    trace = Trace()
    holds = LockHolds(threads=trace.threads)
    trace.threads.code("b")
    holds.pending += [(("node", 1), 0, "a", 0.0, 2.0), ("gamestate", 0, "b", 1.0, 3.0)]
    holds.flush()
    assert holds.threads.names == ["b", "a"]
    assert list(holds) == [(("node", 1), 0, "a", 0.0, 2.0), ("gamestate", 0, "b", 1.0, 3.0)]
    check_locks(holds)
    holds.pending.append((("node", 1), 1, "c", 1.5, 4.0))
    try:
        check_locks(holds)
    except InvariantViolation as violation:
        assert "lock ('node', 1) held by thread a (frame 0)" in str(violation)
    else:
        raise AssertionError("overlapping sections of ('node', 1) were not caught")


class TickWorld:
    """Positions that differ at every tick (player p at tick t: x = t + p)."""

    players = 3

    def __init__(self) -> None:
        self.asked: list[int] = []

    def positions(self, tick: int) -> np.ndarray:
        self.asked.append(tick)
        return np.array([[tick + p, 0.0, 0.0] for p in range(self.players)])


def _compute(origins: np.ndarray) -> tuple[np.ndarray, ...]:
    return origins[:, 0].astype(np.int64), np.repeat(origins[:, :1].astype(np.uint8), 2, axis=1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=12), max_size=30))
def test_the_ring_holds_every_tick_a_frame_needs_and_computes_each_once_while_kept(frames):
    world = TickWorld()
    ring = PerTick(world, _compute, keep=4)  # small: frames need more ticks than slots
    for ticks in frames:
        wanted = np.array(ticks, np.int64)
        before = len(world.asked)
        held = set(ring.ticks.tolist())
        ring.load(wanted)
        assert sorted(world.asked[before:]) == sorted(set(ticks) - held)  # only the missing
        for tick in ticks:
            slot = slot_of(ring.ticks, tick, -1)
            assert slot >= 0 and ring.ticks[slot] == tick
            first, second = (table[slot] for table in ring.tables)
            assert first.tolist() == [tick + p for p in range(3)]
            assert second.tolist() == [[(tick + p) % 256] * 2 for p in range(3)]
    assert slot_of(ring.ticks, -5, 0) == -1


def test_a_frame_whose_packets_span_more_ticks_than_the_ring_plans_as_at_one_tick():
    # the harness's world stands still: 80 packets from 80 ticks (the ring keeps 64, so it
    # grows) make the same plan as the same packets sent at one tick
    positions = np.array([[300.0, 300.0, 24.0], [1500.0, 700.0, 24.0]])
    options = {"threads": 2, "gamestate_share": 0.5}
    costs = {"lock_acquire": 1.0, "lock_per_node": 10.0, "request_per_message": 5.0}
    spread = make_strategy("abdelkhalek", positions, options, 2, costs)
    frame = frame_of([0, 1] * 40)
    frame.messages["tick"] = np.arange(1000, 1080)
    plan = spread.plan(frame)
    assert len(spread.player_locks.ticks) >= 80
    same = make_strategy("abdelkhalek", positions, options, 2, costs).plan(frame_of([0, 1] * 40))
    for got, expected in zip(plan[:5], same[:5], strict=True):
        assert got.tolist() == expected.tolist()
    assert (plan.kind == 2).sum() >= 80 * 3  # areanode path, client record, game state
