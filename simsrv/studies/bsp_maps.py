"""Groups and frame rates on id's deathmatch maps (dm1-dm6) with 16 to 640 bots.

Usage::

    python -m simsrv.studies.bsp_maps [--maps-dir ../shared/maps/quake-gpl] [--seeds 2]
                                      [--duration 5] [--out docs/bsp-maps]

Every run is ``scenarios/bsp/dm4-160.toml`` with the map file, the bot count, the seed and the
strategy replaced: quake-bot players (attraction 0.5 towards the items), 21.875 packets/s per
client (the final version's 3,850 messages/s over 160 clients [P Table 1]), on the
``cordeiro2007-xeon`` platform (2 CPUs).  Two servers per map and bot count: ``sequential``
and ``bsp-group`` in its final version (clone, pinned, no wait).  For comparison, the same is
run on the ``cube`` map (the thesis' map without concentration areas).

Columns of ``<out>.csv`` (one row per map, bots, strategy, seed): ``map``, ``bots``,
``strategy``, ``seed``, ``extent_x_units`` / ``extent_y_units`` / ``extent_z_units`` (the
world box), ``spawn_points``, ``frames_per_s``, ``messages_per_frame``, ``dropped_fraction``,
``groups_per_frame``, ``entities_per_group``, ``largest_group_max`` (entities),
``largest_group_share`` (mean over frames of the largest group's share of the frame's grouped
entities: above 1/2, two CPUs cannot be balanced), ``largest_group_players_share`` (mean
largest group over the bot count), ``group_balance_2cpus`` / ``group_balance_8cpus``
(:func:`group_balance`: 1 is a perfectly balanced group phase, ``1 / cpus`` all of it on one
CPU).  ``<out>.md`` is the table of docs/bsp-maps.md (means over seeds).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.core.toml_file import read_toml
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import apply_override, build_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_map
from simsrv.strategies.grouping.balancers import lpt, makespan
from simsrv.sweep.orphan import exit_with_parent

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "bsp" / "dm4-160.toml"
MAPS = ("dm1", "dm2", "dm3", "dm4", "dm5", "dm6")
BOTS = (16, 32, 160, 640)
STRATEGIES = {
    "sequential": ["server.strategy=sequential", "server.options={}"],
    "bsp-group": ["server.strategy=bsp-group"],
}
DEFAULT_MAPS_DIR = ROOT.parent / "shared" / "maps" / "quake-gpl"


def _row(job: tuple[str, str, int, str, int, float]) -> dict:
    name, map_file, bots, strategy, seed, duration = job
    raw = read_toml(BASE)
    if name == "cube":
        raw["map"] = {"kind": "cube"}
    else:
        raw["map"]["file"] = map_file
    for item in [
        f"players.count={bots}",
        f"run.seed={seed}",
        f"run.duration_s={duration}",
        *STRATEGIES[strategy],
    ]:
        apply_override(raw, item)
    result = run(build_scenario(raw), keep_frames=KEEP_ALL)
    s, frames = result.summary, result.frames
    groups = s.get("groups", {})  # only grouping strategies report groups
    grouped = frames[frames["groups"] > 0] if "groups" in frames else frames.iloc[:0]
    game_map = build_map(result.scenario, spawn_streams(seed))
    extent = game_map.extent_max - game_map.extent_min
    row = {
        "map": name,
        "bots": bots,
        "strategy": strategy,
        "seed": seed,
        "extent_x_units": extent[0],
        "extent_y_units": extent[1],
        "extent_z_units": extent[2],
        "spawn_points": len(game_map.spawn_points),
        "frames_per_s": s["frames_per_s"],
        "messages_per_frame": s["messages_per_frame"],
        "dropped_fraction": s["dropped_fraction"],
        "groups_per_frame": groups.get("mean_count", float("nan")),
        "entities_per_group": groups.get("mean_size", float("nan")),
        "largest_group_max": groups.get("max_size", float("nan")),
        "largest_group_share": groups.get("largest_share", float("nan")),
        "largest_group_players_share": (
            float(grouped["largest_group"].mean() / bots) if len(grouped) else 0.0
        ),
        "group_balance_2cpus": group_balance(grouped, 2),
        "group_balance_8cpus": group_balance(grouped, 8),
    }
    return row


def group_balance(frames: pd.DataFrame, cpus: int) -> float:
    """Mean over frames of the group phase's balance on ``cpus`` CPUs.

    Each frame's groups (``group_sizes``) are placed by LPT on ``cpus`` processes, the
    coordinator starting at 1 as in BSP-group; the balance is the even share
    ``(entities + 1) / cpus`` over the makespan.  1: perfectly balanced; ``1 / cpus``: all on
    one CPU (one group).  NaN without groups (strategies that form none).
    """
    if len(frames) == 0 or "group_sizes" not in frames:
        return float("nan")
    initial = [1.0] + [0.0] * (cpus - 1)
    ratios = []
    for sizes in frames["group_sizes"]:
        weights = np.asarray(sizes, dtype=float)
        span = makespan(weights, lpt(weights, initial), initial)
        ratios.append((weights.sum() + 1.0) / cpus / span)
    return float(np.mean(ratios))


def table(rows: pd.DataFrame) -> str:
    """The docs table (Markdown): one line per map and bot count, means over seeds."""
    mean = rows.groupby(["map", "bots", "strategy"], sort=False).mean(numeric_only=True)
    lines = [
        "| map | extent x x y x z (units) | spawn points | bots | groups/frame | "
        "entities/group (mean / max) | largest group: share of grouped entities | "
        "largest group: share of bots | group-phase balance, 2 / 8 CPUs | "
        "messages/frame (BSP-group) | "
        "frames/s sequential | frames/s BSP-group |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, bots), part in mean.groupby(level=["map", "bots"], sort=False):
        seq = part.xs("sequential", level="strategy").iloc[0]
        bsp = part.xs("bsp-group", level="strategy").iloc[0]
        extent = f"{seq.extent_x_units:.0f} x {seq.extent_y_units:.0f} x {seq.extent_z_units:.0f}"
        lines.append(
            f"| {name} | {extent} | {seq.spawn_points:.0f} | {bots} | "
            f"{bsp.groups_per_frame:.1f} | {bsp.entities_per_group:.1f} / "
            f"{bsp.largest_group_max:.0f} | {bsp.largest_group_share:.2f} | "
            f"{bsp.largest_group_players_share:.2f} | "
            f"{bsp.group_balance_2cpus:.2f} / {bsp.group_balance_8cpus:.2f} | "
            f"{bsp.messages_per_frame:.1f} | {seq.frames_per_s:.0f} | "
            f"{bsp.frames_per_s:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.bsp_maps")
    parser.add_argument("--maps-dir", type=Path, default=DEFAULT_MAPS_DIR)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=5.0, help="simulated s per run")
    parser.add_argument("--bots", type=int, nargs="+", default=list(BOTS))
    parser.add_argument("--maps", nargs="+", default=list(MAPS))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bsp-maps")
    args = parser.parse_args(argv)
    files = {m: args.maps_dir / f"{m}.bsp.gz" for m in args.maps}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        print(f"simsrv: error: --maps-dir: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    files["cube"] = ""
    jobs = [
        (name, str(path), bots, strategy, seed, args.duration)
        for name, path in files.items()
        for bots in args.bots
        for strategy in STRATEGIES
        for seed in range(1, args.seeds + 1)
    ]
    with ProcessPoolExecutor(initializer=exit_with_parent) as pool:
        rows = pd.DataFrame(pool.map(_row, jobs))
    rows.to_csv(f"{args.out}.csv", index=False)
    text = table(rows)
    Path(f"{args.out}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
