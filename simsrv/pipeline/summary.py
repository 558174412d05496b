"""The one-row summary of a run (the ``simsrv run --json`` metrics).

Every metric covers the measured window ``[warmup_s, warmup_s + duration_s]``: frames that start
in it, packets that arrive in it, and trace intervals clipped to it (the frames and the trace
digested as they are recorded, :mod:`simsrv.metrics.frame_digest` and
:mod:`simsrv.metrics.trace_digest`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simsrv.metrics.frame_digest import MEMORY_COLUMNS
from simsrv.metrics.stages import stage_time_fraction
from simsrv.metrics.waiting import WAITING_FRACTIONS
from simsrv.scenario.schema import Scenario

if TYPE_CHECKING:
    from simsrv.pipeline.simulation import SimulationOutput


def measured_frames(scenario: Scenario, frames: pd.DataFrame) -> pd.DataFrame:
    """The frames that start in the measured window ``[warmup_s, warmup_s + duration_s)``."""
    t0 = scenario.run.warmup_s
    t1 = t0 + scenario.run.duration_s
    return frames[(frames["start_s"] >= t0) & (frames["start_s"] < t1)]


FRAME_RATES = (
    "frames_per_s",
    "messages_per_frame",
    "messages_per_s",
    "replies_per_s",
    "choked_per_s",
)
"""The summary's first keys, from the frame digest."""


def summarize(scenario: Scenario, out: SimulationOutput) -> dict[str, Any]:
    """Metrics of the measured window.

    Keys: ``frames_per_s``, ``messages_per_frame``, ``messages_per_s``, ``replies_per_s``,
    ``dropped_fraction`` (of the packets that reached the socket), ``parallel_fraction`` (share
    of time with every CPU busy), ``cpu_utilization`` (busy share per CPU), ``time_breakdown``
    (activity -> share of total CPU time, ``idle`` included; wait states are thread time spent
    blocked and may overlap other threads' work), ``simulated_time_s``, ``frames``, ``moments``
    and ``os_time_fraction`` (:mod:`simsrv.metrics.moments`), ``lock_wait_fraction``,
    ``barrier_wait_fraction`` and ``any_waiting_fraction`` (:mod:`simsrv.metrics.waiting`),
    ``stage_time_fraction`` and ``per_thread`` (:mod:`simsrv.metrics.stages`), ``groups``
    for strategies that group entities, and ``memory_bytes`` / ``memory_reserved_bytes``
    (resident and reserved thread-stack memory, bytes) for strategies that record them;
    ``softirq_fraction`` (share of the interrupt CPU's time in the receive softirq, which the
    trace does not show: :mod:`simsrv.platforms.network_path`; 0 without an interrupt CPU);
    ``response_time_ms``, ``socket_wait_ms``, ``answered_packets`` and ``unanswered_packets``
    (:meth:`simsrv.workload.response_time.ResponseTimes.summary`).
    """
    t0 = scenario.run.warmup_s
    span = (t0 + scenario.run.duration_s) - t0  # as the digests' window
    framed = out.frame_digest.summary(span)
    arrived, dropped = out.arrived, out.dropped
    traced = out.trace_metrics
    result = {
        **{key: framed[key] for key in FRAME_RATES},
        "dropped_fraction": dropped / arrived if arrived else 0.0,
        "parallel_fraction": traced["parallel_fraction"],
        "cpu_utilization": traced["cpu_utilization"],
        "time_breakdown": traced["time_breakdown"],
        "simulated_time_s": span,
        "frames": framed["frames"],
        "moments": traced["moments"],
        "os_time_fraction": traced["os_time_fraction"],
        **{key: traced[key] for key in WAITING_FRACTIONS},
        "stage_time_fraction": stage_time_fraction(traced["per_thread"]),
        "per_thread": traced["per_thread"],
        "softirq_fraction": out.softirq_s / span if span else 0.0,
    }
    for key in ("groups", *MEMORY_COLUMNS):  # strategies that group; with static threads
        if key in framed:
            result[key] = framed[key]
    result.update(out.response.summary())
    return result
