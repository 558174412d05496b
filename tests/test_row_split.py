"""Row kernels on several threads: the same rows, bit for bit, for any number of pieces."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core import row_split
from simsrv.core.compiled import row_kernel
from simsrv.core.row_split import split_rows


@row_kernel
def _hypot_rows(lo, hi, x, y, out):  # pragma: no cover - compiled
    for i in range(lo, hi):
        out[i] = np.hypot(x[i], y[i]) / (1.0 + x[i] * y[i])


@pytest.fixture
def threads():
    """Set :data:`row_split.row_threads` for one test; restored after it."""
    before = row_split.row_threads
    yield row_split.set_row_threads
    row_split.set_row_threads(before)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(0, 5 * row_split.MIN_ROWS_PER_THREAD),
    pieces=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_number_of_pieces_gives_the_same_rows(rows, pieces, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=rows), rng.normal(size=rows)
    alone = np.full(rows, np.nan)
    _hypot_rows(0, rows, x, y, alone)
    before = row_split.row_threads
    try:
        row_split.set_row_threads(pieces)
        split = np.full(rows, np.nan)  # every row written once: none left NaN
        split_rows(_hypot_rows, rows, x, y, split)
    finally:
        row_split.set_row_threads(before)
    assert alone.tobytes() == split.tobytes()


def test_pieces_are_contiguous_and_cover_every_row_once(threads):
    threads(3)
    seen: list[tuple[int, int, str]] = []
    rows = 3 * row_split.MIN_ROWS_PER_THREAD + 7

    def kernel(lo, hi):
        seen.append((lo, hi, threading.current_thread().name))

    split_rows(kernel, rows)
    bounds = sorted((lo, hi) for lo, hi, _ in seen)
    assert bounds[0][0] == 0 and bounds[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    assert len(seen) == 3
    assert min(hi - lo for lo, hi in bounds) >= row_split.MIN_ROWS_PER_THREAD
    first = min(seen)  # the calling thread takes the first piece
    assert first[2] == threading.current_thread().name


def test_few_rows_stay_on_the_calling_thread(threads):
    threads(4)
    names = []
    split_rows(lambda lo, hi: names.append((lo, hi, threading.current_thread().name)), 100)
    assert names == [(0, 100, threading.current_thread().name)]


def test_a_failing_piece_is_raised_after_every_piece_has_run(threads):
    threads(2)
    rows = 2 * row_split.MIN_ROWS_PER_THREAD
    done = []
    alive = threading.active_count()

    def kernel(lo, hi):
        done.append(lo)
        if lo > 0:
            raise ValueError(f"piece {lo}")

    with pytest.raises(ValueError, match=f"piece {rows // 2}"):
        split_rows(kernel, rows)
    assert sorted(done) == [0, rows // 2]
    assert threading.active_count() == alive  # the piece's thread was joined


def _threads_in_worker() -> int:
    return row_split.automatic_threads()


def test_a_pool_worker_uses_one_thread():
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1) as pool:
        assert pool.submit(_threads_in_worker).result() == 1
    assert row_split.automatic_threads() == row_split.usable_cores()
