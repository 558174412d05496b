"""``simsrv run``: simulate one scenario and print its metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simsrv.cli.parser import add_scenario_arguments, prepare_output_file
from simsrv.core import json_output

if TYPE_CHECKING:
    from simsrv.pipeline.result import RunResult


def add_parser(subparsers) -> None:
    """Register the ``run`` subcommand."""
    p = subparsers.add_parser(
        "run",
        help="simulate one scenario and print its metrics",
        description="Simulate one scenario and print its metrics (measured after the warm-up).",
    )
    add_scenario_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the per-CPU interval trace of the measured window to FILE (.parquet, .csv, "
        "or .json: a Chrome trace-event file that Perfetto opens as a timeline)",
    )
    p.add_argument(
        "--trace-warmup",
        action="store_true",
        help="with --trace: keep the warm-up's intervals too (from simulated time 0)",
    )
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Execute ``simsrv run`` (the simulator is imported here, not at start-up)."""
    from simsrv.core.errors import InvariantViolation
    from simsrv.machine.trace_export import check_trace_path, write_trace
    from simsrv.pipeline.keep_window import KeepWindow
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.result import run

    if args.trace is not None:
        check_trace_path(args.trace)
        prepare_output_file(args.trace, "--trace")
    scenario = load_scenario(args.scenario, args.overrides)
    keep = None
    if args.trace is not None:  # the rows written, and the warm-up's: a violation there
        keep = KeepWindow(*trace_span(scenario, keep_warmup=True))  # writes them all
    try:
        result = run(scenario, keep_trace=keep)
    except InvariantViolation as violation:  # keep the trace: it shows the violation
        if args.trace is not None and violation.trace is not None:
            write_trace(violation.trace, args.trace)
        raise
    if args.trace is not None:
        trace = measured_trace(result, keep_warmup=args.trace_warmup)
        write_trace(trace, args.trace)
        sys.stderr.write(
            f"simsrv: {describe_trace(args.trace, trace, result, args.trace_warmup)}\n"
        )
    if args.json:
        json_output.dump(result.to_json_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_summary(result))
    return 0


def measured_trace(result: RunResult, keep_warmup: bool = False):
    """The run's interval trace cut to the measured window ``[warmup_s, warmup_s +
    duration_s]`` (the one every metric covers), or from 0 s with ``keep_warmup``."""
    from simsrv.metrics.timeline import clip_intervals

    return clip_intervals(result.trace, *trace_span(result.scenario, keep_warmup))


def trace_span(scenario, keep_warmup: bool) -> tuple[float, float]:
    """The simulated span ``--trace`` writes, s: the measured window, or from 0 s with
    ``keep_warmup``."""
    run_ = scenario.run
    return (0.0 if keep_warmup else run_.warmup_s), run_.warmup_s + run_.duration_s


def describe_trace(path: Path, trace, result: RunResult, kept_warmup: bool) -> str:
    """One line saying where the trace went and what it holds (intervals, simulated window)."""
    run_ = result.scenario.run
    start_s, end_s = trace_span(result.scenario, kept_warmup)
    warmup = (
        "warm-up included"
        if kept_warmup
        else f"the {run_.warmup_s:g} s warm-up left out; --trace-warmup keeps it"
    )
    return (
        f"trace written to {path}: {len(trace)} intervals, simulated {start_s:g}-{end_s:g} s "
        f"({warmup})"
    )


def format_summary(result: RunResult) -> str:
    """A readable table of the summary metrics."""
    s, sc = result.summary, result.scenario
    lines = [
        f"simsrv {result.version}  strategy={sc.server.strategy}  map={sc.map.kind}  "
        f"players={sc.players.count}  cpus={sc.machine.cpus}  platform={sc.machine.platform}  "
        f"seed={result.seed}",
        f"measured {s['simulated_time_s']:g} s after {sc.run.warmup_s:g} s warm-up, "
        f"{s['frames']} frames, wall time {result.wall_time_s:.2f} s",
        "",
        f"  {'frames/s':<22}{s['frames_per_s']:>12.1f}",
        f"  {'messages/frame':<22}{s['messages_per_frame']:>12.2f}",
        f"  {'messages/s':<22}{s['messages_per_s']:>12.1f}",
        f"  {'replies/s':<22}{s['replies_per_s']:>12.1f}",
        f"  {'dropped fraction':<22}{s['dropped_fraction']:>12.4f}",
        f"  {'parallel fraction':<22}{s['parallel_fraction']:>12.4f}",
        f"  {'lock wait fraction':<22}{s['lock_wait_fraction']:>12.4f}",
        f"  {'barrier wait fraction':<22}{s['barrier_wait_fraction']:>12.4f}",
        f"  {'any thread waiting':<22}{s['any_waiting_fraction']:>12.4f}",
        "  cpu utilization       " + "  ".join(f"{u:.3f}" for u in s["cpu_utilization"]),
        "",
        f"  {'':<22}{'mean':>8}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}",
        *(
            f"  {label:<22}"
            + "".join(f"{d[k]:>8.1f}" for k in ("mean", "p50", "p95", "p99", "max"))
            for label, d in (
                ("response time ms", s["response_time_ms"]),
                ("socket wait ms", s["socket_wait_ms"]),
            )
        ),
        "",
        "  time breakdown (share of total CPU time)",
    ]
    if s["unanswered_packets"]:
        lines.insert(-2, f"  packets without a reply (rate limit): {s['unanswered_packets']}")
    lines += [f"    {a:<24}{v:>10.4f}" for a, v in s["time_breakdown"].items()]
    stages = s["stage_time_fraction"]
    lines += ["", "  stage time (mean share of each thread's time)"]
    lines += [f"    {a:<24}{v:>10.4f}" for a, v in stages.items()]
    m = s["moments"]
    lines += [
        "",
        "  frame moments (share of frame time)  "
        + "  ".join(f"{k} {m[k]:.3f}" for k in ("overlap", "sequential", "parallel", "tail")),
    ]
    os_share = s["os_time_fraction"]
    if any(os_share.values()):
        lines.append(
            "  OS time (share of CPU time)          "
            + "  ".join(f"{k} {v:.4f}" for k, v in os_share.items())
        )
    if s["softirq_fraction"]:
        lines.append(
            "  interrupt CPU in the receive softirq  "
            f"{s['softirq_fraction']:.4f} of its time (not in the breakdown above)"
        )
    if "groups" in s:
        g = s["groups"]
        lines.append(
            f"  groups per frame {g['mean_count']:.2f}, entities per group {g['mean_size']:.2f}, "
            f"largest {g['max_size']:.0f}, largest share {g['largest_share']:.2f}"
        )
    return "\n".join(lines) + "\n"
