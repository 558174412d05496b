"""``simsrv map``: draw a scenario's map and its players, as a PNG or an animated GIF."""

from __future__ import annotations

import argparse
from pathlib import Path

from simsrv.cli.parser import add_scenario_arguments, finite_float, prepare_output_file
from simsrv.core.errors import InputError

IMAGE_SUFFIXES = (".png", ".svg", ".pdf")
MAX_GIF_FRAMES = 1000  # each snapshot simulates the world and draws a picture (~0.1 s)


def add_parser(subparsers) -> None:
    """Register the ``map`` subcommand."""
    p = subparsers.add_parser(
        "map",
        help="draw the map and a snapshot of its players (PNG) or an animation (GIF)",
        description="Draw walls, doorways, concentration areas, spawn points and the players "
        "coloured by BSP group in a frame where a share --active of them sent a packet, at "
        "--time; with --frames N and a .gif output, N snapshots --step seconds apart.",
    )
    add_scenario_arguments(p)
    p.add_argument("--out", type=Path, default=None, help="picture (.png, .svg, .pdf, .gif)")
    p.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="FILE",
        help='also write the built map as a TOML data file (load it with map.kind = "file")',
    )
    p.add_argument(
        "--graph",
        type=Path,
        default=None,
        metavar="FILE.graphml",
        help="also write the snapshot frame's interaction graph (players and map entities with "
        "their group and position; edges: action-range interactions) as GraphML",
    )
    p.add_argument(
        "--time", type=finite_float, default=5.0, help="simulated time of the snapshot, s"
    )
    p.add_argument(
        "--frames", type=int, default=1, help=f"snapshots in a .gif (1 to {MAX_GIF_FRAMES})"
    )
    p.add_argument("--step", type=finite_float, default=0.5, help="time between .gif frames, s")
    p.add_argument(
        "--active",
        type=finite_float,
        default=0.2,
        help="share of players that sent a packet in the frame drawn (0-1; 0.2 is the "
        "fork-wait run's 33 of 160)",
    )
    p.set_defaults(handler=map_command)


def map_command(args: argparse.Namespace) -> int:
    """Execute ``simsrv map``."""
    if args.out is None and args.export is None and args.graph is None:
        raise InputError("--out, --export or --graph: give at least one output file")
    if args.graph is not None and args.graph.suffix.lower() != ".graphml":
        raise InputError(f"--graph: unsupported file type {args.graph.suffix!r}; allowed: .graphml")
    suffix = args.out.suffix.lower() if args.out is not None else ".png"
    allowed = (*IMAGE_SUFFIXES, ".gif")
    if suffix not in allowed:
        raise InputError(f"--out: unsupported file type {suffix!r}; allowed: {', '.join(allowed)}")
    if args.time < 0:
        raise InputError(f"--time: must be >= 0 s, got {args.time:g}")
    if not 1 <= args.frames <= MAX_GIF_FRAMES:
        raise InputError(
            f"--frames: must be a whole number from 1 to {MAX_GIF_FRAMES}, got {args.frames}"
        )
    if args.frames > 1 and suffix != ".gif":
        raise InputError(
            f"--frames: must be 1 for a {suffix} picture (use .gif), got {args.frames}"
        )
    if not 0.0 <= args.active <= 1.0:
        raise InputError(f"--active: must be between 0 and 1, got {args.active:g}")
    if args.step <= 0:
        raise InputError(f"--step: must be > 0 s, got {args.step:g}")
    for path, flag in ((args.out, "--out"), (args.export, "--export"), (args.graph, "--graph")):
        if path is not None:
            prepare_output_file(path, flag)
    import matplotlib

    matplotlib.use("Agg")
    from simsrv.figures.map_view import map_figure, save_animation
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.seeding import run_streams
    from simsrv.pipeline.simulation import build_map
    from simsrv.pipeline.snapshot import snapshots
    from simsrv.world.maps.file import map_to_toml

    scenario = load_scenario(args.scenario, args.overrides)
    if args.export is not None and scenario.map.kind == "bsp":
        raise InputError("--export: a bsp map is its BSP file (map.file); export box maps only")
    if args.out is None and args.graph is None:
        game_map = build_map(scenario, run_streams(scenario.run))
    else:
        times = [args.time + i * args.step for i in range(args.frames)]
        game_map, snaps = snapshots(scenario, times, args.active)
    if args.export is not None:
        args.export.write_text(map_to_toml(game_map))
        print(f"wrote {args.export}")
    if args.graph is not None:
        from simsrv.pipeline.graph_export import write_graphml

        vertices, edges = write_graphml(game_map, snaps[0], args.graph)
        print(
            f"wrote {args.graph} ({vertices} vertices, {edges} edges at t = {snaps[0].time_s:g} s)"
        )
    if args.out is None:
        return 0
    title = (
        f"{scenario.map.kind} map, {scenario.players.mobility} players, seed {scenario.run.seed}"
    )
    if suffix == ".gif":
        save_animation(game_map, snaps, str(args.out), title)
    else:
        map_figure(game_map, snaps[0], title).savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0
