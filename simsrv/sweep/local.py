"""Run grid points on this machine: in this process (``workers = 1``) or a process pool.

Each run is deterministic given its scenario (every random stream derives from ``run.seed``),
so the records are the same whatever the number of workers or the order runs finish in; only the
columns of :data:`~simsrv.sweep.records.VOLATILE` differ (times, worker).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from simsrv.pipeline.result import describe_error
from simsrv.sweep.grid import GridRun
from simsrv.sweep.orphan import exit_with_parent
from simsrv.sweep.records import RunRecords, execute, failed

T = TypeVar("T")
R = TypeVar("R")
STOP_WAIT_S = 10.0
"""How long an interrupted pool waits for each killed worker to be reaped, s."""


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
    reported through ``on_done`` are the caller's to keep.  A worker that died (e.g. killed for
    memory) or raised outside the simulation gives a failed row.
    """
    order = round_robin([run.point.strategy for run in grid])
    run_parallel(grid, execute, workers, on_done, partial(failed_row, grid), order)


def round_robin(keys: Sequence[Hashable]) -> list[int]:
    """The indices of ``keys`` taking one of each key in turn (keys in their first
    appearance, each key's indices in order): the order a pool starts a grid's runs, so that
    workers starting together run different strategies and, on a machine whose numba cache
    is empty, compile different kernels (:mod:`simsrv.core.compile_lock`) rather than wait
    for the same ones."""
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    rounds = max((len(g) for g in groups.values()), default=0)
    return [g[r] for r in range(rounds) for g in groups.values() if r < len(g)]


def failed_row(grid: Sequence[GridRun], index: int, error: BaseException) -> RunRecords:
    """The records of a run that raised outside the simulation or whose worker died."""
    return failed(grid[index], describe_error(error))


def run_parallel(
    items: Sequence[T],
    function: Callable[[T], R],
    workers: int,
    on_done: Callable[[int, R], None],
    on_failure: Callable[[int, BaseException], R],
    order: Sequence[int] | None = None,
) -> None:
    """Call ``function(item)`` for every item, in this process (``workers = 1``) or a process
    pool, and ``on_done(index, result)`` in this process as each finishes; they start in
    ``order`` (indices; default: as given).

    An exception that escapes ``function`` (or a dead worker) becomes
    ``on_done(index, on_failure(index, error))``; the other items go on.  A
    ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM while the pool runs: :class:`Terminated`)
    reports the items that had already finished, kills the workers (their items in flight
    are lost, as they would be by waiting for nothing), reaps them and propagates; so does
    any other exception, e.g. from ``on_done``.  Pool workers exit when this process dies,
    even by ``kill -9`` (:mod:`simsrv.sweep.orphan`).
    """
    order = range(len(items)) if order is None else order
    if workers <= 1 or len(items) <= 1:
        for i in order:
            try:
                result = function(items[i])
            except Exception as error:
                result = on_failure(i, error)
            on_done(i, result)
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(items)), initializer=exit_with_parent)
    pending: dict[Future, int] = {}
    try:
        for i in order:
            pending[pool.submit(function, items[i])] = i  # the first submit forks the workers
        with _terminate_interrupts():
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    _report(future, pending.pop(future), on_done, on_failure)
    except KeyboardInterrupt:
        # keep the items that finished while we were interrupted; do not wait for the others
        done = [f for f in pending if f.done() and not f.cancelled()]
        for future in [f for f in done if not isinstance(f.exception(), KeyboardInterrupt)]:
            _report(future, pending.pop(future), on_done, on_failure)
        _stop(pool)
        raise
    except BaseException:  # e.g. on_done failed: the runs in flight have no one to report to
        _stop(pool)
        raise
    pool.shutdown(wait=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM while a pool runs: handled as Ctrl-C is (the finished items are reported, the
    workers stopped), so that a terminated command keeps what finished and leaves no worker."""


@contextmanager
def _terminate_interrupts() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` in this (main) thread for the ``with`` block.
    Only the main thread may set a signal handler: elsewhere SIGTERM keeps its action, and
    the workers still end with this process (:mod:`simsrv.sweep.orphan`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the pool now: cancel what has not started, kill the workers (their runs in flight
    are abandoned) and reap them, so that none outlives this process or lingers as a zombie.

    ``ProcessPoolExecutor`` has no public way to end its workers before Python 3.14
    (``kill_workers``); ``_processes`` (pid -> ``multiprocessing.Process``) is read where it
    exists, and without it the pool is only shut down without waiting.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, ValueError):  # already ended, or closed
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(timeout=STOP_WAIT_S)


def _report(
    future: Future,
    index: int,
    on_done: Callable[[int, R], None],
    on_failure: Callable[[int, BaseException], R],
) -> None:
    """Hand a finished future's result (or its failure) to ``on_done``."""
    try:
        result = future.result()
    except Exception as error:
        result = on_failure(index, error)
    on_done(index, result)
