"""Run a sweep: the runs not yet stored, on a backend, each stored as soon as it finishes.

Data flow: sweep file -> validated runs (:mod:`.spec`) -> the runs missing from the store
(:mod:`.store`) -> a backend (``local``: :func:`simsrv.sweep.local.run_parallel`; ``dask``:
:mod:`.dask_backend`) -> one row per run, written by this process as each finishes (and merged
into larger files every so often and at the end) -> mean and 95 % CI per point
(:func:`summary`).

Every run is deterministic given its scenario, so the rows are the same whatever the backend,
the number of workers or the order runs finish in; only the columns of
:data:`~simsrv.sweep.records.VOLATILE` differ (times, worker).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from simsrv.pipeline.result import describe_error, run
from simsrv.sweep.local import run_parallel
from simsrv.sweep.records import SUMMARY_METRICS, metrics_row
from simsrv.sweep.spec import Sweep, SweepRun
from simsrv.sweep.statistics import mean_ci
from simsrv.sweep.store import SweepStore


def sweep_row(run_: SweepRun) -> dict[str, Any]:
    """Run one sweep run and return its row (a failed run gives NaN metrics and its error)."""
    result = run(run_.scenario, raise_errors=False)
    head = run_.columns()
    if result.error is not None:
        return {**head, **metrics_row(run_.scenario, None, result.error)}
    try:
        return {**head, **metrics_row(run_.scenario, result, None)}
    except Exception as error:
        return {**head, **metrics_row(run_.scenario, None, describe_error(error))}


def failed_row(run_: SweepRun, error: BaseException) -> dict[str, Any]:
    """The row of a run whose worker died or raised outside the simulation."""
    return {**run_.columns(), **metrics_row(run_.scenario, None, describe_error(error))}


def pending(sweep: Sweep, store: SweepStore) -> list[SweepRun]:
    """The runs of ``sweep`` that are not stored (or stored with an error)."""
    return [r for r in sweep.runs if not store.done(r)]


def run_sweep(
    sweep: Sweep,
    store: SweepStore,
    *,
    backend: str = "local",
    workers: int = 1,
    scheduler: str | None = None,
    on_done: Callable[[SweepRun, dict[str, Any]], None] | None = None,
    todo: Sequence[SweepRun] | None = None,
) -> Sequence[SweepRun]:
    """Run the pending runs (``todo`` if the caller already listed them) and store each row as
    it finishes, then compact the store (:meth:`SweepStore.compact`); returns the runs that ran.

    A ``KeyboardInterrupt`` propagates after the finished runs are stored and compacted.
    """
    todo = pending(sweep, store) if todo is None else todo

    def done(index: int, row: dict[str, Any]) -> None:
        store.write(row, todo[index])
        if on_done is not None:
            on_done(todo[index], row)

    def failure(index: int, error: BaseException) -> dict[str, Any]:
        return failed_row(todo[index], error)

    try:
        if todo and backend == "dask":
            from simsrv.sweep.dask_backend import run_dask

            run_dask(todo, sweep_row, scheduler, done, failure)
        elif todo:
            run_parallel(todo, sweep_row, workers, done, failure)
    except BaseException:
        # merge what finished, so the store is compact after Ctrl-C too; if this fails (or is
        # interrupted) the store is still whole and the next sweep compacts it
        with contextlib.suppress(Exception):
            store.compact()
        raise
    store.compact()
    return todo


def summary(table: pd.DataFrame, varied: Sequence[str]) -> pd.DataFrame:
    """Mean and 95 % CI of :data:`SUMMARY_METRICS` per point (the varied parameters)."""
    if table.empty:
        return pd.DataFrame()
    by = list(varied) if varied else ["point"]
    if not varied:
        table = table.assign(point="base")
    metrics = [m for m in SUMMARY_METRICS if m in table]
    return mean_ci(table, metrics, by=by)
