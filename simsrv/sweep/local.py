"""Run grid points on this machine: in this process (``workers = 1``) or a process pool.

Each run is deterministic given its scenario (every random stream derives from ``run.seed``),
so the records are the same whatever the number of workers or the order runs finish in; only
``wall_time_s`` differs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from simsrv.result import describe_error
from simsrv.sweep.grid import GridRun
from simsrv.sweep.records import RunRecords, execute, failed


def default_workers() -> int:
    """CPUs this process may use (the affinity mask where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_local(
    grid: Sequence[GridRun],
    workers: int,
    on_done: Callable[[int, RunRecords], None],
) -> None:
    """Run every point, calling ``on_done(index in grid, records)`` in this process as each one
    finishes.

    A ``KeyboardInterrupt`` cancels the runs not yet started and propagates; the runs already
    reported through ``on_done`` are the caller's to keep.
    """
    if workers <= 1 or len(grid) <= 1:
        for i, grid_run in enumerate(grid):
            on_done(i, execute(grid_run))
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(grid)))
    pending = {pool.submit(execute, grid_run): i for i, grid_run in enumerate(grid)}
    try:
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                _report(future, pending.pop(future), grid, on_done)
    except KeyboardInterrupt:
        # keep the runs that finished while we were interrupted; do not wait for the others
        done = [f for f in pending if f.done() and not f.cancelled()]
        for future in [f for f in done if not isinstance(f.exception(), KeyboardInterrupt)]:
            _report(future, pending.pop(future), grid, on_done)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _report(
    future: Future, index: int, grid: Sequence[GridRun], on_done: Callable[[int, RunRecords], None]
) -> None:
    """Hand a finished future's records to ``on_done``; a worker that died (e.g. killed for
    memory) or raised outside the simulation becomes a failed row."""
    try:
        records = future.result()
    except Exception as error:
        records = failed(grid[index], describe_error(error))
    on_done(index, records)
