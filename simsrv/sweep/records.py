"""One grid run as tidy rows: the run's metrics, its time breakdown, per-CPU load, BSP group
sizes and a few frames of its trace (for the Gantt chart).

Every table starts with the point's columns ``strategy``, ``cpus``, ``clients``,
``seed_index`` and ``seed``.  Columns of the ``runs`` row (one per run):

=========================  ==================================================================
``map``, ``platform``      the scenario's map kind and platform name
``frames_per_s``           server frames per simulated second
``messages_per_frame``     client packets read per frame
``messages_per_s``         packets read per simulated second
``replies_per_s``          replies sent per simulated second
``offered_per_s``          packets the clients send per second (clients x rate_hz)
``dropped_fraction``       share of the arrived packets the socket dropped
``parallel_fraction``      share of the window with every CPU busy
``lock_wait_fraction``     share of thread time blocked on locks (:mod:`simsrv.metrics.waiting`)
``barrier_wait_fraction``  share of thread time blocked at barriers
``any_waiting_fraction``   share of the window with at least one thread blocked
``os_time_fraction``       share of CPU time in process management: ``spawn`` (fork, clone),
                           ``copy_on_write``, ``teardown`` and ``wait``
                           (:func:`simsrv.metrics.moments.os_time_fraction`)
``cpu_utilization_mean``   mean busy share over the CPUs
``groups_per_frame``       BSP groups per frame (NaN for strategies that do not group)
``group_size_mean``        entities per BSP group (NaN likewise)
``response_mean_ms``       response time of the measured packets (from the arrival at the
                           socket to the end of the frame that read it,
                           :mod:`simsrv.workload.response_time`): mean, ms; and
                           ``response_p50_ms``, ``response_p95_ms``, ``response_p99_ms``,
                           ``response_max_ms``
``socket_wait_mean_ms``    their wait in the socket: mean, ms; and ``socket_wait_p95_ms``
``client_period_ms``       a client's frame, ms (1000 / ``clients.rate_hz``)
``frames``                 frames in the measured window
``simulated_time_s``       length of the measured window, s
``wall_time_s``            wall-clock time of the run, s
``compile_time_s``         of it, compiling numba functions or waiting for another worker's
                           compile (the first runs after an install), s
``run_time_s``             ``wall_time_s - compile_time_s``: what the simulation cost, s
``process``                the worker process's id
``error``                  the error text of a failed run (its metrics and ``frames`` NaN),
                           else ``None``
``simsrv_version``         the simsrv that produced the row
``scenario_hash``          first 16 hex digits of the SHA-256 of the resolved scenario JSON
=========================  ==================================================================

The other tables: ``breakdown`` (``category``, ``share``: the mean share of each thread's time
per stage category, :func:`simsrv.metrics.stages.stage_time_fraction`; the categories sum to 1
without ``intra_frame_wait``, which repeats the sum of the barrier categories), ``cpu_load``
(``cpu``, ``utilization``: busy share of the window), ``group_sizes`` (``size`` in entities,
``groups``: how many groups of that size the measured frames had), ``response`` (the response
time's sketch, :mod:`simsrv.workload.response_time`: ``bin``, ``response_ms`` its value and
``packets`` in it, the bins that hold packets; summed over runs, the sketch of their union) and
``gantt`` (the trace rows
overlapping the first :data:`GANTT_FRAMES` frames of the measured window, seed index 0 only,
clipped to them: ``frame``, ``cpu``, ``thread``, ``activity``, ``busy``, and
``start_ms``/``end_ms`` from the first frame's start; an earlier frame's interval still running
then, e.g. a worker's teardown, is included from 0).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simsrv.metrics.timeline import clip_intervals
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.pipeline.result import RunResult, describe_error, run
from simsrv.pipeline.summary import measured_frames
from simsrv.scenario.schema import Scenario
from simsrv.sweep.grid import GridRun
from simsrv.version import __version__
from simsrv.workload.response_time import RESPONSE, bin_value_ms

GANTT_FRAMES = 4
"""Frames of the measured window kept for the Gantt chart (the thesis' Figure 5 shows 2)."""

METRICS = (
    "frames_per_s",
    "messages_per_frame",
    "messages_per_s",
    "replies_per_s",
    "dropped_fraction",
    "parallel_fraction",
    "lock_wait_fraction",
    "barrier_wait_fraction",
    "any_waiting_fraction",
)
"""Summary metrics copied into the ``runs`` row as they are."""

RESPONSE_COLUMNS = {
    "response_mean_ms": ("response_time_ms", "mean"),
    "response_p50_ms": ("response_time_ms", "p50"),
    "response_p95_ms": ("response_time_ms", "p95"),
    "response_p99_ms": ("response_time_ms", "p99"),
    "response_max_ms": ("response_time_ms", "max"),
    "socket_wait_mean_ms": ("socket_wait_ms", "mean"),
    "socket_wait_p95_ms": ("socket_wait_ms", "p95"),
}
"""``runs`` columns of the response-time distributions: column -> (summary key, statistic)."""

SUMMARY_METRICS = (
    *METRICS,
    "offered_per_s",
    *RESPONSE_COLUMNS,
    "client_period_ms",
    "os_time_fraction",
    "cpu_utilization_mean",
    "groups_per_frame",
    "group_size_mean",
    "frames",
    "wall_time_s",
    "compile_time_s",
    "run_time_s",
)
"""Every numeric column of a ``runs`` row: the metrics of a summary (mean and CI per point)."""

VOLATILE = ("wall_time_s", "compile_time_s", "run_time_s", "process")
"""The columns of a ``runs`` row that depend on the machine and the pool, not on the scenario:
two runs of the same point differ only there."""


@dataclass
class RunRecords:
    """The tidy rows of one grid run (columns in the module docstring)."""

    runs: list[dict[str, Any]]
    breakdown: list[dict[str, Any]] = field(default_factory=list)
    cpu_load: list[dict[str, Any]] = field(default_factory=list)
    group_sizes: list[dict[str, Any]] = field(default_factory=list)
    response: list[dict[str, Any]] = field(default_factory=list)
    gantt: pd.DataFrame | None = None

    @property
    def error(self) -> str | None:
        return self.runs[0]["error"]


def scenario_hash(scenario: Scenario) -> str:
    """A stable fingerprint of the resolved scenario (16 hex digits).  The machine engine is
    left out: both engines give the same results, and stores made before it existed stay
    valid."""
    data = scenario.to_dict()
    data["machine"].pop("engine", None)
    text = json.dumps(data, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def execute(grid_run: GridRun) -> RunRecords:
    """Run one grid point; a failure becomes a row with the error and NaN metrics."""
    gantt = gantt_window(grid_run)
    result = run(grid_run.scenario, raise_errors=False, keep_trace=gantt, keep_frames=gantt)
    if result.error is not None:  # a bug in a strategy must not lose the rest of the grid
        return failed(grid_run, result.error)
    try:
        return records_of(grid_run, result)
    except Exception as error:
        return failed(grid_run, describe_error(error))


def gantt_window(grid_run: GridRun) -> KeepWindow | None:
    """The frames and trace rows a Gantt chart needs: those of the first :data:`GANTT_FRAMES`
    frames of the measured window (a superset: :func:`_gantt` cuts them to those frames'
    span), for the runs of seed index 0; None (none kept) for the others."""
    if grid_run.point.seed_index != 0:
        return None
    return KeepWindow(start_s=grid_run.scenario.run.warmup_s, frames=GANTT_FRAMES)


def failed(grid_run: GridRun, error: str) -> RunRecords:
    """The records of a run that failed with ``error``: one ``runs`` row, metrics NaN."""
    return RunRecords([_run_row(grid_run, None, error)])


def records_of(grid_run: GridRun, result: RunResult) -> RunRecords:
    """The tidy rows of a finished run."""
    key = grid_run.point.to_dict()
    s = result.summary
    breakdown = [{**key, "category": c, "share": v} for c, v in s["stage_time_fraction"].items()]
    cpu_load = [{**key, "cpu": c, "utilization": u} for c, u in enumerate(s["cpu_utilization"])]
    return RunRecords(
        runs=[_run_row(grid_run, result, None)],
        breakdown=breakdown,
        cpu_load=cpu_load,
        group_sizes=[{**key, **row} for row in _group_sizes(result)],
        response=[{**key, **row} for row in _response_bins(result)],
        gantt=_gantt(grid_run, result) if gantt_window(grid_run) is not None else None,
    )


def _run_row(grid_run: GridRun, result: RunResult | None, error: str | None) -> dict[str, Any]:
    return {**grid_run.point.to_dict(), **metrics_row(grid_run.scenario, result, error)}


def metrics_row(scenario: Scenario, result: RunResult | None, error: str | None) -> dict[str, Any]:
    """The columns of a ``runs`` row after the point's own (module docstring): the scenario's
    map and platform, the metrics (NaN without a result), provenance and the error."""
    sc = scenario
    row: dict[str, Any] = {
        "map": sc.map.kind,
        "platform": sc.machine.platform,
        "offered_per_s": sc.players.count * sc.clients.rate_hz,
        "client_period_ms": 1e3 / sc.clients.rate_hz,
    }
    s = result.summary if result is not None else {}
    row.update({m: float(s[m]) if s else math.nan for m in METRICS})
    row.update(
        {c: float(s[key][stat]) if s else math.nan for c, (key, stat) in RESPONSE_COLUMNS.items()}
    )
    groups = s.get("groups", {})
    utilization = s.get("cpu_utilization", [])
    row.update(
        os_time_fraction=float(sum(s["os_time_fraction"].values())) if s else math.nan,
        cpu_utilization_mean=sum(utilization) / len(utilization) if utilization else math.nan,
        groups_per_frame=float(groups.get("mean_count", math.nan)),
        group_size_mean=float(groups.get("mean_size", math.nan)),
        frames=int(s["frames"]) if s else math.nan,
        simulated_time_s=sc.run.duration_s,
        wall_time_s=result.wall_time_s if result is not None else math.nan,
        compile_time_s=result.compile_time_s if result is not None else math.nan,
        run_time_s=result.wall_time_s - result.compile_time_s if result is not None else math.nan,
        process=os.getpid(),
        error=error,
        simsrv_version=__version__,
        scenario_hash=scenario_hash(sc),
    )
    return row


def _response_bins(result: RunResult) -> list[dict[str, Any]]:
    if result.response is None:
        return []
    counts = result.response.counts[RESPONSE]
    bins = np.flatnonzero(counts)
    values = bin_value_ms(bins)
    return [
        {"bin": int(b), "response_ms": float(v), "packets": int(counts[b])}
        for b, v in zip(bins, values, strict=True)
    ]


def _group_sizes(result: RunResult) -> list[dict[str, Any]]:
    return [{"size": size, "groups": n} for size, n in result.group_sizes.items()]


def _gantt(grid_run: GridRun, result: RunResult) -> pd.DataFrame | None:
    frames = measured_frames(result.scenario, result.frames).head(GANTT_FRAMES)
    if frames.empty:
        return None
    t0, t1 = float(frames["start_s"].iloc[0]), float(frames["end_s"].iloc[-1])
    rows = clip_intervals(result.trace, t0, t1)
    out = pd.DataFrame(
        {
            "frame": rows["frame"].to_numpy(),
            "cpu": rows["cpu"].to_numpy(),
            "thread": rows["thread"].astype(str).to_numpy(),
            "activity": rows["activity"].astype(str).to_numpy(),
            "start_ms": (rows["start_s"].to_numpy() - t0) * 1e3,
            "end_ms": (rows["end_s"].to_numpy() - t0) * 1e3,
            "busy": rows["busy"].to_numpy(),
        }
    )
    for name, value in reversed(grid_run.point.to_dict().items()):
        out.insert(0, name, value)
    return out
