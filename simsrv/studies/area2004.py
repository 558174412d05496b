"""The area-based parallel server on the calibrated UltraSPARC [R §5]: capacities, time
breakdowns and the stage-3 fix.

Usage::

    python -m simsrv.studies.area2004 [--seeds 3] [--out docs/area2004]   # ~9 min on 2 cores

1. **Capacity** (the report's Figures 9 and 12) of every variant of :data:`VARIANTS` with
   :func:`simsrv.sweep.capacity.find_capacity`: steps of 8 clients from 8 (the report's protocol)
   and steps of 4 from 24 (finer), replies/s >= :data:`REPLY_RATIO` x offered (the saturation
   rule the platform was calibrated with), one search per seed.
2. **Time breakdown** (Figures 10, 11 and 14): ``stage_time_fraction`` of the sequential
   server and of 2, 3 and 4 threads (optimized stage 2, cyclic stage 3), 8 to 64 clients.
3. **Stage 3 fix** (Figures 16 and 17, [R §6]): 4 threads, cyclic vs active division of the
   replies: end-barrier wait per thread at 8, 32 and 48 clients, and capacities.
4. **Maps** (beyond the report): capacity of the sequential server and of 4 threads (basic and
   optimized stage 2) on maps whose walls do not line up with the quarters.

Writes ``<out>-capacity.csv``, ``<out>-stages.csv``, ``<out>-stage3.csv``, ``<out>-maps.csv``
and the figures ``<out>-stages.png`` and ``<out>-stage3.png``.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from simsrv.figures.stage_breakdown import end_barrier_figure, stage_breakdown_figure
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.sweep.capacity import find_capacity
from simsrv.sweep.orphan import exit_with_parent

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios" / "area2004"
REPLY_RATIO = 0.95

VARIANTS: dict[str, tuple[str, list[str]]] = {
    # name -> (scenario file, overrides)
    "sequential": ("sequential", []),
    "2 threads, basic": ("threads2-optimized", ['server.options.stage2="basic"']),
    "2 threads, optimized": ("threads2-optimized", []),
    "3 threads, basic": ("threads3-optimized", ['server.options.stage2="basic"']),
    "3 threads, optimized": ("threads3-optimized", []),
    "4 threads, basic": ("threads4-basic", []),
    "4 threads, optimized": ("threads4-optimized", []),
    "4 threads, stage 3 only": ("threads4-stage3-only", []),
    "4 threads, optimized, active stage 3": (
        "threads4-optimized",
        ['server.options.stage3="active"'],
    ),
    "4 threads, optimized, on 3 CPUs": ("threads4-optimized", ["machine.cpus=3"]),
}
BREAKDOWN = ("sequential", "2 threads, optimized", "3 threads, optimized", "4 threads, optimized")
BREAKDOWN_CLIENTS = (8, 16, 24, 32, 40, 48, 56, 64)
STAGE3_CLIENTS = (8, 32, 48)
FIX_LABELS = ("cyclic slots", "active clients")
MAPS: dict[str, list[str]] = {
    "cube": [],
    "arena": ['map.kind="arena"'],
    "death32c-like": ['map.kind="death32c-like"'],
    "rooms 4x4": ['map.kind="rooms"', "map.rows=4", "map.cols=4", "map.room_size=480.0"],
    # players walking to concentration areas (hotspot mobility): in one quarter, at the centre
    "hotspot in one quarter": [
        'map.kind="hotspots"',
        'map.layout="explicit"',
        "map.areas=[[512.0, 512.0, 300.0, 1.0]]",
        'players.mobility="hotspot"',
    ],
    "hotspot at the centre": [
        'map.kind="hotspots"',
        'map.layout="1center"',
        "map.radius=300.0",
        'players.mobility="hotspot"',
    ],
}
PARTS = ("capacity", "maps", "stages", "stage3")


def _scenario(variant: str, extra: list[str]):
    name, overrides = VARIANTS[variant]
    return str(SCENARIOS / f"{name}.toml"), [*overrides, *extra]


def capacity_point(args: tuple[str, int, int, int, tuple[str, ...]]) -> dict:
    """One capacity search: (variant, seed, start, step, extra overrides)."""
    variant, seed, start, step, extra = args
    path, overrides = _scenario(variant, [*extra, f"run.seed={seed}"])
    found = find_capacity(
        path, overrides, start=start, step=step, max_clients=256, min_reply_ratio=REPLY_RATIO
    )
    return {
        "variant": variant,
        "seed": seed,
        "step": step,
        "capacity_clients": found.capacity_clients,
    }


def stage_point(args: tuple[str, int, int, tuple[str, ...]]) -> list[dict]:
    """Stage time fractions and per-thread shares of one run: (variant, clients, seed, extra)."""
    variant, clients, seed, extra = args
    path, overrides = _scenario(variant, [*extra, f"players.count={clients}", f"run.seed={seed}"])
    scenario = load_scenario(path, overrides)
    summary = run(scenario).summary
    reply_ratio = summary["replies_per_s"] / (clients * scenario.clients.rate_hz)
    threads = {"mean": summary["stage_time_fraction"], **summary["per_thread"]}
    rows = [
        {
            "variant": variant,
            "clients": clients,
            "seed": seed,
            "thread": thread,
            "category": category,
            "share": share,
            "reply_ratio": reply_ratio,
        }
        for thread, shares in threads.items()
        for category, share in shares.items()
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.area2004")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "docs" / "area2004"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}"
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        unknown = ", ".join(sorted(parts - set(PARTS)))
        print(f"--parts: unknown {unknown}; allowed: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    seeds = range(1, args.seeds + 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(args.workers, initializer=exit_with_parent) as pool:
        if "capacity" in parts:
            jobs = [(v, s, 8, 8, ()) for v in VARIANTS for s in seeds]
            jobs += [(v, s, 24, 4, ()) for v in VARIANTS for s in seeds]
            capacity = pd.DataFrame(pool.map(capacity_point, jobs))
            capacity.to_csv(f"{out}-capacity.csv", index=False)
            print(_capacity_table(capacity), flush=True)
        if "maps" in parts:
            maps = []
            for name, extra in MAPS.items():
                for variant in ("sequential", "4 threads, basic", "4 threads, optimized"):
                    jobs = [(variant, s, 8, 4, tuple(extra)) for s in seeds]
                    maps += [{**row, "map": name} for row in pool.map(capacity_point, jobs)]
            maps_df = pd.DataFrame(maps)
            maps_df.to_csv(f"{out}-maps.csv", index=False)
            print(maps_df.groupby(["map", "variant"]).capacity_clients.mean(), flush=True)
        if "stages" in parts:
            jobs = [(v, c, s, ()) for v in BREAKDOWN for c in BREAKDOWN_CLIENTS for s in seeds]
            stages = pd.DataFrame([r for rows in pool.map(stage_point, jobs) for r in rows])
            stages.to_csv(f"{out}-stages.csv", index=False)
            figure = stage_breakdown_figure(
                stages[stages.thread == "mean"],
                "Server time by stage, 4 x 296 MHz UltraSPARC-II (cube map, 31.25 packets/s "
                "per client)",
                {v: "1" if v == "sequential" else v[0] for v in BREAKDOWN},
            )
            figure.savefig(f"{out}-stages.png", dpi=120)
        if "stage3" in parts:
            fix = ("4 threads, optimized", "4 threads, optimized, active stage 3")
            jobs = [(v, c, s, ()) for v in fix for c in STAGE3_CLIENTS for s in seeds]
            stage3 = pd.DataFrame([r for rows in pool.map(stage_point, jobs) for r in rows])
            stage3.to_csv(f"{out}-stage3.csv", index=False)
            labels = dict(zip(fix, FIX_LABELS, strict=True))
            labelled = stage3[stage3.thread != "mean"].replace({"variant": labels})
            title = "Stage-3 barrier waits per thread, 4 threads: cyclic slots vs active clients"
            end_barrier_figure(labelled, title).savefig(f"{out}-stage3.png", dpi=120)
            print(_stage3_table(stage3))
    return 0


def _capacity_table(capacity: pd.DataFrame) -> str:
    stats = capacity.groupby(["variant", "step"], sort=False).capacity_clients.agg(
        ["mean", "min", "max"]
    )
    return stats.unstack("step").to_string()


def _stage3_table(stage3: pd.DataFrame) -> str:
    mean = stage3[stage3.thread == "mean"]
    wanted = mean[mean.category.isin(["end_barrier_wait", "internal_barrier_wait", "idle"])]
    return (
        wanted.groupby(["variant", "clients", "category"]).share.mean().unstack().round(4)
    ).to_string()


if __name__ == "__main__":
    sys.exit(main())
