"""``simsrv capacity``: the most clients a scenario's server keeps up with (any strategy)."""

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
from simsrv.core import json_output
from simsrv.core.defaults import MAX_CLIENTS, MAX_DROPPED, MIN_REPLY_RATIO
from simsrv.core.errors import InputError
from simsrv.core.paths import is_file


def add_parser(subparsers) -> None:
    """Register the ``capacity`` subcommand."""
    p = subparsers.add_parser(
        "capacity",
        help="raise the client count in steps until the server falls behind",
        description="Run the scenario at --start, --start + --step, ... clients until "
        "replies/s fall below --min-reply-ratio x the packets/s the clients offer, more "
        f"than {MAX_DROPPED:g} of the packets are dropped, or (with --max-response-ms) the "
        "response time's --quantile exceeds it; report the largest count that met the rule "
        "(see docs/cli.md).",
    )
    add_scenario_arguments(p)
    p.add_argument(
        "--start",
        type=whole_number(1, MAX_CLIENTS),
        default=8,
        help="first client count (default 8)",
    )
    p.add_argument(
        "--step",
        type=whole_number(1, MAX_CLIENTS),
        default=8,
        help="clients added per step (default 8)",
    )
    p.add_argument(
        "--max",
        dest="max_clients",
        type=whole_number(1, MAX_CLIENTS),
        default=1024,
        help="last count tried",
    )
    p.add_argument(
        "--min-reply-ratio",
        type=finite_float,
        default=MIN_REPLY_RATIO,
        help=f"replies/s a met count needs, as a share of the offered packets/s "
        f"(default {MIN_REPLY_RATIO:g}; 0 < ratio <= 1)",
    )
    p.add_argument(
        "--max-response-ms",
        type=finite_float,
        default=None,
        help="a met count's response time (a packet's arrival to the end of the frame that "
        "read it) at --quantile is at most this many ms (default: no such rule)",
    )
    p.add_argument(
        "--quantile",
        type=finite_float,
        default=0.95,
        help="the response-time quantile of --max-response-ms: 0.5, 0.95 (default) or 0.99",
    )
    p.add_argument(
        "--search",
        choices=("linear", "bisect"),
        default="linear",
        help="linear: every --step up to the first failure (default); bisect: double from "
        "--start until a count fails, then bisect down to --step",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--sweep",
        type=Path,
        default=None,
        metavar="SWEEP.toml",
        help="a sweep file with a [capacity] table: one search per point and seed "
        "(no SCENARIO; the file sets the search); writes --out",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="with --sweep: output directory (default: the file's `out`, else "
        "results/capacity/<file name>)",
    )
    add_workers_argument(p, "with --sweep: searches run at once")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv capacity`` (the simulator is imported here, not at start-up)."""
    from simsrv.sweep.capacity import Capacity, check_counts, find_capacity, response_key

    if args.sweep is not None:
        return handle_sweep(args)
    if args.out is not None:
        raise InputError("--out: only used with --sweep")
    check_counts(args.start, args.step, args.max_clients, ("--start", "--step", "--max"))
    if not 0 < args.min_reply_ratio <= 1:
        raise InputError(
            f"--min-reply-ratio: must be a number in (0, 1], got {args.min_reply_ratio:g}"
        )
    if args.max_response_ms is not None and not args.max_response_ms > 0:
        raise InputError(f"--max-response-ms: must be a number > 0, got {args.max_response_ms:g}")
    response_key(args.quantile)  # refuses a quantile the summary does not have
    result = Capacity()

    def show(point: dict) -> None:
        if not args.json:
            verdict = "met" if point["met"] else "overloaded"
            print(
                f"  {point['clients']:>6d} clients  replies/s {point['replies_per_s']:>10.1f}  "
                f"offered/s {point['offered_per_s']:>10.1f}  dropped "
                f"{point['dropped_fraction']:.3f}  p{args.quantile * 100:g} response "
                f"{point['response_ms']:>8.1f} ms  {verdict}",
                flush=True,
            )

    try:
        find_capacity(
            args.scenario,
            args.overrides,
            start=args.start,
            step=args.step,
            max_clients=args.max_clients,
            min_reply_ratio=args.min_reply_ratio,
            max_response_ms=args.max_response_ms,
            quantile=args.quantile,
            search=args.search,
            on_point=show,
            result=result,
        )
    except (Exception, KeyboardInterrupt):  # an interrupt, or a count the scenario refuses
        if result.points:
            _report(args, result)  # keep what was measured
        raise
    _report(args, result)
    return 0


def _report(args: argparse.Namespace, result) -> None:
    if args.json:
        json_output.dump(result.to_json(), sys.stdout, indent=1)
        print()
        return
    state = "" if result.complete else " (interrupted: lower bound)"
    if result.complete and result.points and result.capacity_clients >= args.max_clients:
        state = f" (still met at --max {args.max_clients}: lower bound)"
    print(f"capacity: {result.capacity_clients} clients{state}")


def handle_sweep(args: argparse.Namespace) -> int:
    """``simsrv capacity --sweep FILE``: one search per point and seed of a capacity sweep
    file; writes ``capacity.csv`` (one row per search), ``points.csv`` (every count tried)
    and ``summary.csv`` (mean and 95 % CI per point) to the output directory."""
    if args.scenario is not None or args.overrides:
        raise InputError("--sweep: give no SCENARIO or --set with it (the sweep file sets them)")
    if not is_file(args.sweep):
        raise InputError(f"--sweep: file not found: {args.sweep}")
    workers = resolve_workers(args.workers)
    from simsrv.sweep import out_lock
    from simsrv.sweep.spec import load_sweep

    sweep = load_sweep(args.sweep)
    if sweep.capacity is None:
        raise InputError(f"--sweep: {args.sweep} has no [capacity] table (see docs/cli.md)")
    out = args.out or sweep.out or Path("results") / "capacity" / args.sweep.stem
    flag = "--out" if args.out else "out (sweep file)"
    prepare_output_dir(out, flag)
    with out_lock.hold(out, flag, "simsrv capacity --sweep"):  # one writer per directory
        return _run_sweep(sweep, out, workers)


def _run_sweep(sweep, out: Path, workers: int) -> int:
    """The searches of ``sweep`` and their tables in ``out`` (locked by the caller)."""
    from simsrv.sweep.capacity_sweep import (
        CapacitySweepInterrupted,
        capacity_summary,
        run_capacity_sweep,
    )

    sys.stderr.write(f"{len(sweep.runs)} capacity searches on {workers} worker(s)\n")

    def show(row: dict) -> None:
        label = " ".join(f"{k}={row[k]}" for k in sweep.varied)
        if "error" in row:
            sys.stderr.write(f"  {label} seed={row['seed']}: failed: {row['error']}\n")
        else:
            sys.stderr.write(
                f"  {label} seed={row['seed']}: {row['capacity_clients']} clients "
                f"({row['runs']} runs, {row['wall_time_s']:.0f} s)\n"
            )

    try:
        rows, points = run_capacity_sweep(sweep, workers, show)
    except CapacitySweepInterrupted as stopped:  # keep the searches that finished
        stopped.rows.to_csv(out / "capacity.csv", index=False)
        stopped.points.to_csv(out / "points.csv", index=False)
        sys.stderr.write(
            f"simsrv: interrupted: {len(stopped.rows)} of {stopped.total} capacity searches "
            f"had finished; their rows are in {out}/capacity.csv and points.csv\n"
        )
        return 130
    rows.to_csv(out / "capacity.csv", index=False)
    points.to_csv(out / "points.csv", index=False)
    if rows.empty:
        raise InputError("--sweep: every search failed (see above)")
    table = capacity_summary(rows, list(sweep.varied) or ["nodes"])
    table.to_csv(out / "summary.csv", index=False)
    print(table.to_string(index=False))
    return 0
