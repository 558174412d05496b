"""Calibrate the interconnect profiles ``libvip``, ``libvip-altered`` and ``tcp`` to the
ping-pong of [V §4.1].

Run with ``simsrv calibrate libvip2004`` (a second).  The targets are the calibration rows of
paper ``libvip2004`` in the reference table: each profile's ping-pong bandwidth at 10 KB and
at 40 KB, the only numbers [V]'s text states for every version (its Figures 5 and 6 are not
read).  Every other statement (the plateau above 40 KB, the peak's place, TCP ahead of
libVIP below 2,400 B, the altered mode ahead below 10 KB) is a prediction row.

The ping-pong sees, per profile, two things (:mod:`simsrv.interconnect.pingpong`):

* ``per_message``: the per-message cost ``c = send_cpu_us + latency_us + recv_cpu_us``
  (``t_c = c + m/B`` synchronous, ``c/2 + m/B`` asynchronous).  It is pinned by the 10 KB
  target mostly (there ``c`` is about a third of ``t_c``).  ``send_cpu_us`` and
  ``recv_cpu_us`` are fitted as one factor (kept equal: the ping-pong cannot split them);
  ``latency_us`` is hand-set (30 us) and not fitted: the ping-pong cannot tell it from CPU.
* ``bandwidth``: ``bandwidth_bytes_per_s``, pinned by the 40 KB target mostly.

Six parameters, six targets, the Jacobian block-diagonal (each profile's two targets see
only its two parameters): exactly determined.  The fit is the joint least squares of
:mod:`simsrv.calibration.joint`, with the ping-pong computed instead of scenario runs
(deterministic: no seeds).  The identifiability report (``--report``) prints each
target's residual, the sensitivities and the condition number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions
from simsrv.calibration.joint import FitParameter, FitReport, JointFit, target_from_row
from simsrv.calibration.platform_file import write_atomic
from simsrv.interconnect.profile import PROFILE_DIR, load_profile
from simsrv.validation.pingpong import measure
from simsrv.validation.reference import load_reference

NAME = "libvip2004"
PROFILES = ("libvip", "libvip-altered", "tcp")
CPU_KEYS = ("send_cpu_us", "recv_cpu_us")
BANDWIDTH_KEY = "bandwidth_bytes_per_s"
WIRE_BYTES_PER_S = 1.25e8
"""Gigabit Ethernet's wire rate: no profile can exceed it."""


def _key(profile: str, field: str) -> str:
    return f"{profile}:{field}"


def parameters() -> tuple[FitParameter, ...]:
    """Two per profile: its per-message CPU (send and receive, kept equal) and bandwidth."""
    out = []
    for name in PROFILES:
        out.append(
            FitParameter(
                f"{name} per_message",
                tuple(_key(name, k) for k in CPU_KEYS),
                1.0,
                1000.0,
                "send and receive CPU per message (pinned by 10 KB)",
            )
        )
        out.append(
            FitParameter(
                f"{name} bandwidth",
                (_key(name, BANDWIDTH_KEY),),
                1e6,
                WIRE_BYTES_PER_S,
                "bytes/s through a node's attachment (pinned by 40 KB)",
            )
        )
    return tuple(out)


def committed_values(directory: Path = PROFILE_DIR) -> dict[str, float]:
    """The fitted fields of the profiles in ``directory``, by ``profile:field`` key."""
    values = {}
    for name in PROFILES:
        profile = load_profile(name, directory)
        for field in (*CPU_KEYS, BANDWIDTH_KEY):
            values[_key(name, field)] = float(getattr(profile, field))
    return values


class PingpongFit(JointFit):
    """:class:`JointFit` whose targets are ping-pong quantities computed on the model."""

    def __init__(self, options: FitOptions, log: Callable[[str], None]) -> None:
        reference = load_reference()
        self.rows = reference.platform_rows(NAME)
        start = {k: v * options.start for k, v in committed_values().items()}
        targets = [target_from_row(row) for row in self.rows]
        super().__init__(
            parameters(), targets, start, lambda costs: "", replace(options, workers=1), log
        )

    def _evaluate(self, costs: dict[str, float]) -> np.ndarray:
        self.evaluations += 1
        profiles = {
            name: load_profile(name).model_copy(
                update={f: costs[_key(name, f)] for f in (*CPU_KEYS, BANDWIDTH_KEY)}
            )
            for name in PROFILES
        }
        return np.array(
            [measure(row.quantity, profiles[row.pingpong], row.message_bytes) for row in self.rows]
        )


def report(options: FitOptions, log: Callable[[str], None]) -> FitReport:
    """The identifiability report at the committed values (times ``options.start``)."""
    with PingpongFit(options, log) as joint:
        return joint.report()


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """The fitted values by ``profile:field`` key; logs the report."""
    with PingpongFit(options, log) as joint:
        result = joint.fit(max_evaluations=100, xtol=1e-6)
    log(result.format())
    return {k: round(v, 4) for k, v in result.values.items()}


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """The profile files of ``source`` (a directory) written to ``out`` (a directory, may be
    ``source``), their ``# FITTED`` lines replaced by the fitted values, everything else kept."""
    out.mkdir(parents=True, exist_ok=True)
    for name in PROFILES:
        text = (source / f"{name}.toml").read_text()
        for field in (*CPU_KEYS, BANDWIDTH_KEY):
            value = fitted[_key(name, field)]
            number = f"{value:.1f}" if field == BANDWIDTH_KEY else f"{value:.2f}"
            text, count = re.subn(
                rf"^{field} = [0-9.eE+-]+(  # FITTED)", rf"{field} = {number}\1", text, flags=re.M
            )
            if count != 1:
                raise RuntimeError(f"{source / name}.toml: no '{field} = ...  # FITTED' line")
        write_atomic(out / f"{name}.toml", text)
    load_profile.cache_clear()


@dataclass(frozen=True)
class ProfileSetCalibrator(Calibrator):
    """A calibrator that writes a directory of interconnect profiles, not a platform file
    (``simsrv calibrate --out`` names a directory)."""

    source_dir: Path = PROFILE_DIR


CALIBRATORS.register(
    NAME,
    ProfileSetCalibrator(NAME, fit, write, duration="a second", duration_s=math.nan, report=report),
)
