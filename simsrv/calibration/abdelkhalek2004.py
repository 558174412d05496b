"""Calibrate AB04's platform (``abdelkhalek2004-xeon-ht``) on the sequential server only
[MODEL.md §3, P §3, R §2.2].

Run with ``simsrv calibrate abdelkhalek2004-xeon-ht`` (about 1 min).  The published fact used
(reference row ``ab04-sequential-capacity``): the sequential QuakeWorld server on AB04's
machine degrades beyond about 90 simultaneous players ([P §3]; [R] cites 96 clients on an
800 MHz machine).  Nothing about the multithreaded server is used: its lock, barrier and
capacity figures are predictions.

Method: the platform's server costs are the fitted Cordeiro Xeon's costs (same code, same cost
structure) times one factor ``scale`` (an older, slower CPU running a heavier game), with
synchronisation and OS costs scaled alike.  ``scale`` is solved so that the sequential
scenario at the boundary count (92: between the last count that should pass, 88, and the
first that should fail, 96, in the row's steps of 8) replies to exactly the row's
``capacity_min_reply_ratio`` (0.8) of the offered packets (the rule of
:mod:`simsrv.capacity`).  Re-run it after re-fitting the Cordeiro platform.
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

PLATFORM_NAME = "abdelkhalek2004-xeon-ht"
BASE = "cordeiro2007-xeon"
TARGET_ROW = "ab04-sequential-capacity"
HAND_SET = {
    # not part of the scaled server: a resumed thread's cold stack and state (MODEL.md §6 [M]):
    # ~200 cache lines and a few TLB entries from memory at ~100 ns each
    "thread_cache_refill": 20.0,
}


def costs_for(scale: float) -> dict[str, float]:
    """The platform's costs for ``scale``: the base costs times it, hand-set ones as set."""
    base = load_platform(BASE).costs
    return {n: HAND_SET.get(n, getattr(base, n) * scale) for n in Costs.model_fields}


def current_scale() -> float:
    """The committed platform's scale (its packet cost over the base's)."""
    committed = load_platform(PLATFORM_NAME).costs.request_per_message
    return committed / load_platform(BASE).costs.request_per_message


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """``{"scale": ...}`` solved from the committed scale times ``options.start``."""
    row = load_reference().by_id(TARGET_ROW)
    clients = boundary_clients(row.value, row.capacity_step)
    log(f"fit scale: reply ratio {row.capacity_min_reply_ratio:g} at {clients} clients ({row.id})")
    with SeedAverage(options) as runs:

        def reply_ratio(scale: float) -> float:
            sets = [f"machine.costs.{n}={v!r}" for n, v in costs_for(scale).items()]
            got = runs.mean(
                row.scenario_path(), [*row.set, *sets, f"players.count={clients}"], "reply_ratio"
            )
            log(f"  scale {scale:8.4f} -> replies / offered {got:.4f}")
            return got

        scale = solve_log(
            reply_ratio,
            row.capacity_min_reply_ratio,
            current_scale() * options.start,
            rising=False,
            lo=1.0,
            hi=20.0,
        )
    return {"scale": round(scale, 4)}


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """``source`` with its ``[costs]`` table rewritten as the base costs times the scale."""
    scale = fitted["scale"]
    costs = costs_for(scale)
    lines = [f"[costs]  # {BASE} x {scale:.4f} (FITTED scale)"]
    for name in Costs.model_fields:
        note = "  # hand-set" if name in HAND_SET else ""
        lines.append(f"{name} = {costs[name]:.4f}{note}")
    replace_costs_table(source, out, lines)


CALIBRATORS.register(
    PLATFORM_NAME, Calibrator(PLATFORM_NAME, fit, write, duration="about 1 min", duration_s=4.0)
)
