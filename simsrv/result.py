"""Run results with their provenance: :func:`run` and :class:`RunResult`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simsrv.metrics.summary import summarize
from simsrv.scenario.schema import Scenario
from simsrv.simulation import simulate
from simsrv.version import __version__


@dataclass
class RunResult:
    """One run: provenance, summary metrics and the recorded facts.

    Attributes
    ----------
    scenario:
        The resolved scenario.
    summary:
        Metrics of the measured window (:func:`simsrv.metrics.summarize`); empty on error.
    frames, trace:
        Per-frame records and the per-CPU interval trace (see
        :class:`simsrv.simulation.SimulationOutput` and :mod:`simsrv.machine.trace`).
    accounting:
        Packet balance at the end of the run.
    wall_time_s:
        Wall-clock time of the run, s.
    error:
        The error text if the run failed, else ``None``.
    """

    scenario: Scenario
    summary: dict[str, Any]
    frames: pd.DataFrame
    trace: pd.DataFrame
    accounting: dict[str, int]
    wall_time_s: float
    error: str | None = None
    version: str = __version__

    @property
    def seed(self) -> int:
        """The run's root seed."""
        return self.scenario.run.seed

    def to_json_dict(self) -> dict[str, Any]:
        """Summary metrics plus provenance, as printed by ``simsrv run --json``."""
        return {
            **self.summary,
            "accounting": self.accounting,
            "scenario": self.scenario.to_dict(),
            "seed": self.seed,
            "simsrv_version": self.version,
            "wall_time_s": self.wall_time_s,
            "error": self.error,
        }


def run(scenario: Scenario) -> RunResult:
    """Simulate ``scenario`` and summarise it."""
    start = time.perf_counter()
    out = simulate(scenario)
    summary = summarize(scenario, out)
    return RunResult(
        scenario=scenario,
        summary=summary,
        frames=out.frames,
        trace=out.trace,
        accounting=out.accounting,
        wall_time_s=time.perf_counter() - start,
    )
