"""Calibrate the 4 x 296 MHz UltraSPARC-II platform (``area2004-ultrasparc``) on the
sequential server only [R §4-5].

Run with ``simsrv calibrate area2004-ultrasparc`` (under a minute).  Published facts about the
*sequential* server on this machine (MODEL.md §4; reference rows ``area-sequential-*``), cube
map, 31.25 requests per client per second:

1. stage 2 takes "almost 0.8 ms" per client packet at 32 clients [R §5.2];
2. it saturates "slightly above 24 clients": idle time remains at 24, it is overloaded at 32
   [R §5.1];
3. world physics (stage 1) is ~5 % of the time [R §3.4, §5.1];
4. stage 3 takes "up to 40 %" of a saturated server's time [R §5.3] (a prediction).

Nothing about the parallel server is used: its capacities are predictions (the published
values are withheld).

Method: the platform runs the same server code as the Cordeiro Xeon, so its costs are the
fitted Xeon costs times three factors, one per stage (a 1999 SPARC, another compiler and
another map weigh the stages differently): ``s2`` on stage 2 (receive and request costs, and
the synchronisation and OS costs, the CPU-speed proxy), ``s1`` on world physics, ``s3`` on
stage 3 (reply costs).  Three costs the Xeon folds elsewhere are given Xeon values by hand and
scaled with their stage (:data:`HAND_SET_XEON`; the per-frame fixed work with ``s2``).

* ``s2`` is exact from fact 1: stage-2 time per packet is linear in ``s2``.
* ``s1`` and ``s3`` alternate (:data:`ROUNDS` rounds): ``s1`` rescaled so that stage 1 is
  the fact-3 share at 32 clients; ``s3`` solved so that the server at the boundary count (28:
  between 24, which must pass, and 32, which must fail) replies to the row's 0.95 of the
  offered packets (fact 2: the server just saturates there; the capacity rule for this
  platform uses the same ratio).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from simsrv.calibration.fitting import (
    CALIBRATORS,
    Calibrator,
    FitOptions,
    SeedAverage,
    boundary_clients,
    solve_log,
)
from simsrv.calibration.platform_file import replace_costs_table
from simsrv.platforms.profile import Costs, load_platform
from simsrv.validation.reference import load_reference

PLATFORM_NAME = "area2004-ultrasparc"
BASE = "cordeiro2007-xeon"
STAGE2_ROW = "area-sequential-stage2-us-per-packet"
STAGE1_ROW = "area-sequential-stage1-share"
CAPACITY_ROW = "area-sequential-capacity"
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
    # the Xeon's fitted frame_overhead includes the loops over client slots; here stage 1
    # is a constant ~5 % of the time at every client count [R §5.1],
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


def current_factors() -> tuple[float, float, float]:
    """``(s1, s2, s3)`` of the committed platform (one cost of each stage over the base's)."""
    committed, base = load_platform(PLATFORM_NAME).costs, load_platform(BASE).costs
    return (
        committed.world_per_entity / base.world_per_entity,
        committed.request_per_message / base.request_per_message,
        committed.reply_per_client / base.reply_per_client,
    )


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """``{"s1", "s2", "s3"}`` (method in the module docstring), from the committed factors
    times ``options.start``."""
    reference = load_reference()
    stage2, stage1, capacity = (reference.by_id(r) for r in (STAGE2_ROW, STAGE1_ROW, CAPACITY_ROW))
    boundary = boundary_clients(capacity.value, capacity.capacity_step)
    s1, _, s3 = (f * options.start for f in current_factors())
    with SeedAverage(options) as runs:

        def measure(row, factors: tuple[float, float, float], *extra: str) -> dict[str, float]:
            sets = [f"machine.costs.{n}={v!r}" for n, v in costs_for(*factors).items()]
            return runs.means(row.scenario_path(), [*row.set, *sets, *extra])

        unit = measure(stage2, (1.0, 1.0, 1.0))[stage2.quantity]
        s2 = stage2.value / unit
        log(f"s2 = {s2:.4f} (stage 2 {unit:.2f} us/packet at x1; {stage2.id})")
        for _ in range(ROUNDS):
            share = measure(stage1, (s1, s2, s3))[stage1.quantity]
            s1 *= stage1.value / share
            log(f"round: stage 1 share {share:.4f} -> s1 {s1:.4f} ({stage1.id})")

            def reply_ratio(x: float, s1: float = s1) -> float:
                got = measure(capacity, (s1, s2, x), f"players.count={boundary}")["reply_ratio"]
                log(f"  s3 {x:8.4f} -> replies / offered at {boundary} clients {got:.4f}")
                return got

            s3 = solve_log(
                reply_ratio,
                capacity.capacity_min_reply_ratio,
                s3,
                rising=False,
                lo=s2 / 20,
                hi=s2 * 5,
            )
    return {"s1": round(s1, 4), "s2": round(s2, 4), "s3": round(s3, 4)}


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """``source`` with its ``[costs]`` table rewritten from the three factors."""
    s1, s2, s3 = fitted["s1"], fitted["s2"], fitted["s3"]
    costs = costs_for(s1, s2, s3)
    lines = [f"[costs]  # {BASE} x stage factors s1 {s1:.4f}, s2 {s2:.4f}, s3 {s3:.4f} (FITTED)"]
    for name in Costs.model_fields:
        note = ""
        if name in HAND_SET:
            note = "  # hand-set"
        elif name in HAND_SET_XEON:
            note = f"  # hand-set {HAND_SET_XEON[name]} us on the Xeon, scaled"
        lines.append(f"{name} = {costs[name]:.4f}{note}")
    replace_costs_table(source, out, lines)


CALIBRATORS.register(
    PLATFORM_NAME, Calibrator(PLATFORM_NAME, fit, write, duration="under a minute", duration_s=4.0)
)
