"""Run results with their provenance: :func:`run` and :class:`RunResult`."""

from __future__ import annotations

import sysconfig
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simsrv.core.compile_time import compile_seconds
from simsrv.core.errors import InputError, interrupted, shown
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.pipeline.load import build_scenario
from simsrv.pipeline.resources import check_memory
from simsrv.pipeline.simulation import simulate
from simsrv.pipeline.summary import summarize
from simsrv.scenario.schema import Scenario
from simsrv.version import __version__
from simsrv.workload.response_time import ResponseTimes


@dataclass
class RunResult:
    """One run: provenance, summary metrics and the recorded facts.

    Attributes
    ----------
    scenario:
        The resolved scenario.
    summary:
        Metrics of the measured window (:func:`simsrv.pipeline.summary.summarize`); empty on error.
        :meth:`summary_frame` gives them as a one-row DataFrame.
    frames, trace:
        Per-frame records and the per-CPU interval trace (see
        :class:`simsrv.pipeline.simulation.SimulationOutput` and :mod:`simsrv.machine.trace`); empty
        on error.  They hold the frames and rows of the windows ``run(..., keep_frames=...,
        keep_trace=...)`` asked for, and are None when none was (the default: a run's memory
        then does not grow with its length).
    group_sizes:
        Groups of each size (entities) over the measured frames, size -> groups, for
        strategies that record their groups' sizes (BSP-group); else empty.
    accounting:
        Packet balance at the end of the run.
    wall_time_s:
        Wall-clock time of the run, s.
    checks:
        The invariants checked in the run (:mod:`simsrv.machine.invariants`), name -> True; empty
        on error.
    compile_time_s:
        Of :attr:`wall_time_s`, the time this process spent compiling numba functions or
        waiting for another process's compile (:mod:`simsrv.core.compile_time`): the first runs
        after an install only.
    response:
        The measured packets' response times and socket waits, the sketch itself
        (:class:`simsrv.workload.response_time.ResponseTimes`; a cluster's: its nodes' merged),
        None on error.
    error:
        ``"<exception type>: <message> at <file>:<line>"`` if the run failed (with
        ``run(..., raise_errors=False)``), else ``None``.
    """

    scenario: Scenario
    summary: dict[str, Any]
    frames: pd.DataFrame | None
    trace: pd.DataFrame | None
    accounting: dict[str, int]
    wall_time_s: float
    error: str | None = None
    group_sizes: dict[int, int] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)
    response: ResponseTimes | None = None
    compile_time_s: float = 0.0
    version: str = __version__

    @property
    def seed(self) -> int:
        """The run's root seed."""
        return self.scenario.run.seed

    def summary_frame(self) -> pd.DataFrame:
        """The summary as one row: nested metrics flattened to dotted names
        (``moments.overlap``, ``per_thread.coordinator.stage2``), per-CPU lists to
        ``cpu_utilization.0``, ...; plus ``seed``, ``simsrv_version``, ``wall_time_s`` and
        ``error``.  Units are in the names (``_s``, ``_per_s``; fractions are shares of 1)."""
        row = _flatten(self.summary)
        row.update(
            seed=self.seed,
            simsrv_version=self.version,
            wall_time_s=self.wall_time_s,
            error=self.error,
        )
        return pd.DataFrame([row])

    def to_json_dict(self) -> dict[str, Any]:
        """Summary metrics plus provenance, as printed by ``simsrv run --json``."""
        return {
            **self.summary,
            "accounting": self.accounting,
            "checks": self.checks,
            "scenario": self.scenario.to_dict(),
            "seed": self.seed,
            "simsrv_version": self.version,
            "wall_time_s": self.wall_time_s,
            "error": self.error,
        }


def run(
    scenario: Scenario,
    raise_errors: bool = True,
    keep_trace: KeepWindow | None = None,
    keep_frames: KeepWindow | None = None,
) -> RunResult:
    """Simulate ``scenario`` and summarise it, keeping the trace rows of ``keep_trace`` and the
    frames of ``keep_frames`` (:class:`simsrv.pipeline.keep_window.KeepWindow`;
    :data:`simsrv.pipeline.keep_window.KEEP_ALL`: every one; None: none).

    With ``raise_errors=False`` an exception inside the simulation is returned as
    :attr:`RunResult.error` (empty tables and summary) instead of raised, so that a grid of runs
    keeps going.

    The arguments are checked and the scenario validated again, as a file is (a scenario
    changed after loading, e.g. by ``model_copy(update=...)`` or through its ``costs`` dict,
    or built as ``Scenario(...)``, gets the same checks and defaults), and a run that would
    need more memory than is available is refused (:mod:`simsrv.pipeline.resources`): each an
    :class:`~simsrv.core.errors.InputError` of one line, whatever ``raise_errors`` says.
    """
    scenario = checked_arguments(scenario, raise_errors, keep_trace, keep_frames)
    check_memory(scenario)
    start, compiling = time.perf_counter(), compile_seconds()
    try:
        if scenario.cluster is not None:
            from simsrv.pipeline.cluster.result import run_cluster

            out = run_cluster(scenario, keep_trace, keep_frames)
            summary, group_sizes, response = out.summary, out.group_sizes, out.response
        else:
            out = simulate(scenario, keep_trace, keep_frames)
            summary = summarize(scenario, out)
            group_sizes = dict(sorted(out.frame_digest.group_sizes.items()))
            response = out.response
    except Exception as error:
        if interrupted(error):  # Ctrl-C while compiled code returned: stop, not a failed run
            raise KeyboardInterrupt from None
        if raise_errors:
            raise
        return RunResult(
            scenario=scenario,
            summary={},
            frames=pd.DataFrame(),
            trace=pd.DataFrame(),
            accounting={},
            wall_time_s=time.perf_counter() - start,
            error=describe_error(error),
            compile_time_s=compile_seconds() - compiling,
        )
    return RunResult(
        scenario=scenario,
        summary=summary,
        frames=out.frames,
        trace=out.trace,
        accounting=out.accounting,
        wall_time_s=time.perf_counter() - start,
        checks=out.checks,
        group_sizes=group_sizes,
        response=response,
        compile_time_s=compile_seconds() - compiling,
    )


def checked_arguments(
    scenario: Any, raise_errors: Any, keep_trace: Any, keep_frames: Any
) -> Scenario:
    """:func:`run`'s arguments checked (an :class:`InputError` naming the argument); returns
    the scenario validated again from its plain data (equal to it when it was valid)."""
    if not isinstance(scenario, Scenario):
        hint = " (load it with simsrv.load_scenario(path))" if isinstance(scenario, str) else ""
        raise InputError(f"run: scenario must be a Scenario{hint}, got {type(scenario).__name__}")
    if not isinstance(raise_errors, bool):
        raise InputError(f"run: raise_errors must be True or False, got {shown(raise_errors)}")
    for name, window in (("keep_trace", keep_trace), ("keep_frames", keep_frames)):
        if window is not None and not isinstance(window, KeepWindow):
            raise InputError(
                f"run: {name} must be a KeepWindow, KEEP_ALL or None, got {shown(window)}"
            )
    return build_scenario(scenario.to_dict())


def describe_error(error: BaseException) -> str:
    """One line: the exception's type and message and where it was raised (the innermost
    frame outside the standard library and installed packages, so that an error inside pandas
    points at the simsrv line that called it)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if not _is_library(f.filename)]
    where = (ours or frames)[-1:] if frames else []
    place = f" at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno}" if where else ""
    return f"{type(error).__name__}: {error}{place}"


def _is_library(filename: str) -> bool:
    return "site-packages" in filename or filename.startswith(sysconfig.get_paths()["stdlib"])


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            out.update(_flatten(dict(enumerate(value)), f"{name}."))
        else:
            out[name] = value
    return out
