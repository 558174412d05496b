"""Cost of the invariants: their share of each run's wall time.

Times, per scenario, the whole ``simulate()`` and the parts that exist only for the checks:
the per-frame partition checks (compiled; ``bsp-group``; ``area-quadrant``'s runs inside its
compiled planner and counts as run time), the trace checks
taken block by block as the run goes (CPU and lock exclusivity, costs accounted:
:class:`simsrv.machine.invariants.TraceChecks`), the end of the run (conservation, running the
threads that outlive the last frame), and the charged-cost sum of each plan that is not one
serial thread.  Two
small per-frame costs are not separable and count as run time: the charged-cost sum of a serial
plan (one addition per computation, inside the machine's loop) and the machine's lock log.

    python benchmarks/invariant_cost.py [--duration 3] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import simsrv.pipeline.simulation as simulation
import simsrv.strategies.bsp_group as bsp_group
from simsrv.machine.executor import Machine
from simsrv.machine.invariants import TraceChecks
from simsrv.machine.plan import FramePlan
from simsrv.pipeline.load import load_scenario

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "cube-160",
    "cordeiro2007/fork-wait",
    "cordeiro2007/clone-nowait",
    "abdelkhalek2004/threads8-region",
    "abdelkhalek2004/thread-per-client",
    "area2004/threads4-optimized",
    "scale/clients1000-cpus16",
]


def timed(module, name: str, spent: list[float]):
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=DEFAULT)
    parser.add_argument("--duration", type=float, default=3.0, help="measured simulated s")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (medians)")
    args = parser.parse_args()
    spent = [0.0]
    timed(simulation, "check_conservation", spent)
    for name in ("add", "advance"):  # finish() is advance() and a comparison
        timed(TraceChecks, name, spent)
    timed(Machine, "finish", spent)
    timed(FramePlan, "charged_us", spent)
    timed(bsp_group, "check_partition", spent)
    print("| scenario | frames | run wall s | checks wall s | share |\n|---|---|---|---|---|")
    for name in args.scenarios:
        scenario = load_scenario(
            ROOT / "scenarios" / f"{name}.toml", [f"run.duration_s={args.duration}"]
        )
        totals, checks = [], []
        for _ in range(args.repeat):
            spent[0] = 0.0
            start = time.perf_counter()
            out = simulation.simulate(scenario)
            totals.append(time.perf_counter() - start)
            checks.append(spent[0])
        total, check = statistics.median(totals), statistics.median(checks)
        frames = out.frame_digest.total_frames
        print(f"| `{name}` | {frames:,} | {total:.2f} | {check:.3f} | {check / total:.1%} |")


if __name__ == "__main__":
    main()
