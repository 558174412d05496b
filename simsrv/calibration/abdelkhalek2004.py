"""Calibration of the AB04 platform on the sequential server only [MODEL.md §3, P §3, R §2.2].

The published fact used: the sequential QuakeWorld server on AB04's machine degrades beyond
about 90 simultaneous players ([P §3]; [R] cites 96 clients on an 800 MHz machine).  Nothing
about the multithreaded server is used: its lock, barrier and capacity figures are predictions.

Method: the platform's server costs are the fitted Cordeiro Xeon's costs (same code, same cost
structure) times one factor ``scale`` (an older, slower CPU running a heavier game), with
synchronisation and OS costs scaled alike.  ``scale`` is bisected so that the sequential
scenario at :data:`BOUNDARY_CLIENTS` (92: between the last count that should pass, 88, and the
first that should fail, 96, in steps of 8) replies to exactly 80 % of the offered packets (the
capacity rule of :mod:`simsrv.capacity`).

Usage::

    python -m simsrv.calibration.abdelkhalek2004 [--write]   # ~1 min
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.calibration.platform_file import replace_costs_table
from simsrv.capacity import MIN_REPLY_RATIO
from simsrv.platforms.profile import Costs, load_platform
from simsrv.result import run
from simsrv.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SEQUENTIAL = ROOT / "scenarios" / "abdelkhalek2004" / "sequential.toml"
PLATFORM = ROOT / "simsrv" / "platforms" / "abdelkhalek2004-xeon-ht.toml"
BASE = "cordeiro2007-xeon"
BOUNDARY_CLIENTS = 92
HAND_SET = {
    # not part of the scaled server: a resumed thread's cold stack and state (MODEL.md §6 [M]):
    # ~200 cache lines and a few TLB entries from memory at ~100 ns each
    "thread_cache_refill": 20.0,
}
SEEDS = (1, 2, 3)


def reply_ratio(scale: float) -> float:
    """Replies / offered packets of the sequential scenario at the boundary, mean of SEEDS."""
    base = load_platform(BASE).costs
    costs = [
        f"machine.costs.{name}={HAND_SET.get(name, getattr(base, name) * scale)}"
        for name in Costs.model_fields
    ]
    ratios = []
    for seed in SEEDS:
        scenario = load_scenario(
            str(SEQUENTIAL),
            [*costs, f"players.count={BOUNDARY_CLIENTS}", f"run.seed={seed}", "run.duration_s=4"],
        )
        summary = run(scenario).summary
        ratios.append(summary["replies_per_s"] / (BOUNDARY_CLIENTS * scenario.clients.rate_hz))
    return sum(ratios) / len(ratios)


def fit(lo: float = 1.0, hi: float = 20.0, iterations: int = 14) -> float:
    """Bisect ``scale`` so that :func:`reply_ratio` crosses 0.8 (it falls as costs rise)."""
    for _ in range(iterations):
        mid = (lo * hi) ** 0.5
        ratio = reply_ratio(mid)
        print(f"  scale {mid:8.4f}: replies / offered {ratio:.4f}", flush=True)
        lo, hi = (mid, hi) if ratio >= MIN_REPLY_RATIO else (lo, mid)
    return (lo * hi) ** 0.5


def write(scale: float) -> None:
    """Rewrite the platform file's ``[costs]`` table as the base costs times ``scale``."""
    base = load_platform(BASE).costs
    lines = [f"[costs]  # {BASE} x {scale:.4f} (FITTED scale)"]
    for name in Costs.model_fields:
        if name in HAND_SET:
            lines.append(f"{name} = {HAND_SET[name]}  # hand-set")
        else:
            lines.append(f"{name} = {getattr(base, name) * scale:.4f}")
    replace_costs_table(PLATFORM, lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.calibration.abdelkhalek2004")
    parser.add_argument("--write", action="store_true", help="write the platform file")
    args = parser.parse_args(argv)
    scale = fit()
    print(f"scale = {scale:.4f}")
    if args.write:
        write(scale)
        print(f"wrote {PLATFORM}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
