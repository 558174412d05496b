"""``simsrv testbed``: measure a real QuakeWorld server on this machine (docs/testbed.md).

Three forms:

- ``simsrv testbed --clients 16 --map dm1 --duration-s 20 [--json] [--out DIR]``: one run;
- ``simsrv testbed --campaign standard|FILE --out DIR``: a resumable campaign of runs
  (and the capacity search under a CPU quota);
- ``simsrv testbed --compare DIR [--platform NAME]``: the model against a stored campaign:
  every measured quantity beside the model's, the validation table and figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.cli.parser import finite_float, prepare_output_dir, whole_number
from simsrv.core import json_output
from simsrv.core.errors import InputError

MAX_COMPARE_SEEDS = 100
"""The most model seeds per condition ``--compare`` runs (seed i replays repeat i's sends;
a campaign has a few repeats)."""
MODES = ("--primitives", "--compare", "--campaign")


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def add_parser(subparsers) -> None:
    """Register the ``testbed`` subcommand."""
    p = subparsers.add_parser(
        "testbed",
        help="measure the real QuakeWorld server (mvdsv) on this machine with synthetic "
        "clients; campaigns; the model against them",
        description="Build the patched mvdsv 0.35 from the shared folder (../shared/qw-"
        "testbed, GPL, never copied here), start it on one CPU, sign on N synthetic clients "
        "on the other and measure every server frame (thread CPU time per stage, packets, "
        "replies).  Prints a summary like simsrv run --json; --out keeps frames.parquet, "
        "clients.parquet and summary.json.  See docs/testbed.md.",
    )
    p.add_argument("--clients", type=_int, default=16, help="synthetic clients, 1-256 (16)")
    p.add_argument(
        "--clients-impl",
        default="c",
        metavar="c|python",
        help="the synthetic clients: the compiled load generator (c, default) or the Python "
        "loop (python; up to ~32 clients at 77 Hz)",
    )
    p.add_argument("--map", default="dm1", help="id map in ../shared/maps/quake-gpl (dm1)")
    p.add_argument(
        "--rate-hz",
        type=finite_float,
        default=77.0,
        help="packets per second per client (77, mvdsv's maxfps)",
    )
    p.add_argument(
        "--phases", default="independent", help="step | independent | hosts:H (independent)"
    )
    p.add_argument("--duration-s", type=finite_float, default=20.0, help="measured seconds (20)")
    p.add_argument(
        "--warmup-s",
        type=finite_float,
        default=2.0,
        help="seconds played after sign-on before measuring (2)",
    )
    p.add_argument("--seed", type=_int, default=1, help="the clients' random seed (1)")
    p.add_argument(
        "--quota-us",
        type=_int,
        default=None,
        help="cgroup v1 CPU quota per period, us (>= 1000; default: none)",
    )
    p.add_argument("--period-us", type=_int, default=100_000, help="cgroup CPU period, us (100000)")
    p.add_argument("--port", type=_int, default=27600, help="server UDP port (27600)")
    p.add_argument(
        "--server",
        default="mvdsv",
        metavar="mvdsv|quaketm-serial|quaketm-global|quaketm-coarse|quaketm-fine",
        help="the real server: mvdsv 0.35 (one thread) or one of QuakeTM's lock-based "
        "OpenMP builds (mvdsv)",
    )
    p.add_argument("--threads", type=_int, default=1, help="QuakeTM's OpenMP threads, 1-8 (1)")
    p.add_argument(
        "--frame-s",
        type=finite_float,
        default=0.1,
        help="QuakeTM's fixed frame period, s (0.1, the stock FRAMETIME)",
    )
    p.add_argument(
        "--omp-wait",
        default="passive",
        metavar="passive|active",
        help="QuakeTM's idle OpenMP threads sleep (passive) or spin (active) (passive)",
    )
    p.add_argument(
        "--bind",
        action="store_true",
        help="QuakeTM: bind each OpenMP thread to one CPU (with --server-cpu all)",
    )
    p.add_argument(
        "--server-cpu",
        type=_cpu,
        default="auto",
        help="CPU the server runs on, or all (auto: 1; all for QuakeTM with 2+ threads)",
    )
    p.add_argument("--client-cpu", type=_int, default=0, help="CPU the clients run on (0)")
    p.add_argument(
        "--shared",
        type=Path,
        default=None,
        help="the shared folder (default: ../shared beside the checkout)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write frames.parquet, clients.parquet, summary.json (a campaign's "
        "store with --campaign; the comparison's output with --compare)",
    )
    p.add_argument(
        "--campaign",
        default=None,
        metavar="standard|FILE",
        help="measure a campaign into --out (resumable)",
    )
    p.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the model on every condition of a stored campaign and write "
        "the validation table and figure into DIR",
    )
    p.add_argument(
        "--primitives",
        action="store_true",
        help="measure this machine's primitive costs of a lock-based OpenMP server (lock, "
        "contended hand-off, cache-line transfer, team wake-up, task, barrier; both wait "
        "policies) and write primitives.parquet into --out",
    )
    p.add_argument(
        "--platform",
        default="this-machine-mvdsv",
        help="platform the model runs on with --compare (this-machine-mvdsv)",
    )
    p.add_argument(
        "--seeds",
        type=whole_number(1, MAX_COMPARE_SEEDS),
        default=2,
        help=f"model seeds per condition with --compare, 1-{MAX_COMPARE_SEEDS} (2)",
    )
    p.set_defaults(handler=handle)


def _cpu(text: str) -> int | str | None:
    """A CPU number, ``all`` (None: every CPU) or ``auto``."""
    if text in ("auto", "all"):
        return None if text == "all" else text
    return _int(text)


def server_cpu(value: int | str | None, server: str, threads: int) -> int | None:
    """``--server-cpu``: ``auto`` is CPU 1, or every CPU for QuakeTM with 2+ threads."""
    if value == "auto":
        return None if server != "mvdsv" and threads > 1 else 1
    return value


def handle(args: argparse.Namespace) -> int:
    """Execute ``simsrv testbed``."""
    given = [
        flag
        for flag, value in zip(MODES, (args.primitives, args.compare, args.campaign), strict=True)
        if value not in (None, False)
    ]
    if len(given) > 1:
        raise InputError(f"testbed: {given[0]} and {given[1]} are two commands: give one of them")
    if args.primitives:
        return _primitives(args)
    if args.compare is not None:
        return _compare(args)
    if args.campaign is not None:
        return _campaign(args)
    from simsrv.testbed.clients import PhasePattern
    from simsrv.testbed.run import TestbedConfig, run_testbed

    config = TestbedConfig(
        clients=args.clients,
        map=args.map,
        rate_hz=args.rate_hz,
        phases=PhasePattern.parse(args.phases).label(),
        duration_s=args.duration_s,
        warmup_s=args.warmup_s,
        seed=args.seed,
        quota_us=args.quota_us,
        period_us=args.period_us,
        port=args.port,
        server_cpu=server_cpu(args.server_cpu, args.server, args.threads),
        client_cpu=args.client_cpu,
        clients_impl=args.clients_impl,
        server=args.server,
        threads=args.threads,
        frame_s=args.frame_s,
        omp_wait=args.omp_wait,
        bind=args.bind,
    ).checked()
    if args.out is not None:
        prepare_output_dir(args.out, "--out")
    try:
        result = run_testbed(config, shared_root=args.shared)
    except RuntimeError as error:  # the server crashed, the clients could not sign on...
        sys.stderr.write(f"simsrv: testbed: {error}\n")
        return 1
    if args.out is not None:
        result.write(args.out)
    if args.json:
        json_output.dump(result.summary, sys.stdout, indent=1)
        print()
    else:
        print(format_summary(result.summary))
    warning = result.summary.get("load_generator_warning")
    if warning:
        sys.stderr.write(f"simsrv: testbed: {warning}\n")
        return 2
    return 0


def format_summary(s: dict) -> str:
    """The summary's main lines, for a terminal."""
    if s.get("server", "mvdsv") != "mvdsv":
        return format_quaketm_summary(s)
    rt = s["round_trip_ms"]
    share = ", ".join(f"{k} {v:.0%}" for k, v in s["cpu_share"].items())
    return "\n".join(
        [
            f"real server {s['label']}: {s['clients_began']} clients signed on, "
            f"{s['clients_moved']} moved",
            f"  frames/s {s['frames_per_s']:.1f}   messages/frame {s['messages_per_frame']:.2f}   "
            f"messages/s {s['messages_per_s']:.1f}   replies/s {s['replies_per_s']:.1f}",
            f"  reply ratio {s['reply_ratio']:.3f}   server CPU {s['server_cpu_utilization']:.1%}"
            f"   clients' CPU {s['client_cpu_share']:.0%} ({s['load_generator']})",
            f"  server CPU by stage: {share}",
            f"  round trip ms: mean {rt['mean']:.2f}  p50 {rt['p50']:.2f}  p95 {rt['p95']:.2f}  "
            f"p99 {rt['p99']:.2f}  max {rt['max']:.2f}",
            f"  packets sent {s['packets_sent_by_clients']}, read {s['packets_read_by_server']}",
        ]
    )


def format_quaketm_summary(s: dict) -> str:
    """A QuakeTM run's main lines: the frame, the request stage and where its time went."""
    r, fc = s["request"], s["frame_compute_ms"]
    stages = ", ".join(f"{k} {v:.3f}" for k, v in s["stage_wall_ms_per_frame"].items())
    waits = ", ".join(
        f"{c} {r[f'lock_wait_share.{c}']:.1%}" for c in ("global", "areanode", "client", "other")
    )
    return "\n".join(
        [
            f"real server {s['label']}: {s['clients_began']} clients signed on, "
            f"{s['clients_moved']} moved",
            f"  frames/s {s['frames_per_s']:.1f}   messages/frame {s['messages_per_frame']:.1f}   "
            f"replies/s {s['replies_per_s']:.1f}   reply ratio {s['reply_ratio']:.3f}",
            f"  frame compute ms: mean {fc['mean']:.3f}  p95 {fc['p95']:.3f}  max {fc['max']:.3f}"
            f"   (period {s['frame_s'] * 1e3:g} ms, overrun {s['overrun_share']:.1%})",
            f"  stage wall ms per frame: {stages}",
            f"  request stage ({s['threads']} threads): waking {r['wake_share']:.1%}, work "
            f"{r['work_share']:.1%}, lock waits {r['lock_wait_share']:.1%} ({waits}), idle "
            f"at the barrier {r['idle_end_share']:.1%}, overheads {r['overhead_share']:.1%}, "
            f"join {r['join_share']:.1%}",
            f"  request work us/packet {r['work_us_per_packet']:.2f}   server CPU "
            f"{s['server_cpu_utilization']:.1%}   clients' CPU {s['client_window_cpu_share']:.0%}",
        ]
    )


def _campaign(args: argparse.Namespace) -> int:
    from simsrv.testbed.build import find_shared
    from simsrv.testbed.campaign import load_campaign, run_campaign

    if args.out is None:
        raise InputError("testbed --campaign needs --out DIR (the campaign's store)")
    campaign = load_campaign(args.campaign)
    find_shared(args.shared)
    prepare_output_dir(args.out, "testbed --out")
    table = run_campaign(
        campaign, args.out, shared_root=args.shared, log=lambda line: sys.stderr.write(line + "\n")
    )
    sys.stderr.write(f"wrote {args.out / 'runs.parquet'} ({len(table)} runs)\n")
    return 0


def _primitives(args: argparse.Namespace) -> int:
    from simsrv.testbed.primitives import measure_primitives, summary

    if args.out is not None:
        prepare_output_dir(args.out, "testbed --out")
    table = measure_primitives()
    print(summary(table).to_string(index=False))
    if args.out is not None:
        table.to_parquet(args.out / "primitives.parquet", index=False)
        sys.stderr.write(f"wrote {args.out / 'primitives.parquet'}\n")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from simsrv.testbed.build import find_shared
    from simsrv.testbed.compare import compare_campaign
    from simsrv.testbed.store import read_runs

    store = args.compare
    runs = read_runs(store, "testbed --compare")
    find_shared(args.shared)
    out = args.out or store
    prepare_output_dir(out, "testbed --out")
    log = lambda line: sys.stderr.write(line + "\n")  # noqa: E731
    if runs["config.server"].astype(str).str.startswith("quaketm").all():
        from simsrv.testbed.quaketm_compare import compare_quaketm

        table, gains = compare_quaketm(
            store, out, seeds=args.seeds, shared_root=args.shared, log=log
        )
        sys.stderr.write(
            f"wrote {out / 'quaketm-validation.parquet'}, quaketm-validation.md, figure: "
            f"{int(table['within'].sum())}/{len(table)} quantities and "
            f"{int(gains['within'].sum())}/{len(gains)} speedups within tolerance\n"
        )
        return 0
    table = compare_campaign(
        store, out, platform=args.platform, seeds=args.seeds, shared_root=args.shared, log=log
    )
    passed = int(table["within"].sum())
    sys.stderr.write(
        f"wrote {out / 'validation.parquet'}, validation.md, figures: "
        f"{passed}/{len(table)} within tolerance\n"
    )
    return 0
