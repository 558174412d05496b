"""The frame records taken as the run goes: the digest gives the summary's per-frame metrics
whatever the blocks, and the frame table holds only the frames not taken yet.  The frames kept
(windows, whole runs in small blocks) are checked in ``tests/test_trace_stream.py``, beside the
trace rows kept."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsrv.pipeline.frame_loop as runner
import simsrv.pipeline.trace_stream as trace_stream
from simsrv.metrics.frame_digest import ExactSum, FrameDigest
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.workload.frame_table import FrameTable

ROOT = Path(__file__).resolve().parents[1]
T0, T1 = 0.2, 0.8


@st.composite
def frame_tables(draw) -> pd.DataFrame:
    """Frames in order with the columns a grouping strategy records (groups may be 0)."""
    n = draw(st.integers(0, 60))
    gaps = draw(st.lists(st.floats(0.001, 0.05), min_size=n, max_size=n))
    start = np.cumsum([0.0, *gaps])[:n]
    rows = []
    for i in range(n):
        sizes = draw(st.lists(st.integers(1, 40), max_size=6))
        rows.append(
            {
                "frame": i,
                "start_s": start[i],
                "end_s": start[i] + 0.001,
                "messages": draw(st.integers(0, 50)),
                "replies": draw(st.integers(0, 50)),
                "choked": draw(st.integers(0, 5)),
                "groups": len(sizes),
                "group_entities": sum(sizes),
                "largest_group": max(sizes, default=0),
                "group_sizes": tuple(sorted(sizes, reverse=True)),
                "memory_bytes": draw(st.integers(0, 1 << 40)),
            }
        )
    return pd.DataFrame(rows, columns=list(rows[0]) if rows else None)


def _digest(frames: pd.DataFrame, cuts: list[int]) -> FrameDigest:
    """The digest of ``frames`` put in a frame table (the strategy's values as dicts) and
    taken in blocks cut before the frames ``cuts``."""
    table = FrameTable()
    extra = ["groups", "group_entities", "largest_group", "group_sizes", "memory_bytes"]
    for row in frames.itertuples(index=False):
        values = (row.frame, row.start_s, row.end_s, 0.001, row.messages, 0, row.replies)
        table.append((*values, row.choked, False, 0), {k: getattr(row, k) for k in extra})
    digest = FrameDigest(T0, T1)
    for cut in [*cuts, len(frames)]:
        digest.add(table.take(cut))
    return digest


@settings(max_examples=60, deadline=None)
@given(frames=frame_tables(), data=st.data())
def test_the_digest_equals_the_whole_table_whatever_the_blocks(frames, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(frames)), max_size=5)))
    blocks, whole = _digest(frames, cuts), _digest(frames, [])
    span = T1 - T0
    assert blocks.summary(span) == whole.summary(span)  # to the bit
    assert blocks.group_sizes == whole.group_sizes
    if len(frames) == 0:
        return
    measured = frames[(frames.start_s >= T0) & (frames.start_s < T1)]
    got = whole.summary(span)
    assert got["frames"] == len(measured)
    assert got["messages_per_s"] == int(measured.messages.sum()) / span
    assert got["replies_per_s"] == float(measured.replies.sum()) / span
    assert whole.messages_read == int(frames.messages.sum())
    grouped = measured[measured.groups > 0]
    groups = got["groups"]
    if len(grouped) == 0:
        assert groups["mean_count"] == 0.0 and groups["largest_share"] == 0.0
        return
    assert groups["mean_count"] == grouped.groups.mean()  # pandas' mean of integers: exact
    assert groups["mean_size"] == grouped.group_entities.sum() / grouped.groups.sum()
    assert groups["max_size"] == float(grouped.largest_group.max())
    shares = (grouped.largest_group / grouped.group_entities).tolist()
    assert groups["largest_share"] == math.fsum(shares) / len(shares)  # correctly rounded
    assert groups["largest_share"] == pytest.approx(np.mean(shares), rel=1e-15, abs=0)
    assert got["memory_bytes"] == int(measured.memory_bytes.max())
    sizes = grouped.group_sizes.explode().astype(int).value_counts()
    assert dict(blocks.group_sizes) == {int(k): int(v) for k, v in sizes.items()}


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(
        st.floats(-1e200, 1e200, allow_nan=False) | st.floats(-1e-200, 1e-200), max_size=40
    ),
    data=st.data(),
)
def test_an_exact_sum_in_blocks_is_the_correctly_rounded_sum(values, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(values)), max_size=4)))
    total = ExactSum()
    for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True):
        total.add(np.array(values[a:b]))
    assert total.value() == math.fsum(values)


def test_the_frame_table_gives_its_frames_by_number_and_keeps_the_rest():
    table = FrameTable(("a",))
    for f in range(10):
        table.append((f, f * 1.0, f + 0.5, 0.5, f, 0, 0, 0, True, 0), {"a": 10 * f})
    first = table.take(4)
    assert first.to_frame()["frame"].tolist() == [0, 1, 2, 3] == first.to_frame().index.tolist()
    assert (table.base, table.stored, len(table)) == (4, 6, 10)
    table.append((10, 10.0, 10.5, 0.5, 10, 0, 0, 0, False, 0), {"a": 100})
    rest = table.take(100)
    assert rest.to_frame().index.tolist() == list(range(4, 11))
    assert rest.column("a").tolist() == [10 * f for f in range(4, 11)]
    assert rest.column("messages").tolist() == list(range(4, 11))
    assert rest.to_frame()["physics"].tolist() == [True] * 6 + [False]
    assert table.stored == 0 and len(table.take(11)) == 0


@pytest.mark.parametrize("strategy", ["abdelkhalek", "bsp-group", "sequential"])
def test_the_frame_table_holds_only_the_frames_of_the_last_blocks(monkeypatch, strategy):
    largest = [0]
    take = FrameTable.take

    def measured_take(self, upto):
        largest[0] = max(largest[0], self.stored)
        return take(self, upto)

    monkeypatch.setattr(FrameTable, "take", measured_take)
    monkeypatch.setattr(trace_stream, "BLOCK_ROWS", 128)
    monkeypatch.setattr(runner, "STORE_ROOM", 128)  # compiled calls stop to drain as often
    scenario = load_scenario(
        ROOT / "scenarios/cube-160.toml",
        ["run.duration_s=1", "run.warmup_s=0.2", f"server.strategy={strategy}"],
    )
    result = run(scenario)
    frames = result.summary["frames"]
    assert frames > 30
    # blocks of 128 trace rows: a few dozen frames at most of the run's hundreds or thousands
    assert largest[0] < max(64, frames / 20)


def test_a_window_of_no_frames_is_refused():
    with pytest.raises(ValueError, match="frames: must be a whole number >= 1"):
        KeepWindow(frames=0)
