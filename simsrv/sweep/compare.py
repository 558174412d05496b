"""``compare``: run a grid of strategies x CPUs x clients x seeds and keep tidy tables.

>>> from simsrv.sweep import compare
>>> results = compare(strategies=["sequential"], seeds=1, duration_s=0.2, workers=1,
...                   overrides=["run.warmup_s=0.1"])
>>> results.runs[["strategy", "cpus", "clients", "seed"]].to_dict("records")
[{'strategy': 'sequential', 'cpus': 2, 'clients': 160, 'seed': 1}]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from simsrv.sweep.grid import DEFAULT_STRATEGIES, GridRun, base_dict, build_grid
from simsrv.sweep.local import default_workers, run_local
from simsrv.sweep.records import RunRecords
from simsrv.sweep.results import CompareResults


def compare(
    scenario: str | Path | dict[str, Any] | None = None,
    overrides: Sequence[str] = (),
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    cpus: Sequence[int] | None = None,
    clients: Sequence[int] | None = None,
    seeds: int = 3,
    duration_s: float | None = None,
    workers: int | None = None,
    out: Path | None = None,
    on_done: Callable[[GridRun, RunRecords], None] | None = None,
) -> CompareResults:
    """Run the grid (:func:`simsrv.sweep.grid.build_grid`) and return its tables.

    Parameters
    ----------
    scenario, overrides:
        The base scenario (TOML path, dict or ``None`` for the default) and ``--set`` overrides.
    strategies, cpus, clients, seeds, duration_s:
        The grid; ``cpus``/``clients`` default to the scenario's, ``duration_s`` to its window.
    workers:
        Processes running points at once (default: the CPUs this process may use).
    out:
        If given, the tables are saved there as Parquet after every finished run, so an
        interruption keeps everything finished (:class:`CompareResults`).
    on_done:
        Called after each finished run (progress reporting).

    Bad input raises :class:`~simsrv.core.errors.InputError` before any run starts.
    """
    grid = build_grid(base_dict(scenario, overrides), strategies, cpus, clients, seeds, duration_s)
    return run_grid(grid, workers, out, on_done)


def run_grid(
    grid: Sequence[GridRun],
    workers: int | None = None,
    out: Path | None = None,
    on_done: Callable[[GridRun, RunRecords], None] | None = None,
) -> CompareResults:
    """Run an already built grid (arguments as in :func:`compare`) and return its tables."""
    finished: dict[int, RunRecords] = {}

    def tables() -> CompareResults:
        return CompareResults.collect([finished[i] for i in sorted(finished)], len(grid))

    def keep(index: int, records: RunRecords) -> None:
        finished[index] = records
        if out is not None:
            tables().save(out)
        if on_done is not None:
            on_done(grid[index], records)

    run_local(grid, workers or default_workers(), keep)
    return tables()
