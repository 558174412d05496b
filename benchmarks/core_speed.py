"""Speed and peak memory of the simulator core on the default 160-client scenario.

Reports simulated seconds per wall-clock second (median of several fresh-process runs; the
simulated time includes the warm-up) and peak resident memory.  Target: >= 20x faster
than real time on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys

_RUN = r"""
import json, resource, sys, time
from simsrv import load_scenario
from simsrv.pipeline.simulation import simulate
scenario = load_scenario(sys.argv[1] if sys.argv[1] != "-" else None, sys.argv[2:])
simulated = scenario.run.warmup_s + scenario.run.duration_s
start = time.perf_counter()
out = simulate(scenario)
wall = time.perf_counter() - start
result = {
    "wall_s": wall, "simulated_s": simulated, "speed": simulated / wall,
    "frames": out.frame_digest.total_frames,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}
"""
CHILD = _RUN + "print(json.dumps(result))\n"
"""One fresh process: the scenario (argv[1]; "-" for the built-in default) with overrides
(argv[2:]) simulated once; prints its speed, frames and peak resident memory as JSON."""
WARM_CHILD = (
    _RUN
    + r"""
del out
start = time.perf_counter()
simulate(scenario)
warm = time.perf_counter() - start
result.update(warm_wall_s=warm, warm_speed=simulated / warm)
print(json.dumps(result))
"""
)
"""As :data:`CHILD`, then the scenario simulated a second time in the same process (numba's
compiled functions loaded): adds that run's ``warm_wall_s`` and ``warm_speed``; the peak
memory is the first run's."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="fresh-process runs (median)")
    parser.add_argument("--duration", type=float, default=10.0, help="measured simulated s")
    parser.add_argument("--scenario", default="-", help="scenario file (default: built-in)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--json", dest="json_path", default=None, help="write results here")
    args = parser.parse_args()
    overrides = [f"run.duration_s={args.duration}", *args.overrides]
    runs = []
    for _ in range(args.runs):
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, args.scenario, *overrides],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(proc.stdout))
    speeds = [r["speed"] for r in runs]
    result = {
        "scenario": args.scenario,
        "overrides": overrides,
        "runs": runs,
        "median_speed_x_realtime": statistics.median(speeds),
        "min_speed": min(speeds),
        "max_speed": max(speeds),
        "median_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
        "machine": f"{platform.machine()}, python {platform.python_version()}",
    }
    print(
        f"runs: {args.runs}, simulated per run: {runs[0]['simulated_s']:g} s, "
        f"frames per run: {runs[0]['frames']}"
    )
    print(
        f"speed (simulated s / wall s): median {result['median_speed_x_realtime']:.1f}x "
        f"(min {min(speeds):.1f}x, max {max(speeds):.1f}x); target >= 20x"
    )
    print(f"peak RSS: median {result['median_peak_rss_mb']:.0f} MB")
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
