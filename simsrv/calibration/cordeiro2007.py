"""Calibrate the 2 x Xeon platform (``cordeiro2007-xeon``) to Cordeiro et al. 2007.

Run with ``simsrv calibrate cordeiro2007-xeon`` (docs/calibration.md).  One joint least-squares
fit (:mod:`simsrv.calibration.joint`) of :data:`PARAMETERS` to every calibration row of the
paper in the reference table: the frame rates, messages/frame and messages/s of the six runs
of Table 1 and [T §4.4.2-4.4.5], *and* the published statements about where the time goes:

* request + reply processing ~80 % of the sequential server's CPU time [P §4.2, T §3.2.4];
* network system calls ~10 % [P §4.1]; world physics < 5 % [P §3.1, R §2.2];
* the fork version used one of the two CPUs [T §4.4.4] (held by the hand-set
  ``migration_delay_us``, a lower bound: no fitted parameter moves it);
* worker destruction ~30 % of a worker's time with ``clone`` + ``wait`` [T §4.4.5, §3.4.3].

Predictions, never fitted: the all-CPUs-busy shares (55.65 % / 53.65 %), the group
statistics, the bandwidth-controlled replies/frame, and the withheld figures.

Each fitted parameter multiplies a group of cost keys, keeping their ratios where a source
ties them (:data:`PARAMETERS`).  Every other cost is set by hand from a source or an
order-of-magnitude argument written beside it in the platform file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions
from simsrv.calibration.joint import (
    FitParameter,
    FitReport,
    JointFit,
    fit_and_log,
    report_at_start,
    target_from_row,
)
from simsrv.calibration.platform_file import PlatformFiles, with_values, write_atomic
from simsrv.platforms.profile import PLATFORM_DIR
from simsrv.validation.reference import load_reference

PLATFORM_NAME = "cordeiro2007-xeon"
PLATFORM = PLATFORM_DIR / f"{PLATFORM_NAME}.toml"

PARAMETERS: tuple[FitParameter, ...] = (
    FitParameter(
        "frame_overhead",
        ("frame_overhead",),
        1.0,
        2000.0,
        "per-frame work independent of packets (select, timeouts, the client-slot loops)",
    ),
    FitParameter(
        "request_per_message",
        ("request_per_message",),
        1.0,
        2000.0,
        "fixed work of executing one packet (SV_ExecuteClientMessage)",
    ),
    FitParameter(
        "reply_per_client",
        ("reply_per_client",),
        0.05,
        500.0,
        "fixed work of building one reply (SV_SendClientDatagram)",
    ),
    FitParameter(
        "network",
        ("net_recv_per_message", "net_send_per_reply"),
        0.1,
        500.0,
        "the UDP receive and send system calls, one factor (ratio kept: one system call each)",
    ),
    FitParameter(
        "grouping_per_message",
        ("grouping_per_message",),
        0.01,
        1000.0,
        "what grouping adds beyond the action lists it reuses (the graph, union-find)",
    ),
    FitParameter(
        "process_creation",
        ("fork", "clone"),
        1.0,
        20000.0,
        "fork() and clone(CLONE_STOPPED): the same system call with the same flags but "
        "SIGCHLD [T §3.4.2], so one cost",
    ),
    FitParameter(
        "exit_teardown",
        ("exit_teardown",),
        1.0,
        20000.0,
        "a worker's exit: the kernel frees its address space",
    ),
    FitParameter(
        "cow_per_page",
        ("cow_per_page",),
        0.01,
        500.0,
        "one copy-on-write fault: trap, allocate and copy a 4 KiB page",
    ),
)
"""The fitted parameters (each a factor on its keys; bounds on the first key, us)."""


def targets():
    """The paper's calibration rows as fit targets."""
    rows = load_reference().platform_rows(PLATFORM_NAME)
    return [target_from_row(r) for r in rows]


def committed_values() -> dict[str, float]:
    """The committed platform's ``[costs]`` table and any fitted top-level number, by key."""
    data = tomllib.loads(PLATFORM.read_text())
    fitted = {k for p in PARAMETERS for k in p.keys}
    return {**{k: v for k, v in data.items() if k in fitted}, **data["costs"]}


def _joint_fit(options: FitOptions, log: Callable[[str], None], files: PlatformFiles) -> JointFit:
    start = committed_values()
    for p in PARAMETERS:
        for key in p.keys:
            start[key] *= options.start
    return JointFit(PARAMETERS, targets(), start, files, options, log)


def report(options: FitOptions, log: Callable[[str], None]) -> FitReport:
    """The identifiability report at the committed values (times ``options.start``)."""
    return report_at_start(PLATFORM, _joint_fit, options, log)


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """The joint fit from the committed values times ``options.start``; logs the report."""
    return fit_and_log(PLATFORM, _joint_fit, options, log).values


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """Write ``source`` to ``out`` with the fitted values replaced, keeping its comments."""
    write_atomic(out, with_values(source, {key: f"{value}" for key, value in fitted.items()}))


CALIBRATORS.register(
    PLATFORM_NAME,
    Calibrator(PLATFORM_NAME, fit, write, duration="about 15 min", report=report),
)
