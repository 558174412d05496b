"""``simsrv pingpong [PROFILE...]``: the libVIP paper's ping-pong benchmark on the model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.cli.parser import prepare_output_file
from simsrv.core import json_output
from simsrv.core.errors import InputError

DEFAULT_PROFILES = ("libvip", "libvip-altered", "tcp")


def add_parser(subparsers) -> None:
    """Register the ``pingpong`` subcommand."""
    p = subparsers.add_parser(
        "pingpong",
        help="the libVIP paper's ping-pong on an interconnect profile: bandwidth per size",
        description="Run the ping-pong of [V §4.1] on the interconnect model: 100 round trips "
        "per message size (10 to 100,000 bytes), t_c = elapsed / (2 x 100) and bandwidth "
        "m / t_c (MB/s = 10^6 bytes/s).  Asynchronous profiles run the libVIP program (post "
        "send and receive, then wait), synchronous ones the sockets program (send, recv).  "
        f"Profiles: {', '.join(DEFAULT_PROFILES)} (default: all) or a .toml file.  See "
        "docs/interconnect.md.",
    )
    p.add_argument("profiles", nargs="*", metavar="PROFILE", help="profile names or files")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {profile, message_bytes, time_us, bandwidth_MB_per_s}",
    )
    p.add_argument(
        "--out", type=Path, default=None, metavar="FIG", help="also draw the curves (.png/.svg)"
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv pingpong``."""
    from simsrv.interconnect import load_profile, run_pingpong

    profiles = [load_profile(name) for name in args.profiles or DEFAULT_PROFILES]
    if args.out is not None:
        if args.out.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise InputError(f"--out: must end in .png, .svg or .pdf, got {str(args.out)!r}")
        prepare_output_file(args.out, "--out")
    rows = [point.row() for point in run_pingpong(profiles)]
    if args.json:
        json_output.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print(f"{'profile':16} {'bytes':>8} {'t_c (us)':>10} {'MB/s':>8}")
        for row in rows:
            print(
                f"{row['profile']:16} {row['message_bytes']:>8} {row['time_us']:>10.2f} "
                f"{row['bandwidth_MB_per_s']:>8.2f}"
            )
    if args.out is not None:
        _draw(rows, args.out)
        sys.stderr.write(f"wrote {args.out}\n")
    return 0


def _draw(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from simsrv.figures.pingpong import pingpong_figure
    from simsrv.interconnect.paper import PAPER_POINTS

    model = pd.DataFrame(rows)
    names = set(model.profile)
    paper = pd.DataFrame(
        [
            {"profile": p.profile, "message_bytes": p.message_bytes,
             "bandwidth_MB_per_s": p.bandwidth_MB_per_s}
            for p in PAPER_POINTS
            if p.profile in names
        ]
    )  # fmt: skip
    fig = pingpong_figure(model, paper if len(paper) else None)
    fig.savefig(out, dpi=110)
