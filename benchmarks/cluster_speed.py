"""Speed, peak memory and where the time goes of clusters at the scale their users need.

Cases (each a scenario with the ``grid`` and the ``load-aware`` zoning):

``c10k``
    ``scenarios/cluster/nodes16-cpus8-10000.toml``: 10,000 players on 16 nodes x 8 CPUs
    (3 simulated s).  Target >= 2x real time.
``c100k``
    ``scenarios/cluster/nodes64-cpus16-100000.toml``: 100,000 players on 64 nodes x 16 CPUs
    (1.5 simulated s).  Target >= 0.5x real time.
``c1m``
    ``scenarios/cluster/nodes64-cpus64-1000000.toml``: 1,000,000 players on 64 nodes x 64
    CPUs (0.75 simulated s).  Target >= 0.1x real time, peak memory < 16 GB.

Speed is simulated seconds (warm-up included) per wall second of
:func:`~simsrv.pipeline.cluster.simulation.simulate_cluster` (the world's setup included), the
median of ``--runs`` fresh processes (numba's compiled functions loaded from its cache: warm it
first, e.g. with one ``--runs 1`` invocation).  Peak resident memory is the largest of those
runs'.  One more fresh process per case runs with every stage timed (the profile table: each
stage's own wall time, its callees' excluded, as a share of the run): the world's setup (the
map, the players' spawn and settling walk), the world (players' moves and neighbour lists),
the zones (owners, mirror counts, border moves), the clients' packets (generation, ordering,
the end of the run's draws), the router (sockets, handoffs, the end of the run's counts), the
interconnect (messages and link sharing), the nodes' frames (workload, plan, machine) and their
records (trace and frame streams); ``other`` is the rest (the event loop, the nodes' set-up
and reads, the run's summary).  Results print as a table and go to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

from scale_speed import child  # a fresh process per run (benchmarks/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
ZONINGS = ("grid", "load-aware")

CASES = {
    "c10k": (ROOT / "scenarios/cluster/nodes16-cpus8-10000.toml", 2.0, None),
    "c100k": (ROOT / "scenarios/cluster/nodes64-cpus16-100000.toml", 0.5, None),
    "c1m": (ROOT / "scenarios/cluster/nodes64-cpus64-1000000.toml", 0.1, 16384.0),
}
"""name -> (scenario, speed target x real time, peak memory target MB or None)."""

SPEED_CHILD = r"""
import json, resource, sys, time
from simsrv import load_scenario
from simsrv.pipeline.cluster.simulation import simulate_cluster
scenario = load_scenario(sys.argv[1], sys.argv[2:])
simulated = scenario.run.warmup_s + scenario.run.duration_s
start = time.perf_counter()
out = simulate_cluster(scenario)
wall = time.perf_counter() - start
print(json.dumps({
    "wall_s": wall, "simulated_s": simulated, "speed": simulated / wall,
    "frames": sum(node.frame_digest.total_frames for node in out.nodes),
    "handoffs": len(out.handoffs) if out.handoffs else out.handoffs_in_window,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""

PROFILE_CHILD = r"""
import json, sys, time
from simsrv import load_scenario
from simsrv.pipeline.cluster import simulation, exchange, router, zones
from simsrv.pipeline import frame_loop, frame_stream, trace_stream
from simsrv.workload import clients
from simsrv.world import world

own = {}
stack = []

def finished(stage, start):  # the stage's own time: its timed callees' excluded
    elapsed = time.perf_counter() - start
    inner = stack.pop()
    own[stage] = own.get(stage, 0.0) + elapsed - inner
    if stack:
        stack[-1] += elapsed

def timed(owner, name, stage):
    function = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        stack.append(0.0)
        try:
            return function(*args, **kwargs)
        finally:
            finished(stage, start)
    setattr(owner, name, wrapper)

done = object()

def timed_steps(owner, name, stage):  # a generator: each of its steps
    function = getattr(owner, name)
    def wrapper(*args, **kwargs):
        steps = function(*args, **kwargs)
        while True:
            start = time.perf_counter()
            stack.append(0.0)
            try:
                item = next(steps, done)
            finally:
                finished(stage, start)
            if item is done:
                return
            yield item
    setattr(owner, name, wrapper)

timed(simulation, "build_world", "world setup")
timed(world.World, "advance", "world")
timed(zones.ZonedWorld, "advance", "zones")
timed(clients.ClientStream, "release_until", "client packets")
timed(router.Router, "route", "router")
timed(router.Router, "count_unqueued", "router")
timed_steps(clients.ClientStream, "release_in_pieces", "client packets")
timed_steps(clients.ClientStream, "release_unordered", "client packets")
for name in ("advance", "post", "take_ops"):
    timed(exchange.Exchange, name, "interconnect")
timed(frame_loop.FrameLoop, "socket_frame", "node frames")
timed(trace_stream.TraceStream, "drain", "records")
timed(frame_stream.FrameStream, "release", "records")
scenario = load_scenario(sys.argv[1], sys.argv[2:])
start = time.perf_counter()
simulation.simulate_cluster(scenario)
wall = time.perf_counter() - start
own["other"] = wall - sum(own.values())
print(json.dumps({"wall_s": wall, "stages_s": own}))
"""


def run_case(name: str, zoning: str, runs: int, profile: bool) -> dict:
    scenario, target, memory_mb = CASES[name]
    overrides = [f'cluster.zoning="{zoning}"']
    results = [child(SPEED_CHILD, scenario, overrides) for _ in range(runs)]
    speeds = [r["speed"] for r in results]
    median = statistics.median(speeds)
    peak = max(r["peak_rss_mb"] for r in results)
    stages = child(PROFILE_CHILD, scenario, overrides) if profile else None
    speed_met = median >= target
    memory_met = memory_mb is None or peak < memory_mb
    return {
        "case": f"{name}-{zoning}",
        "scenario": str(scenario.relative_to(ROOT)),
        "overrides": overrides,
        "runs": results,
        "simulated_s": results[0]["simulated_s"],
        "frames": results[0]["frames"],
        "median_speed_x_realtime": median,
        "min_speed": min(speeds),
        "max_speed": max(speeds),
        "peak_rss_mb": peak,
        "target_speed": target,
        "target_peak_rss_mb": memory_mb,
        "speed_met": speed_met,
        "memory_met": memory_met,
        "met": speed_met and memory_met,
        "profile": stages,
    }


def profile_table(results: list[dict]) -> str:
    """Markdown: one row per case, each stage's share of the profiled run's wall time."""
    stages = ["world setup", "world", "zones", "client packets", "router", "interconnect"]
    stages += ["node frames"]
    stages += ["records", "other"]
    lines = [
        "| case | wall (s) | " + " | ".join(stages) + " |",
        "|---" * (len(stages) + 2) + "|",
    ]
    for r in results:
        p = r["profile"]
        if p is None:
            continue
        shares = [p["stages_s"].get(s, 0.0) / p["wall_s"] for s in stages]
        cells = " | ".join(f"{share:.0%}" for share in shares)
        lines.append(f"| {r['case']} | {p['wall_s']:.1f} | {cells} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per case")
    parser.add_argument("--only", default=None, help=f"comma-separated cases: {', '.join(CASES)}")
    parser.add_argument(
        "--zonings", default=",".join(ZONINGS), help=f"comma-separated: {', '.join(ZONINGS)}"
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled run")
    parser.add_argument("--json", dest="json_path", default=None, help="write results here")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(CASES)
    zonings = args.zonings.split(",")
    if sorted(set(names) - set(CASES)):
        parser.error(f"--only: allowed cases: {', '.join(CASES)}")
    if sorted(set(zonings) - set(ZONINGS)):
        parser.error(f"--zonings: allowed: {', '.join(ZONINGS)}")
    results = []
    for name in names:
        for zoning in zonings:
            r = run_case(name, zoning, args.runs, not args.no_profile)
            memory = ""
            if r["target_peak_rss_mb"] is not None:
                verdict = "met" if r["memory_met"] else "MISSED"
                memory = f", < {r['target_peak_rss_mb']:.0f} MB {verdict}"
            print(
                f"{r['case']:16s} {r['median_speed_x_realtime']:6.3f}x real time "
                f"({r['min_speed']:.3f}-{r['max_speed']:.3f}), {r['simulated_s']:g} simulated s, "
                f"{r['frames']} frames, peak {r['peak_rss_mb']:.0f} MB; "
                f">= {r['target_speed']:g}x {'met' if r['speed_met'] else 'MISSED'}{memory}",
                flush=True,
            )
            results.append(r)
    if not args.no_profile:
        print()
        print(profile_table(results))
    if args.json_path:
        info = {"python": platform.python_version(), "machine": platform.machine()}
        Path(args.json_path).write_text(json.dumps({"info": info, "results": results}, indent=1))
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
