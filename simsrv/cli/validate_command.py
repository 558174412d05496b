"""``simsrv validate``: the model against every published figure of the reference table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.cli.parser import add_workers_argument, resolve_workers, whole_number
from simsrv.core import json_output
from simsrv.core.defaults import MAX_SEEDS, QUICK_DURATION_S, QUICK_SEEDS, VALIDATION_SEEDS
from simsrv.core.errors import InputError
from simsrv.core.paths import is_file


def add_parser(subparsers) -> None:
    """Register the ``validate`` subcommand."""
    p = subparsers.add_parser(
        "validate",
        help="run every published figure's scenario and compare (calibration and predictions)",
        description="Run the scenario of every row of the reference table "
        "(simsrv/validation/reference.toml) over --seeds seeds and print, per paper, the "
        "paper's value, the model's mean +- 95%% CI, the relative error, the tolerance and "
        "pass/fail.  Exit status 1 when a calibration target is out of tolerance (predictions "
        "are reported, never fatal).  See docs/validation.md.",
    )
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument(
        "--seeds",
        type=whole_number(1, MAX_SEEDS),
        default=None,
        help=f"seeds per row (default {VALIDATION_SEEDS}; {QUICK_SEEDS} with --quick)",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="only these papers (cordeiro2007, abdelkhalek2004, area2004, libvip2004) or row ids "
        "(repeatable)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_SEEDS} seeds of {QUICK_DURATION_S:g} simulated s per run (for CI)",
    )
    add_workers_argument(p)
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    p.add_argument(
        "--doc",
        type=Path,
        default=None,
        metavar="PATH",
        help="also rewrite the marked tables of this Markdown page (docs/validation.md)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv validate`` (the simulator is imported here, not at start-up)."""
    from simsrv.sweep.progress import Progress
    from simsrv.validation.reference import load_reference
    from simsrv.validation.report import update_doc
    from simsrv.validation.validate import calibration_failures, validate

    reference = load_reference()
    names = only_names(args.only)
    rows = reference.select(names)
    seeds = (
        args.seeds if args.seeds is not None else QUICK_SEEDS if args.quick else VALIDATION_SEEDS
    )
    workers = resolve_workers(args.workers)
    if args.doc is not None and not is_file(args.doc):
        raise InputError(f"--doc: file not found: {args.doc}")
    if args.list:
        for row in rows:
            print(f"{row.id:40} {row.kind:11} {row.paper:16} {row.description}")
        return 0

    progress = Progress(0)
    try:
        results = validate(
            rows,
            seeds=seeds,
            quick=args.quick,
            workers=workers,
            on_job=lambda label, error: progress.update(label, error),
            on_plan=lambda total: setattr(progress, "total", total),
        )
    except KeyboardInterrupt as interrupt:
        progress.close()
        _print(args, getattr(interrupt, "results", []), reference)
        raise
    _print(args, results, reference)
    if args.doc is not None:
        papers = update_doc(args.doc, results, reference)
        sys.stderr.write(f"updated the tables of {', '.join(papers)} in {args.doc}\n")
    failures = calibration_failures(results)
    if failures:
        sys.stderr.write(
            f"simsrv validate: {len(failures)} calibration target(s) out of tolerance: "
            f"{', '.join(r.row.id for r in failures)}\n"
        )
        return 1
    return 0


def only_names(values: list[str]) -> list[str]:
    """The names given by the ``--only`` flags (comma-separated); an empty name is an error
    (``--only ""`` must not silently select every row)."""
    names = []
    for value in values:
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):
            raise InputError(
                f"--only: empty name in {value!r}; give paper names or row ids separated by "
                "commas (simsrv validate --list)"
            )
        names += parts
    return names


def _print(args: argparse.Namespace, results: list, reference) -> None:
    """Print the :class:`~simsrv.validation.validate.RowResult` list as text or JSON."""
    from simsrv.validation.report import format_text

    if args.json:
        titles = {name: paper.title for name, paper in reference.papers.items()}
        json_output.dump([r.to_json(titles[r.row.paper]) for r in results], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(format_text(results, reference))
