"""Calibrate AB04's platform (``abdelkhalek2004-xeon-ht``) on the sequential server only
[MODEL.md §1, §3; P §3, R §2.2].

Run with ``simsrv calibrate abdelkhalek2004-xeon-ht`` (a few minutes).  Two published facts
about the *sequential* QuakeWorld server on AB04's machine (reference rows):

* ``ab04-sequential-capacity``: it degrades beyond about 90 simultaneous players ([P §3];
  [R] cites 96 clients on an 800 MHz machine);
* ``ab04-sequential-network-share``: its time is split about 50-50 between game-related and
  network-related processing (the abstract of Abdelkhalek, Bilas & Moshovos, "Behavior and
  Performance of Interactive Multi-Player Game Servers", Cluster Computing 6(4), 2003).

Nothing about the multithreaded server is used: its lock, barrier and capacity figures are
predictions.

Method: the same server code and cost structure as the fitted Cordeiro Xeon, with two
factors fitted jointly (:mod:`simsrv.calibration.joint`): ``game`` on every server cost but
the network system calls (an older, slower CPU running a heavier game; synchronisation and
OS costs scale alike) and ``network`` on the UDP receive and send calls (another kernel and
network card; the two calls keep their ratio).  The capacity enters as the reply ratio at the
boundary count (92: between the last count that should pass, 88, and the first that should
fail, 96) equal to the row's ``capacity_min_reply_ratio`` (0.8, the rule of
:mod:`simsrv.sweep.capacity`); the split as the network share of busy time at 88 clients.  Two
targets, two factors: the fit is exactly determined.  Re-run it after re-fitting the Cordeiro
platform.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions, boundary_clients
from simsrv.calibration.joint import (
    FitParameter,
    FitReport,
    JointFit,
    Target,
    fit_and_log,
    report_at_start,
    target_from_row,
)
from simsrv.calibration.platform_file import PlatformFiles, replace_costs_table
from simsrv.platforms.profile import PLATFORM_DIR, Costs, load_platform
from simsrv.validation.reference import load_reference

PLATFORM_NAME = "abdelkhalek2004-xeon-ht"
PLATFORM = PLATFORM_DIR / f"{PLATFORM_NAME}.toml"
BASE = "cordeiro2007-xeon"
CAPACITY_ROW = "ab04-sequential-capacity"
SPLIT_ROW = "ab04-sequential-network-share"
REPLY_RATIO_TOLERANCE = 0.02
"""Tolerance of the boundary reply ratio (about two clients of the capacity near 92)."""
NETWORK = ("net_recv_per_message", "net_send_per_reply")
HAND_SET = {
    # not part of the scaled server: a resumed thread's cold stack and state (MODEL.md §6 [M]):
    # ~200 cache lines and a few TLB entries from memory at ~100 ns each
    "thread_cache_refill": 20.0,
    # the thread library: LinuxThreads on the Red Hat 2.4.18 kernel (docs/abdelkhalek-platform.md
    # §2, §4): a wake-up is one kill() by the waker and a return from sigsuspend by the
    # sleeper.  kill(): lmbench 2.0 on a 2.4 GHz Pentium 4, Linux 2.4.18 (P. Mau, LKML, Oct
    # 2002): null call 0.67 us, sig inst 1.11 us -> 1.2 us (0.7-2.5 us).  Wake-up on another
    # CPU: sig hndl 2.70 + ctxsw 2p/0K 0.73-0.86 + the sigsuspend return, same CPU 3.2-4.5 us,
    # times the 2.4.18 SMP penalty (OSDL 1-way vs 2-way, C. White, LKML, Feb 2003) -> 8 us
    # (2.5-12 us)
    "signal_send": 1.2,
    "signal_wakeup": 8.0,
}
GAME = tuple(n for n in Costs.model_fields if n not in NETWORK and n not in HAND_SET)


def costs_for(game: float, network: float) -> dict[str, float]:
    """The platform's costs for the two factors: the base costs times them, hand-set ones as
    set."""
    base = load_platform(BASE).costs
    factor = {**dict.fromkeys(GAME, game), **dict.fromkeys(NETWORK, network)}
    return {
        n: HAND_SET[n] if n in HAND_SET else getattr(base, n) * factor[n]
        for n in Costs.model_fields
    }


def current_factors() -> dict[str, float]:
    """The committed platform's factors (its costs over the base's)."""
    committed, base = load_platform(PLATFORM_NAME).costs, load_platform(BASE).costs
    return {
        "game": committed.request_per_message / base.request_per_message,
        "network": committed.net_recv_per_message / base.net_recv_per_message,
    }


def targets() -> list[Target]:
    """The capacity (as the boundary reply ratio) and the network share."""
    reference = load_reference()
    row = reference.by_id(CAPACITY_ROW)
    clients = boundary_clients(row.value, row.capacity_step)
    capacity = Target(
        row.id,
        str(row.scenario_path()),
        (*row.set, f"players.count={clients}"),
        "reply_ratio",
        row.capacity_min_reply_ratio,
        REPLY_RATIO_TOLERANCE,
    )
    return [capacity, target_from_row(reference.by_id(SPLIT_ROW))]


def _parameters(base: Costs) -> tuple[FitParameter, ...]:
    first = GAME[0]
    return (
        FitParameter(
            "game",
            GAME,
            getattr(base, first),
            30 * getattr(base, first),
            "CPU speed x game weight: every server cost but the network calls",
        ),
        FitParameter(
            "network",
            NETWORK,
            0.1 * base.net_recv_per_message,
            100 * base.net_recv_per_message,
            "the UDP receive and send system calls",
        ),
    )


def _joint_fit(options: FitOptions, log: Callable[[str], None], files: PlatformFiles) -> JointFit:
    factors = {k: v * options.start for k, v in current_factors().items()}
    start = costs_for(factors["game"], factors["network"])
    base = load_platform(BASE).costs
    return JointFit(_parameters(base), targets(), start, files, options, log)


def _factors(values: dict[str, float]) -> dict[str, float]:
    base = load_platform(BASE).costs
    return {
        "game": round(values[GAME[0]] / getattr(base, GAME[0]), 4),
        "network": round(values[NETWORK[0]] / base.net_recv_per_message, 4),
    }


def report(options: FitOptions, log: Callable[[str], None]) -> FitReport:
    """The identifiability report at the committed factors (times ``options.start``)."""
    return report_at_start(PLATFORM, _joint_fit, options, log)


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """``{"game": ..., "network": ...}`` fitted from the committed factors times
    ``options.start``; logs the report."""
    result = fit_and_log(PLATFORM, _joint_fit, options, log, max_evaluations=60, xtol=1e-3)
    return _factors(result.values)


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """``source`` with its ``[costs]`` table rewritten as the base costs times the factors."""
    game, network = fitted["game"], fitted["network"]
    costs = costs_for(game, network)
    lines = [f"[costs]  # {BASE} x {game:.4f}, network calls x {network:.4f} (FITTED factors)"]
    for name in Costs.model_fields:
        note = "  # hand-set" if name in HAND_SET else ""
        lines.append(f"{name} = {costs[name]:.4f}{note}")
    replace_costs_table(source, out, lines)


CALIBRATORS.register(
    PLATFORM_NAME,
    Calibrator(PLATFORM_NAME, fit, write, duration="a few minutes", duration_s=4.0, report=report),
)
