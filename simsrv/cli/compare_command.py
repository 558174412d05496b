"""``simsrv compare``: strategies x CPUs x clients x seeds on one scenario; table + figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.cli.parser import (
    add_scenario_arguments,
    add_workers_argument,
    finite_float,
    prepare_output_dir,
    resolve_workers,
    whole_number,
)
from simsrv.core.defaults import DEFAULT_STRATEGIES, MAX_SEEDS

DEFAULT_CPUS = [2, 4]


def add_parser(subparsers) -> None:
    """Register the ``compare`` subcommand."""
    p = subparsers.add_parser(
        "compare",
        help="compare strategies across CPUs, clients and seeds (table, figures, Parquet)",
        description="Run every strategy x CPU count x client count x seed on the scenario, "
        "print mean +- 95%% CI per point, and write the results (Parquet), the summary (CSV) "
        "and the figures (PNG, SVG) into --out.  Finished runs are saved as they finish, so "
        "an interrupted comparison keeps them (see docs/cli.md).",
    )
    add_scenario_arguments(p)
    p.add_argument(
        "--strategies",
        type=_names,
        default=list(DEFAULT_STRATEGIES),
        metavar="A,B,...",
        help=f"strategies to compare (default {','.join(DEFAULT_STRATEGIES)}); a strategy "
        "other than the scenario's runs with its default options",
    )
    p.add_argument(
        "--cpus", type=_counts, default=None, metavar="N,...", help="CPU counts (default 2,4)"
    )
    p.add_argument(
        "--clients",
        type=_counts,
        default=None,
        metavar="N,...",
        help="client counts (default: the scenario's players.count)",
    )
    p.add_argument(
        "--seeds",
        type=whole_number(1, MAX_SEEDS),
        default=3,
        help="seeds per point (default 3)",
    )
    p.add_argument(
        "--duration-s",
        type=finite_float,
        default=None,
        help="measured simulated seconds per run (default: the scenario's run.duration_s)",
    )
    add_workers_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results/compare"),
        help="output directory (default results/compare)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv compare`` (pandas and the simulator are imported here, not at
    start-up)."""
    from simsrv.sweep import out_lock
    from simsrv.sweep.grid import base_dict, build_grid

    workers = resolve_workers(args.workers)
    base = base_dict(args.scenario, args.overrides)
    cpus = args.cpus or DEFAULT_CPUS
    grid = build_grid(base, args.strategies, cpus, args.clients, args.seeds, args.duration_s)
    prepare_output_dir(args.out, "--out")
    with out_lock.hold(args.out, "--out", "simsrv compare"):  # one comparison per --out
        return _run(args, grid, base, workers)


def _run(args: argparse.Namespace, grid, base: dict, workers: int) -> int:
    """Run ``grid`` into ``args.out`` (locked by the caller); the exit status."""
    from simsrv.sweep import CompareResults
    from simsrv.sweep.compare import run_grid
    from simsrv.sweep.progress import Progress

    _clear_out(args.out)  # only once the whole grid is valid
    progress = Progress(len(grid))

    def report(grid_run, records) -> None:
        progress.update(grid_run.point.label(), records.error)

    try:
        results = run_grid(grid, workers, args.out, report)
    except KeyboardInterrupt:
        progress.close()
        results = CompareResults.load(args.out)  # every run that finished was saved
        results.planned = len(grid)
        _finish(args, results, base)
        raise
    return _finish(args, results, base)


def _finish(args: argparse.Namespace, results, base: dict) -> int:
    """Print the table, write the summary, figures and ``report.html`` (``results``: a
    ``CompareResults``; ``base``: the base scenario as a dict); the exit status."""
    from simsrv.figures.comparison import comparison_figures, save_figures
    from simsrv.pipeline.result import describe_error
    from simsrv.sweep import format_table, mean_ci
    from simsrv.sweep.records import SUMMARY_METRICS
    from simsrv.sweep.statistics import TABLE_METRICS

    out: Path = args.out
    if results.runs.empty:
        sys.stderr.write("simsrv: no run finished; nothing written\n")
        return 1
    summary = mean_ci(results.runs, [*SUMMARY_METRICS])
    summary.to_csv(out / "summary.csv", index=False)
    table = format_table(summary[summary["metric"].isin(list(TABLE_METRICS))])
    table += compile_note(results.runs)
    sys.stdout.write(table)
    try:
        saved = save_figures(comparison_figures(results), out / "figures")
    except Exception as error:  # the tables are written; a figure bug must not hide them
        sys.stderr.write(f"simsrv: warning: figures not drawn: {describe_error(error)}\n")
        saved = []
    figures = len(saved) // 2
    try:
        report = _report(out, table, [p for p in saved if p.suffix == ".png"], results, base)
    except Exception as error:  # likewise: the report is a view of what is written
        sys.stderr.write(f"simsrv: warning: report not written: {describe_error(error)}\n")
        report = None
    state = "" if results.complete else f" of {results.planned} (interrupted)"
    tables = ", ".join(p.stem for p in sorted(out.glob("*.parquet")))
    print(
        f"{len(results.runs)} runs{state}: tables in {out}/ ({tables} .parquet; summary.csv), "
        f"{figures} figures in {out}/figures/ (PNG, SVG)"
        + (f"; report: {report}" if report else "")
    )
    failed = results.failed
    for _, row in failed.iterrows():
        sys.stderr.write(
            f"simsrv: run failed: {row['strategy']} cpus={row['cpus']} "
            f"clients={row['clients']} seed={row['seed']}: {row['error']}\n"
        )
    return 1 if len(failed) else 0


def compile_note(runs) -> str:
    """A line under the table when runs compiled (the first runs after an install): how long,
    in how many worker processes; the table's ``wall s`` leaves it out."""
    if "compile_time_s" not in runs or not (runs["compile_time_s"] > 0.5).any():
        return ""
    per_process = runs.groupby("process")["compile_time_s"].sum()
    spent = ", ".join(f"{s:.0f} s" for s in per_process)
    return (
        f"first runs after an install: compiling numba kernels (or waiting for another "
        f"worker's compile) took {spent} in {len(per_process)} worker process(es); cached "
        "for later runs, not in wall s\n"
    )


def _report(out: Path, table: str, pngs: list[Path], results, base: dict) -> Path:
    """Write ``out/report.html``: the table, the figures, the base scenario, provenance."""
    import json

    from simsrv.figures.report import provenance, write_report

    runs = results.runs
    state = "" if results.complete else f" of {results.planned} planned (interrupted)"
    facts = provenance(
        {
            "runs": f"{len(runs)}{state}, {len(results.failed)} failed",
            "strategies": ", ".join(dict.fromkeys(runs["strategy"])),
            "CPUs": ", ".join(str(c) for c in sorted(runs["cpus"].unique())),
            "clients": ", ".join(str(c) for c in sorted(runs["clients"].unique())),
            "seeds": ", ".join(str(s) for s in sorted(runs["seed"].unique())),
            "map, platform": ", ".join(dict.fromkeys(runs["map"] + " on " + runs["platform"])),
            "simsrv versions of the runs": ", ".join(sorted(runs["simsrv_version"].unique())),
            "scenario hashes": str(runs["scenario_hash"].nunique()),
        }
    )
    scenario = json.dumps(base, indent=2, sort_keys=True, default=str)
    return write_report(out / "report.html", "simsrv compare", table, pngs, scenario, facts)


def _clear_out(out: Path) -> None:
    """``out`` must be a directory (or not exist); a new comparison replaces the tables, the
    summary and the figures an older one left there (nothing else is touched)."""
    from simsrv.figures.comparison import FORMATS, STEMS
    from simsrv.sweep.results import META, TABLES

    prepare_output_dir(out, "--out")
    stale = [out / f"{name}.parquet" for name in TABLES] + [out / "summary.csv", out / META]
    stale.append(out / "report.html")
    stale += [out / f".{name}.parquet.tmp" for name in TABLES]
    stale += [out / "figures" / f"{stem}.{suffix}" for stem in STEMS for suffix in FORMATS]
    for path in stale:
        path.unlink(missing_ok=True)


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected names separated by commas, e.g. a,b")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"names must be distinct, got {text!r}")
    return names


def _counts(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, e.g. 2,4, got {text!r}"
        ) from None
    return values
