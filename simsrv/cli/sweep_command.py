"""``simsrv sweep SWEEP.toml``: a resumable parameter sweep stored as a Parquet dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.cli.parser import add_workers_argument, prepare_output_dir, resolve_workers
from simsrv.core.defaults import SWEEP_BACKENDS
from simsrv.core.errors import InputError
from simsrv.core.paths import exists, is_file


def add_parser(subparsers) -> None:
    """Register the ``sweep`` subcommand."""
    p = subparsers.add_parser(
        "sweep",
        help="run a parameter sweep file (cartesian and zipped parameters x seeds), resumable",
        description="Run every point x seed of the sweep file that is not stored yet, store "
        "one Parquet row per run as it finishes (OUT/runs/), then write OUT/summary.csv "
        "(mean and 95%% CI per point) and print it.  Re-running the same command resumes: "
        "stored runs are skipped.  See docs/cli.md for the file format.",
    )
    p.add_argument("sweep", type=Path, metavar="SWEEP.toml", help="the sweep file")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: the file's `out`, else results/sweeps/<file name>)",
    )
    p.add_argument(
        "--backend", default="local", help=f"where runs execute: {', '.join(SWEEP_BACKENDS)}"
    )
    add_workers_argument(p, "local backend: parallel runs")
    p.add_argument(
        "--scheduler", default=None, help="dask backend: the scheduler, e.g. tcp://HOST:8786"
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv sweep`` (pandas and the simulator are imported here, not at start-up)."""
    if args.backend not in SWEEP_BACKENDS:
        raise InputError(
            f"--backend: unknown backend {args.backend!r}; allowed: {', '.join(SWEEP_BACKENDS)}"
        )
    if args.backend == "dask" and not args.scheduler:
        raise InputError("--scheduler: required with --backend dask, e.g. tcp://127.0.0.1:8786")
    if args.backend != "dask" and args.scheduler is not None:
        raise InputError(
            f"--scheduler: only used with --backend dask, got --backend {args.backend}"
        )
    workers = resolve_workers(args.workers)
    if not is_file(args.sweep):
        raise InputError(f"SWEEP.toml: file not found: {args.sweep}")
    from simsrv.sweep import out_lock
    from simsrv.sweep.spec import load_sweep

    sweep = load_sweep(args.sweep)
    if sweep.capacity is not None:
        raise InputError(
            f"SWEEP.toml: {args.sweep} has a [capacity] table: run it with "
            f"simsrv capacity --sweep {args.sweep}"
        )
    out = args.out or sweep.out or Path("results") / "sweeps" / args.sweep.stem
    flag = "--out" if args.out else "out (sweep file)"
    prepare_output_dir(out, flag)
    for name in ("summary.csv", "report.html"):  # written at the end: refused before any run
        if exists(out / name) and not is_file(out / name):
            raise InputError(f"{flag}: {out / name} exists and is not a file; remove it")
    with out_lock.hold(out, flag, "simsrv sweep"):  # one writer per store
        return _run(args, sweep, out, workers)


def _run(args: argparse.Namespace, sweep, out: Path, workers: int) -> int:
    """Run the pending runs of ``sweep`` into the store ``out`` (locked by the caller), then
    summarise; the exit status."""
    from simsrv.sweep.progress import Progress
    from simsrv.sweep.statistics import format_table
    from simsrv.sweep.store import SweepStore
    from simsrv.sweep.sweep import pending, run_sweep, summary

    store = SweepStore(out)
    store.verify()  # damaged files are moved aside (one line) and their runs run again
    todo = pending(sweep, store)
    sys.stderr.write(
        f"{len(sweep.runs)} runs, {len(sweep.runs) - len(todo)} already stored in {out}; "
        f"running {len(todo)} on {args.backend}\n"
    )
    progress = Progress(len(todo))
    failed = 0

    def done(run, row) -> None:
        nonlocal failed
        failed += row["error"] is not None
        progress.update(run.label(), row["error"])

    try:
        run_sweep(
            sweep,
            store,
            backend=args.backend,
            workers=workers,
            scheduler=args.scheduler,
            on_done=done,
            todo=todo,
        )
    except KeyboardInterrupt:
        progress.close()
        sys.stderr.write(f"stopped: the finished runs are in {store.runs_dir}; rerun to resume\n")
        raise
    table = store.table(sweep)
    stats = summary(table, sweep.varied)
    if not stats.empty:
        stats.to_csv(out / "summary.csv", index=False)
        text = format_table(stats, by=list(sweep.varied) or ["point"])
        print(text, end="")
        report = _report(out, text, sweep, table)
        sys.stderr.write(f"report: {report}\n")
    sys.stderr.write(f"{len(table)} runs in {store.runs_dir}; summary in {out / 'summary.csv'}\n")
    return 1 if table.empty or table["error"].notna().any() or failed else 0


def _report(out: Path, text: str, sweep, table) -> Path:
    """Write ``out/report.html``: the table, the sweep file and its base scenario, provenance
    (a sweep draws no figures)."""
    from simsrv.figures.report import provenance, write_report

    failed = int(table["error"].notna().sum())
    facts = provenance(
        {
            "sweep file": str(sweep.path),
            "runs": f"{len(table)} stored of {len(sweep.runs)}, {failed} failed",
            "varied": ", ".join(sweep.varied) or "nothing (seeds only)",
            "simsrv versions of the runs": ", ".join(sorted(table["simsrv_version"].unique())),
        }
    )
    scenario = (
        f"# {sweep.path}\n{sweep.path.read_text()}\n# base scenario: {sweep.base}\n"
        f"{sweep.base.read_text()}"
    )
    return write_report(
        out / "report.html", f"simsrv sweep {sweep.path.name}", text, [], scenario, facts
    )
