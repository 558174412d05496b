"""Speed and peak memory at the paper's scale and beyond.

Cases (each run is a fresh process, so its peak resident memory is its own):

``a-<strategy>``
    The 160-client paper scenario (``scenarios/cube-160.toml``) with each strategy, 2 CPUs.
    Targets: ``sequential`` and ``bsp-group`` >= 30x faster than real time; the
    thread strategies ``abdelkhalek`` and ``area-quadrant`` >= 20x and >= 0.8x the speed of
    ``sequential`` measured in the same invocation.
``b``
    ``scenarios/scale/clients10000-cpus64.toml``: 10,000 clients, BSP-group, 64 CPUs, hotspot
    map.  Target: >= 3x real time, peak memory < 2 GB.
``c``
    ``scenarios/scale/abdelkhalek-clients1000-cpus8.toml``: 1,000 clients, Abdelkhalek region
    locks, 8 CPUs.  Target: >= 10x real time.
``d``
    ``scenarios/scale/clients100000-cpus256.toml``: 100,000 clients, BSP-group, 256 CPUs,
    hotspot map.  Target: >= 0.5x real time, peak memory < 4 GB.
``growth``
    Wall time of the frame path (workload, plan, machine) per frame against the frame's active
    entities (BSP-group's ``group_entities``: senders and their action ranges), BSP-group on
    the ``clients1000-cpus16`` hotspot scenario grown from 250 to 16,000 clients at constant
    density; the slope of log(wall) on log(entities) over frames with >= 100 active entities
    (n log n gives ~1.1 over this range).  Target: no worse than ~n log n.

Speed is simulated seconds (warm-up included) per wall second of ``simulate`` (the world
setup included); medians over ``--runs``.  Each fresh process runs the scenario twice: the
first ``simulate`` is the *fresh-process* speed (the verdicts use it: it includes loading the
compiled functions from numba's cache, ~0.03-0.04 s with ``simsrv.core.compiled_loading``, half
of it numba's runtime compiling its reference-counting functions), the
second the *warm* speed, what every further run of a sweep worker costs.  Peak resident memory
is taken after the first run.  Results print as a table and go to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from core_speed import WARM_CHILD  # the fresh-process run (benchmarks/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ("sequential", "bsp-group", "abdelkhalek", "area-quadrant")
GROWTH_CLIENTS = (250, 500, 1000, 2000, 4000, 8000, 16000)

CASES = {
    **{
        f"a-{s}": (
            ROOT / "scenarios/cube-160.toml",
            [f"server.strategy={s}"],
            30.0 if s in ("sequential", "bsp-group") else 20.0,
            None,
        )
        for s in STRATEGIES
    },
    "b": (ROOT / "scenarios/scale/clients10000-cpus64.toml", [], 3.0, 2048.0),
    "c": (ROOT / "scenarios/scale/abdelkhalek-clients1000-cpus8.toml", [], 10.0, None),
    "d": (ROOT / "scenarios/scale/clients100000-cpus256.toml", [], 0.5, 4096.0),
}
"""name -> (scenario, overrides, speed target x real time, memory target MB or None)."""
THREAD_CASES = ("a-abdelkhalek", "a-area-quadrant")
"""Cases that must also run at >= 0.8x ``a-sequential``'s speed in the same invocation."""

GROWTH_CHILD = r"""
import json, sys, time
from simsrv import load_scenario
import simsrv.pipeline.simulation as simulation
from simsrv import KEEP_ALL
from simsrv.machine.executor import Machine
from simsrv.workload.frame import FrameBuilder

walls = []
def timed(function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            walls[-1] += time.perf_counter() - start
    return wrapper

build = FrameBuilder.build
def build_and_start(self, *args, **kwargs):
    walls.append(0.0)
    return timed(build)(self, *args, **kwargs)
FrameBuilder.build = build_and_start
Machine.execute = timed(Machine.execute)
import simsrv.strategies.bsp_group as bsp
bsp.BspGroup.plan = timed(bsp.BspGroup.plan)
scenario = load_scenario(sys.argv[1], sys.argv[2:])
out = simulation.simulate(scenario, keep_frames=KEEP_ALL)
print(json.dumps({"wall_s": walls, "entities": out.frames["group_entities"].tolist()}))
"""


def child(code: str, scenario: Path, overrides: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, str(scenario), *overrides],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark run failed: {scenario} {overrides}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def speed_case(name: str, runs: int, duration: float | None) -> dict:
    scenario, overrides, target, memory_mb = CASES[name]
    if duration is not None:
        overrides = [*overrides, f"run.duration_s={duration}"]
    results = [child(WARM_CHILD, scenario, overrides) for _ in range(runs)]
    speeds = [r["speed"] for r in results]
    median = statistics.median(speeds)
    warm = statistics.median(r["warm_speed"] for r in results)
    peak = max(r["peak_rss_mb"] for r in results)
    speed_met = median >= target
    memory_met = memory_mb is None or peak < memory_mb
    met = speed_met and memory_met
    return {
        "case": name,
        "scenario": str(scenario.relative_to(ROOT)),
        "overrides": overrides,
        "runs": results,
        "simulated_s": results[0]["simulated_s"],
        "frames": results[0]["frames"],
        "median_speed_x_realtime": median,
        "median_warm_speed_x_realtime": warm,
        "min_speed": min(speeds),
        "max_speed": max(speeds),
        "peak_rss_mb": peak,
        "target_speed": target,
        "target_peak_rss_mb": memory_mb,
        "met": met,
        "speed_met": speed_met,
        "memory_met": memory_met,
        "short_by": None if speed_met else target / median,
    }


def verdict(r: dict) -> str:
    """'met' or 'MISSED' with how far, for the speed and (if any) the memory target."""
    ratio = r["median_speed_x_realtime"] / r["target_speed"]
    speed = (
        f"speed >= {r['target_speed']:g}x: met ({ratio:.2f}x the target)"
        if r["speed_met"]
        else f"speed >= {r['target_speed']:g}x: MISSED by {r['short_by']:.2f}x"
    )
    if r["target_peak_rss_mb"] is None:
        return speed
    limit = r["target_peak_rss_mb"]
    memory = (
        f"peak RSS < {limit:.0f} MB: met ({r['peak_rss_mb'] / limit:.0%} of it)"
        if r["memory_met"]
        else f"peak RSS < {limit:.0f} MB: MISSED by {r['peak_rss_mb'] - limit:.0f} MB"
    )
    return f"{speed}; {memory}"


def growth_case() -> dict:
    scenario = ROOT / "scenarios/scale/clients1000-cpus16.toml"
    walls, entities, points = [], [], []
    for clients in GROWTH_CLIENTS:
        side = 2048.0 * math.sqrt(clients / 160)
        overrides = [
            f"players.count={clients}",
            f"map.base_params.size={side:.1f}",
            f"map.count={max(1, clients // 250)}",
            "run.duration_s=2.0",
            "run.warmup_s=0.25",
        ]
        got = child(GROWTH_CHILD, scenario, overrides)
        wall, active = np.array(got["wall_s"]), np.array(got["entities"], dtype=float)
        walls.append(wall)
        entities.append(active)
        busy = active >= 100
        points.append(
            {
                "clients": clients,
                "frames": len(wall),
                "median_active_entities": float(np.median(active)) if len(active) else 0.0,
                "median_frame_wall_ms": float(np.median(wall[busy]) * 1e3) if busy.any() else None,
            }
        )
    wall, active = np.concatenate(walls), np.concatenate(entities)
    busy = active >= 100
    slope = float(np.polyfit(np.log(active[busy]), np.log(wall[busy]), 1)[0])
    low, high = np.percentile(active[busy], [10, 90])
    nlogn = math.log(high * math.log(high) / (low * math.log(low))) / math.log(high / low)
    return {
        "case": "growth",
        "points": points,
        "frames_fitted": int(busy.sum()),
        "slope_log_wall_per_log_entities": slope,
        "nlogn_slope_over_range": nlogn,
        "met": slope <= nlogn + 0.15,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per case")
    parser.add_argument(
        "--only", default=None, help=f"comma-separated cases: {', '.join([*CASES, 'growth'])}"
    )
    parser.add_argument("--duration", type=float, default=None, help="override duration_s")
    parser.add_argument("--json", dest="json_path", default=None, help="write results here")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else [*CASES, "growth"]
    unknown = sorted(set(names) - {*CASES, "growth"})
    if unknown:
        parser.error(f"--only: unknown cases {unknown}; allowed: {', '.join([*CASES, 'growth'])}")
    results = []
    for name in names:
        if name == "growth":
            r = growth_case()
            print(
                f"growth: wall per frame ~ entities^{r['slope_log_wall_per_log_entities']:.2f} "
                f"over {r['frames_fitted']} frames (n log n: ^{r['nlogn_slope_over_range']:.2f}) "
                f"{'met' if r['met'] else 'MISSED'}"
            )
            for p in r["points"]:
                print(f"  {p}")
        else:
            r = speed_case(name, args.runs, args.duration)
            print(
                f"{name:16s} {r['median_speed_x_realtime']:6.2f}x real time "
                f"({r['min_speed']:.2f}-{r['max_speed']:.2f}; warm "
                f"{r['median_warm_speed_x_realtime']:.2f}x), {r['simulated_s']:g} simulated s, "
                f"{r['frames']} frames, peak {r['peak_rss_mb']:.0f} MB; {verdict(r)}",
                flush=True,
            )
        results.append(r)
    by_case = {r["case"]: r for r in results}
    for name in THREAD_CASES:
        if name in by_case and "a-sequential" in by_case:
            r = by_case[name]
            for key, label in (
                ("median_speed_x_realtime", "fresh"),
                ("median_warm_speed_x_realtime", "warm"),
            ):
                ratio = r[key] / by_case["a-sequential"][key]
                r[f"vs_sequential_{label}"] = ratio
                print(
                    f"{name:16s} {ratio:6.2f}x sequential's speed ({label}); >= 0.8x: "
                    f"{'met' if ratio >= 0.8 else 'MISSED'}"
                )
    if args.json_path:
        report = {
            "machine": f"{platform.machine()}, python {platform.python_version()}",
            "runs": args.runs,
            "results": results,
        }
        Path(args.json_path).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
