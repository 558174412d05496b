"""Per-row compiled kernels run on several cores: contiguous pieces of rows, one per thread.

A *row kernel* is a compiled function ``kernel(lo, hi, *arrays)`` that computes rows ``lo ..
hi`` of its outputs from its inputs and writes nothing else (no row of another piece, no
shared counter), compiled with :func:`simsrv.core.compiled.row_kernel` (it releases the GIL).
:func:`split_rows` runs it over ``0 .. rows`` in :data:`row_threads` pieces at once, the
calling thread taking the first: since each output row is computed by the same arithmetic
from the same inputs whichever piece holds it, the result is the same, bit for bit, for any
number of pieces (``tests/test_row_split.py``).  A process has as many threads as usable
cores, except a pool's worker (one: its siblings use the other cores).

Threads are started for one call and joined before it returns, so none is alive when a
process forks (the sweeps' process pool) and none outlives the run.  A piece has at least
:data:`MIN_ROWS_PER_THREAD` rows: starting and joining a thread costs ~0.05-0.1 ms, the
per-player kernels ~5-20 ns a row.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any

MIN_ROWS_PER_THREAD = 32_768
"""Fewest rows a piece of its own is worth."""


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


row_threads: int | None = None
"""Threads :func:`split_rows` uses at most; None (the default): :func:`automatic_threads`."""


def automatic_threads() -> int:
    """The usable cores, or 1 in a process that :mod:`multiprocessing` started (a pool's
    worker, sharing the cores with its siblings)."""
    return 1 if multiprocessing.parent_process() is not None else usable_cores()


def set_row_threads(threads: int | None) -> None:
    """Use at most ``threads`` (>= 1) threads per :func:`split_rows` call in this process
    (None: :func:`automatic_threads`)."""
    global row_threads
    row_threads = None if threads is None else max(1, int(threads))


def split_rows(kernel: Callable[..., Any], rows: int, *args: Any) -> None:
    """``kernel(lo, hi, *args)`` over rows ``0 .. rows`` in contiguous pieces, one per thread
    (at most :data:`row_threads`, each of :data:`MIN_ROWS_PER_THREAD` rows or more); the
    calling thread runs the first piece.  An exception in any piece is raised here, once
    every piece has finished."""
    threads = row_threads if row_threads is not None else automatic_threads()
    pieces = max(1, min(threads, rows // MIN_ROWS_PER_THREAD))
    if pieces == 1:
        kernel(0, rows, *args)
        return
    bounds = [rows * k // pieces for k in range(pieces + 1)]
    failures: list[BaseException] = []

    def piece(lo: int, hi: int) -> None:
        try:
            kernel(lo, hi, *args)
        except BaseException as failure:  # raised in the calling thread below
            failures.append(failure)

    others = [
        threading.Thread(target=piece, args=(bounds[k], bounds[k + 1]), daemon=True)
        for k in range(1, pieces)
    ]
    for thread in others:
        thread.start()
    try:
        piece(bounds[0], bounds[1])
    finally:
        for thread in others:
            thread.join()
    if failures:
        raise failures[0]
