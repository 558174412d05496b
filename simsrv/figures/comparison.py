"""Every figure of a strategy comparison, from its tables, and saving them as PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from simsrv.figures.gantt import gantt_figure
from simsrv.figures.group_sizes import group_size_figure
from simsrv.figures.load_balance import load_balance_figure
from simsrv.figures.response_time import response_time_figure
from simsrv.figures.stage_breakdown import stage_breakdown_figure
from simsrv.figures.throughput import parallel_fraction_figure, throughput_figure
from simsrv.sweep.results import CompareResults

FORMATS = ("png", "svg")
STEMS = (
    "throughput",
    "parallel_fraction",
    "response_time",
    "breakdown",
    "load_balance",
    "gantt",
    "group_sizes",
)
"""File stems of :func:`comparison_figures`."""


def comparison_figures(results: CompareResults) -> dict[str, Figure]:
    """Figures by file stem: ``throughput``, ``parallel_fraction``, ``response_time``,
    ``breakdown``, ``load_balance``, ``gantt`` and (when a strategy groups entities)
    ``group_sizes``.

    Failed runs are left out (a figure without data is skipped); with several client counts,
    the per-point figures (breakdown, load balance, Gantt, group sizes) show the largest.
    """
    runs = results.succeeded
    if runs.empty:
        return {}
    where = _where(runs)
    figures = {
        "throughput": throughput_figure(
            runs, f"Throughput, {where}; lines: mean, bands: 95 % CI of the mean over seeds"
        ),
        "parallel_fraction": parallel_fraction_figure(
            runs,
            f"Parallel-time fraction, {where}\nlines: mean, bands: 95 % CI of the mean over seeds",
        ),
    }
    response = _largest_clients(results.response)
    if not response.empty:
        cpus = int(response["cpus"].max())
        response = response[response["cpus"] == cpus]
        periods = runs.get("client_period_ms")
        figures["response_time"] = response_time_figure(
            response,
            client_period_ms=float(periods.iloc[0]) if periods is not None else None,
            title=f"Response time, {where}, {_clients(response)} clients, {cpus} CPUs\n"
            "every measured packet of every seed; dotted: one client frame",
        )
    shares = _largest_clients(results.breakdown)
    if not shares.empty:
        figures["breakdown"] = stage_breakdown_figure(
            shares.rename(columns={"strategy": "variant"}),
            title=f"Where each thread's time goes, {where}, {_clients(shares)} clients "
            "(mean over seeds)",
            bar_labels={s: s for s in shares["strategy"].unique()},
            x="cpus",
        )
    if not results.cpu_load.empty:
        load = _largest_clients(results.cpu_load)
        figures["load_balance"] = load_balance_figure(
            load,
            f"Load balance among processors, {where}, {_clients(load)} clients; "
            "bars: mean over seeds, whiskers: range",
        )
    gantt = _largest_clients(results.gantt)
    if not gantt.empty:
        figures["gantt"] = gantt_figure(
            gantt,
            f"First frames of the measured window, {where}, {_clients(gantt)} clients; the "
            f"seed shown: {int(gantt['seed'].min())} (dotted: frame starts)",
        )
    sizes = _largest_clients(results.group_sizes)
    if not sizes.empty:
        sizes = sizes.merge(runs[["strategy", "cpus", "clients", "seed", "map"]])
        series = ("map", "cpus") if sizes["cpus"].nunique() > 1 else ("map",)
        figures["group_sizes"] = group_size_figure(
            sizes,
            series,
            f"BSP group sizes, {where}, {_clients(sizes)} clients; bars: shares over all "
            "measured frames and seeds",
        )
    return figures


def _largest_clients(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``table`` at its largest client count (each table on its own: a failed run
    leaves no rows in some tables)."""
    if table.empty:
        return table
    return table[table["clients"] == table["clients"].max()]


def _clients(table: pd.DataFrame) -> int:
    return int(table["clients"].iloc[0])


def save_figures(figures: dict[str, Figure], directory: Path) -> list[Path]:
    """Write each figure as ``<stem>.png`` and ``<stem>.svg``; close them; return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, figure in figures.items():
        for suffix in FORMATS:
            path = directory / f"{stem}.{suffix}"
            figure.savefig(path, dpi=130)
            paths.append(path)
        plt.close(figure)
    return paths


def _where(runs) -> str:
    """Map, platform and seeds of the runs, for the figures' titles."""
    maps = ", ".join(dict.fromkeys(runs["map"]))
    platforms = ", ".join(dict.fromkeys(runs["platform"]))
    seeds = runs.groupby(["strategy", "cpus", "clients"]).size()
    n = str(seeds.max()) if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
    return f"{maps} map, {platforms} platform, {n} seeds"
