"""``simsrv calibrate PLATFORM``: re-fit a platform's costs to its calibration targets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simsrv.cli.parser import (
    add_workers_argument,
    finite_float,
    prepare_output_dir,
    prepare_output_file,
    resolve_workers,
    whole_number,
)
from simsrv.core.defaults import CALIBRATED_PLATFORMS, MAX_SEEDS, VALIDATION_SEEDS
from simsrv.core.errors import InputError


def add_parser(subparsers) -> None:
    """Register the ``calibrate`` subcommand."""
    names = ", ".join(CALIBRATED_PLATFORMS)
    p = subparsers.add_parser(
        "calibrate",
        help="re-fit a platform's cost parameters to its calibration targets",
        description="Fit the platform's fitted cost parameters to the calibration rows of its "
        "paper in the reference table (cordeiro2007-xeon and abdelkhalek2004-xeon-ht: one joint "
        "least-squares fit of every parameter to every target, frame rates and time shares, "
        "printing each target's residual, the sensitivity of each target to each parameter and "
        "the condition number; area2004-ultrasparc: three one-dimensional roots over "
        "seed-averaged runs; libvip2004: the interconnect profiles libvip, libvip-altered and "
        "tcp, a joint fit to the ping-pong of [V], written as a directory of profiles; "
        "this-machine-mvdsv: the real server measured by simsrv testbed, --data DIR), write "
        "the platform "
        f"file, then check every calibration row with the new file over {VALIDATION_SEEDS} seeds.  "
        f"Platforms: {names}.  Fit cordeiro2007-xeon first: the other two scale its costs.  "
        "Exit status 1 when a target ends out of tolerance (rows whose conflict with the other "
        "targets is recorded in the reference table excepted).  See docs/calibration.md.",
    )
    p.add_argument("platform", metavar="PLATFORM", help=f"one of {names}")
    p.add_argument(
        "--start",
        type=finite_float,
        default=1.0,
        help="start every fitted parameter at its committed value times this (default 1; "
        "e.g. 0.5 or 2 to check that the fit is stable)",
    )
    p.add_argument(
        "--seeds",
        type=whole_number(1, MAX_SEEDS),
        default=3,
        help="seeds per evaluation (default 3)",
    )
    p.add_argument(
        "--duration-s",
        type=finite_float,
        default=None,
        help="measured simulated seconds per evaluation run (default: the platform's, 4-5 s)",
    )
    add_workers_argument(p)
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="DIR",
        help="this-machine-mvdsv: the campaign store of simsrv testbed --campaign (its "
        "calibration conditions are the targets)",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="do not fit: print the identifiability report (residuals, sensitivities, "
        "condition number, unpinned parameters) at the committed values (joint fits only)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="platform file to write (default: the committed simsrv/platforms/PLATFORM.toml; "
        "for libvip2004 a directory, default simsrv/interconnect/profiles)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv calibrate`` (scipy and the simulator are imported here, not at start-up)."""
    from simsrv.calibration import CALIBRATORS, FitOptions, NoBracket
    from simsrv.calibration.fitting import log_to_stderr
    from simsrv.platforms.profile import PLATFORM_DIR
    from simsrv.validation.reference import load_reference
    from simsrv.validation.report import format_text
    from simsrv.validation.validate import calibration_failures, validate

    calibrator = CALIBRATORS.get(args.platform, "PLATFORM")
    if not args.start > 0:
        raise InputError(f"--start: must be a number > 0, got {args.start:g}")
    if args.duration_s is not None and not args.duration_s > 0:
        raise InputError(f"--duration-s: must be a number > 0, got {args.duration_s:g}")
    workers = resolve_workers(args.workers)
    if args.report:
        return _report(calibrator, args, workers)
    profile_set = getattr(calibrator, "source_dir", None)  # interconnect profiles
    source = profile_set or PLATFORM_DIR / f"{calibrator.platform}.toml"
    out = args.out if args.out is not None else source
    if profile_set is not None:
        prepare_output_dir(out, "--out")
    else:
        prepare_output_file(out, "--out")

    options = FitOptions(
        seeds=args.seeds,
        duration_s=args.duration_s or calibrator.duration_s,
        start=args.start,
        workers=workers,
        data=args.data,
    )
    try:
        fitted = calibrator.fit(options, log_to_stderr)
    except NoBracket as error:
        sys.stderr.write(f"simsrv calibrate: no fit: {error}\n")
        return 1
    print(json.dumps(fitted, indent=1))
    calibrator.write(fitted, source, out)
    sys.stderr.write(f"wrote {out}\n")

    reference = load_reference()
    results = validate(
        reference.platform_rows(calibrator.platform),
        workers=workers,
        platform_files={calibrator.platform: str(out.resolve())},
    )
    print(format_text(results, reference))
    failures = calibration_failures(results)
    if failures:
        sys.stderr.write(
            f"simsrv calibrate: {len(failures)} target(s) out of tolerance with the new fit: "
            f"{', '.join(r.row.id for r in failures)}\n"
        )
        return 1
    return 0


def _report(calibrator, args: argparse.Namespace, workers: int) -> int:
    """``--report``: the identifiability report at the committed values, nothing written."""
    from simsrv.calibration import CALIBRATORS, FitOptions
    from simsrv.calibration.fitting import log_to_stderr

    if calibrator.report is None:
        joint = ", ".join(n for n in CALIBRATORS.names() if CALIBRATORS.get(n, "").report)
        raise InputError(
            f"--report: {calibrator.platform} is fitted by one-dimensional roots, not a joint "
            f"fit; allowed: {joint}"
        )
    options = FitOptions(
        seeds=args.seeds,
        duration_s=args.duration_s or calibrator.duration_s,
        start=args.start,
        workers=workers,
        data=args.data,
    )
    report = calibrator.report(options, log_to_stderr)
    print(report.format())
    return 1 if report.unpinned else 0
