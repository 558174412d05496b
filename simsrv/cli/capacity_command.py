"""``simsrv capacity``: the most clients a scenario's server keeps up with (any strategy)."""

from __future__ import annotations

import argparse
import json
import sys

from simsrv.cli.parser import add_scenario_arguments, finite_float
from simsrv.defaults import MAX_DROPPED, MIN_REPLY_RATIO
from simsrv.errors import InputError


def add_parser(subparsers) -> None:
    """Register the ``capacity`` subcommand."""
    p = subparsers.add_parser(
        "capacity",
        help="raise the client count in steps until the server falls behind",
        description="Run the scenario at --start, --start + --step, ... clients until "
        "replies/s fall below --min-reply-ratio x the packets/s the clients offer or more "
        f"than {MAX_DROPPED:g} of the packets are dropped; report the largest count that met "
        "both (see docs/cli.md).",
    )
    add_scenario_arguments(p)
    p.add_argument("--start", type=int, default=8, help="first client count (default 8)")
    p.add_argument("--step", type=int, default=8, help="clients added per step (default 8)")
    p.add_argument("--max", dest="max_clients", type=int, default=1024, help="last count tried")
    p.add_argument(
        "--min-reply-ratio",
        type=finite_float,
        default=MIN_REPLY_RATIO,
        help=f"replies/s a met count needs, as a share of the offered packets/s "
        f"(default {MIN_REPLY_RATIO:g}; 0 < ratio <= 1)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv capacity`` (the simulator is imported here, not at start-up)."""
    from simsrv.capacity import Capacity, find_capacity

    for name in ("start", "step", "max_clients"):
        if getattr(args, name) < 1:
            flag = "--max" if name == "max_clients" else f"--{name}"
            raise InputError(f"{flag}: must be a whole number >= 1, got {getattr(args, name)}")
    if args.start > args.max_clients:
        raise InputError(f"--start: must be <= --max ({args.max_clients}), got {args.start}")
    if not 0 < args.min_reply_ratio <= 1:
        raise InputError(
            f"--min-reply-ratio: must be a number in (0, 1], got {args.min_reply_ratio:g}"
        )
    result = Capacity()

    def show(point: dict) -> None:
        if not args.json:
            verdict = "met" if point["met"] else "overloaded"
            print(
                f"  {point['clients']:>6d} clients  replies/s {point['replies_per_s']:>10.1f}  "
                f"offered/s {point['offered_per_s']:>10.1f}  dropped "
                f"{point['dropped_fraction']:.3f}  {verdict}",
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
        json.dump(result.to_json(), sys.stdout, indent=1)
        print()
        return
    state = "" if result.complete else " (interrupted: lower bound)"
    if result.points and result.points[-1]["met"] and result.complete:
        state = f" (still met at --max {args.max_clients}: lower bound)"
    print(f"capacity: {result.capacity_clients} clients{state}")
