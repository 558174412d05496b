"""Group statistics per map kind, and how the largest group scales with the player count.

Usage::

    python -m simsrv.studies.map_groups [--seeds 3] [--duration 5] [--out docs/maps]

1. **Per map kind** (160 quake-bot players, the fork-wait run of Cordeiro et al.: bsp-group,
   fork, wait, 2 Xeon CPUs, 19.6 packets/s per client): BSP groups per frame, mean and max
   group size, share of the frame's entities in its largest group; mean over seeds.
2. **Scaling** (``groups_vs_players``): 10 to 10,000 players at constant density (map side
   ``2048 * sqrt(N / 160)``), 20 % of them sending in the frame (fork-wait's 33 of 160),
   grouped exactly as BSP-group does; the largest group per snapshot, mean of 5 snapshots
   1 s apart after 10 s (plus 10 s of discarded settling).  On ``hotspots`` with one strong
   attractor (every destination in it; radius 320 units on the 160-player map, scaled with the
   map side so that it covers the same share of every map) it grows with N; on ``arena`` and
   ``rooms`` without attractors it stays bounded.

Writes ``<out>-kinds.csv``, ``<out>-scaling.csv`` and ``<out>-scaling.png``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.core.toml_file import read_toml
from simsrv.pipeline.load import apply_override, build_scenario, load_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.snapshot import snapshots
from simsrv.sweep.orphan import exit_with_parent

ROOT = Path(__file__).resolve().parents[2]
FORK_WAIT = ROOT / "scenarios" / "cordeiro2007" / "fork-wait.toml"

KINDS: dict[str, dict] = {
    # name -> the [map] table replacing the fork-wait scenario's (quake-bot, attraction 0.5)
    "cube": {"kind": "cube"},
    "arena": {"kind": "arena"},
    "rooms": {"kind": "rooms", "rows": 4, "cols": 4, "room_size": 480.0},
    "two-floor": {"kind": "two-floor"},
    "hotspots-4quadrants": {"kind": "hotspots", "layout": "4quadrants"},
    "hotspots-4worst": {"kind": "hotspots", "layout": "4worst"},
    "hotspots-1center": {"kind": "hotspots", "layout": "1center", "radius": 320.0},
    "death32c-like": {"kind": "death32c-like"},
}
PLAYERS = (10, 30, 100, 300, 1000, 3000, 10_000)


def _hotspot_overrides(side: float) -> list[str]:
    radius = 320.0 * side / 2048.0  # the attractor covers the same share of every map
    return [
        "map.kind=hotspots",
        'map.layout="1center"',
        f"map.base_params={{size = {side}}}",
        f"map.radius={radius}",
        "players.mobility=hotspot",
        "players.behaviour.hotspot_share=1.0",
        f"players.behaviour.settle_s={_crossing_s(side)}",
    ]


def _arena_overrides(side: float) -> list[str]:
    return ["map.kind=arena", f"map.size={side}", "players.mobility=quake-bot"]


def _rooms_overrides(side: float) -> list[str]:
    k = max(1, round(side / 1024))
    rooms = [f"map.rows={k}", f"map.cols={k}", "map.room_size=992"]
    return ["map.kind=rooms", *rooms, "players.mobility=quake-bot"]


def _waypoint_overrides(side: float) -> list[str]:
    return [
        "map.kind=arena",
        f"map.size={side}",
        "players.mobility=random-waypoint",
        f"players.behaviour.settle_s={_crossing_s(side)}",
    ]


def _crossing_s(side: float) -> float:
    """Settling walk long enough to cross the map several times (10 s on the 2048-unit map)."""
    return 10.0 * side / 2048.0


SCALING: dict[str, Callable[[float], list[str]]] = {
    # name -> overrides of the default scenario for a map of side ``side`` units
    "hotspots (1 attractor)": _hotspot_overrides,
    "arena": _arena_overrides,
    "rooms": _rooms_overrides,
    "arena, random-waypoint": _waypoint_overrides,
}


def _kind_row(job: tuple[str, int, float]) -> dict:
    name, seed, duration = job
    raw = read_toml(FORK_WAIT)
    raw["map"] = dict(KINDS[name])
    for item in (f"run.seed={seed}", f"run.duration_s={duration}"):
        apply_override(raw, item)
    s = run(build_scenario(raw)).summary
    return {"map": name, "seed": seed, **s["groups"], "messages_per_frame": s["messages_per_frame"]}


def _scaling_row(job: tuple[str, int, int]) -> dict:
    name, players, seed = job
    side = 2048.0 * math.sqrt(players / 160)
    overrides = [*SCALING[name](side), f"players.count={players}", f"run.seed={seed}"]
    scenario = load_scenario(None, overrides)
    _, snaps = snapshots(scenario, [10.0 + i for i in range(5)], active_share=0.2)
    largest = []
    for snap in snaps:
        grouped = snap.group[snap.group >= 0]
        largest.append(int(np.unique(grouped, return_counts=True)[1].max()) if len(grouped) else 0)
    mean = statistics.fmean(largest)
    return {
        "map": name,
        "players": players,
        "seed": seed,
        "largest_group_players": mean,
        "largest_group_share": mean / players,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.map_groups")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0, help="simulated s per run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "maps")
    args = parser.parse_args(argv)
    seeds = range(1, args.seeds + 1)
    with ProcessPoolExecutor(initializer=exit_with_parent) as pool:
        kind_jobs = [(k, s, args.duration) for k in KINDS for s in seeds]
        kinds = pd.DataFrame(pool.map(_kind_row, kind_jobs))
        kinds.to_csv(f"{args.out}-kinds.csv", index=False)
        print(kinds.groupby("map", sort=False).mean(numeric_only=True).round(2).to_string())
        scaling_jobs = [(m, n, s) for m in SCALING for n in PLAYERS for s in seeds]
        scaling = pd.DataFrame(pool.map(_scaling_row, scaling_jobs))
    scaling.to_csv(f"{args.out}-scaling.csv", index=False)
    print(
        scaling.groupby(["map", "players"])
        .largest_group_players.mean()
        .unstack()
        .round(1)
        .to_string()
    )
    from simsrv.figures.scaling import largest_group_figure

    largest_group_figure(scaling).savefig(f"{args.out}-scaling.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
