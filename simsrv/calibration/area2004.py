"""Calibration of the 4 x 296 MHz UltraSPARC-II platform on the sequential server only [R §4-5].

Published facts about the *sequential* server on this machine (MODEL.md §4), with the cube map
and 31.25 requests per client per second:

1. stage 2 takes "almost 0.8 ms" per client packet at 32 clients [R §5.2];
2. it saturates "slightly above 24 clients": idle time remains at 24, it is overloaded at 32
   [R §5.1];
3. world physics (stage 1) is ~5 % of the time [R §3.4, §5.1];
4. stage 3 takes "up to 40 %" of a saturated server's time [R §5.3] (checked, not fitted).

Nothing about the parallel server is used: its capacities are predictions (some published
values are withheld).

Method: the platform runs the same server code as the Cordeiro Xeon, so its costs are the
fitted Xeon costs times three factors, one per stage (a 1999 SPARC, another compiler and
another map weigh the stages differently): ``s2`` on stage 2 (receive and request costs, and
the synchronisation and OS costs, the CPU-speed proxy), ``s1`` on world physics, ``s3`` on
stage 3 (reply costs).  Three costs the Xeon folds elsewhere are given Xeon values by hand and
scaled with their stage (:data:`HAND_SET_XEON`; the per-frame fixed work with ``s2``).

* ``s2`` is exact from fact 1: stage-2 time per packet is linear in ``s2``.
* ``s1`` and ``s3`` alternate (:data:`ROUNDS` rounds): ``s1`` rescaled so that stage 1 is
  :data:`STAGE1_SHARE` of the time at 32 clients (fact 3); ``s3`` bisected so that the server
  at :data:`BOUNDARY_CLIENTS` (28: between 24, which must pass, and 32, which must fail)
  replies to :data:`SATURATION_REPLY_RATIO` of the offered packets (fact 2: the server just
  saturates there; the capacity rule for this platform uses the same ratio).

Usage::

    python -m simsrv.calibration.area2004 [--write]   # ~10 s
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simsrv.calibration.platform_file import replace_costs_table
from simsrv.platforms.profile import Costs, load_platform
from simsrv.result import run
from simsrv.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SEQUENTIAL = ROOT / "scenarios" / "area2004" / "sequential.toml"
PLATFORM = ROOT / "simsrv" / "platforms" / "area2004-ultrasparc.toml"
BASE = "cordeiro2007-xeon"

STAGE2_US_PER_PACKET = 800.0
STAGE2_CLIENTS = 32
STAGE1_SHARE = 0.05
BOUNDARY_CLIENTS = 28
SATURATION_REPLY_RATIO = 0.95
SEEDS = (1, 2, 3)
ROUNDS = 3

STAGE1 = ("world_base", "world_per_entity")
STAGE3 = (
    "reply_info_per_client",
    "reply_per_client",
    "reply_per_visible_entity",
    "reply_per_pvs_room",
    "net_send_per_reply",
)
HAND_SET_XEON = {
    # the Xeon's fitted frame_overhead (272 us) absorbs what that calibration could not
    # separate; here stage 1 is a constant ~5 % of the time at every client count [R §5.1],
    # which only world physics (run at most every sv_mintic) can be, so the per-frame fixed
    # work is what it is in the code: a select() wake-up and a pass over the clients'
    # timeouts (~3000 cycles), scaled with s2
    "frame_overhead": 1.0,
    # folded into the Xeon's fitted frame_overhead; here a stage of its own [R §3.3]: walking
    # ~1 KiB of client_t per connected client for score and broadcast changes (~1500 cycles)
    "reply_info_per_client": 0.5,
    # the report's task queues: an enqueue and a dequeue (~600 cycles)
    "queue_per_message": 0.2,
}
HAND_SET = {
    # not scaled: a resumed thread's cold stack and state, ~200 cache lines from a ~200 ns
    # memory (1999 SPARC); matters only when threads share a CPU
    "thread_cache_refill": 40.0,
}


def costs_for(s1: float, s2: float, s3: float) -> dict[str, float]:
    """The platform's costs for the three stage factors."""
    base = load_platform(BASE).costs
    out = {}
    for name in Costs.model_fields:
        if name in HAND_SET:
            out[name] = HAND_SET[name]
            continue
        value = HAND_SET_XEON.get(name, getattr(base, name))
        out[name] = value * (s1 if name in STAGE1 else s3 if name in STAGE3 else s2)
    return out


def measure(costs: dict[str, float], clients: int) -> dict[str, float]:
    """Means over :data:`SEEDS` of the sequential scenario at ``clients``: reply ratio, stage
    shares and stage-2 time per packet (us)."""
    sets = [f"machine.costs.{name}={value!r}" for name, value in costs.items()]
    keys = ("reply_ratio", "stage1", "stage2", "stage3", "stage2_us_per_packet")
    total = dict.fromkeys(keys, 0.0)
    for seed in SEEDS:
        scenario = load_scenario(
            str(SEQUENTIAL),
            [*sets, f"players.count={clients}", f"run.seed={seed}", "run.duration_s=4"],
        )
        s = run(scenario).summary
        stages = s["stage_time_fraction"]
        values = {
            "reply_ratio": s["replies_per_s"] / (clients * scenario.clients.rate_hz),
            "stage1": stages.get("stage1", 0.0),
            "stage2": stages.get("stage2", 0.0),
            "stage3": stages.get("stage3", 0.0),
            "stage2_us_per_packet": stages.get("stage2", 0.0) / s["messages_per_s"] * 1e6,
        }
        for key in keys:
            total[key] += values[key] / len(SEEDS)
    return total


def fit() -> tuple[float, float, float]:
    """The stage factors ``(s1, s2, s3)`` (method in the module docstring)."""
    unit = measure(costs_for(1.0, 1.0, 1.0), STAGE2_CLIENTS)
    s2 = STAGE2_US_PER_PACKET / unit["stage2_us_per_packet"]
    s1 = s3 = s2
    print(f"  s2 = {s2:.4f} (stage 2 {unit['stage2_us_per_packet']:.2f} us/packet at x1)")
    for _ in range(ROUNDS):
        stage1 = measure(costs_for(s1, s2, s3), STAGE2_CLIENTS)["stage1"]
        s1 *= STAGE1_SHARE / stage1
        s3 = _bisect_s3(s1, s2)
        print(f"  round: stage 1 share {stage1:.4f} -> s1 {s1:.4f}; s3 {s3:.4f}", flush=True)
    return s1, s2, s3


def _bisect_s3(s1: float, s2: float, iterations: int = 12) -> float:
    """``s3`` at which the boundary count's reply ratio crosses the saturation ratio."""
    lo, hi = s2 / 20, s2 * 5
    for _ in range(iterations):
        mid = (lo * hi) ** 0.5
        ratio = measure(costs_for(s1, s2, mid), BOUNDARY_CLIENTS)["reply_ratio"]
        lo, hi = (mid, hi) if ratio >= SATURATION_REPLY_RATIO else (lo, mid)
    return (lo * hi) ** 0.5


def write(s1: float, s2: float, s3: float) -> None:
    """Rewrite the platform file's ``[costs]`` table."""
    costs = costs_for(s1, s2, s3)
    lines = [f"[costs]  # {BASE} x stage factors s1 {s1:.4f}, s2 {s2:.4f}, s3 {s3:.4f} (FITTED)"]
    for name in Costs.model_fields:
        note = ""
        if name in HAND_SET:
            note = "  # hand-set"
        elif name in HAND_SET_XEON:
            note = f"  # hand-set {HAND_SET_XEON[name]} us on the Xeon, scaled"
        lines.append(f"{name} = {costs[name]:.4f}{note}")
    replace_costs_table(PLATFORM, lines)


def check(s1: float, s2: float, s3: float) -> None:
    """Print the fitted server against the four facts."""
    costs = costs_for(s1, s2, s3)
    for clients in (24, 32):
        m = measure(costs, clients)
        print(
            f"  {clients} clients: replies/offered {m['reply_ratio']:.3f}, stage 1 "
            f"{m['stage1']:.3f}, stage 2 {m['stage2']:.3f} ({m['stage2_us_per_packet']:.0f} "
            f"us/packet), stage 3 {m['stage3']:.3f}, idle "
            f"{1 - m['stage1'] - m['stage2'] - m['stage3']:.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.calibration.area2004")
    parser.add_argument("--write", action="store_true", help="write the platform file")
    args = parser.parse_args(argv)
    s1, s2, s3 = fit()
    print(f"s1 = {s1:.4f}, s2 = {s2:.4f}, s3 = {s3:.4f}")
    check(s1, s2, s3)
    if args.write:
        write(s1, s2, s3)
        print(f"wrote {PLATFORM}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
