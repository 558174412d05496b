"""The simulations behind the reference rows: one run, or one capacity search, per seed.

Rows that share a scenario, overrides and seed share the job (the six Cordeiro runs feed 31
rows), so the table costs one pass over its distinct scenarios.  Jobs are plain frozen
dataclasses, so they run in a process pool; each returns plain floats.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.sweep.capacity import find_capacity
from simsrv.validation.pingpong import PingpongJob
from simsrv.validation.quantities import measure_all
from simsrv.validation.reference import CAPACITY_QUANTITIES, ReferenceRow


@dataclass(frozen=True)
class RunJob:
    """One run of ``scenario`` (absolute path) with ``overrides``; gives every quantity."""

    scenario: str
    overrides: tuple[str, ...]

    def execute(self) -> dict[str, float]:
        """Every registered quantity of the run (:func:`measure_all`)."""
        scenario = load_scenario(self.scenario, list(self.overrides))
        return measure_all(run(scenario).summary, scenario)


@dataclass(frozen=True)
class CapacityJob:
    """A capacity search (:func:`simsrv.sweep.capacity.find_capacity`) on ``scenario``."""

    scenario: str
    overrides: tuple[str, ...]
    start: int
    step: int
    min_reply_ratio: float

    def execute(self) -> dict[str, float]:
        """``{"capacity_clients": N}`` (0 when even the first count failed)."""
        result = find_capacity(
            self.scenario,
            list(self.overrides),
            start=self.start,
            step=self.step,
            min_reply_ratio=self.min_reply_ratio,
        )
        return {"capacity_clients": float(result.capacity_clients)}


Job = RunJob | CapacityJob | PingpongJob


def execute(job: Job) -> dict[str, float]:
    """Run one job (module-level, so a process pool can call it)."""
    return job.execute()


def row_jobs(
    row: ReferenceRow, seed: int, extra: Iterable[str] = (), profile_dir: str | None = None
) -> list[Job]:
    """The jobs one seed of ``row`` needs: its run, its capacity search, or (``capacity_gain``)
    the searches of its scenario and of its baseline, in that order; a ``pingpong`` row's
    ping-pong (the same job for every seed: it is deterministic).

    ``extra`` overrides come after the row's own (a quick-mode duration, a platform file);
    ``profile_dir`` replaces the built-in interconnect profiles (pingpong rows).
    """
    if row.pingpong:
        return [PingpongJob(row.pingpong, row.quantity, row.message_bytes, row.versus, profile_dir)]
    overrides = (*row.set, f"run.seed={seed}", *extra)
    if row.quantity not in CAPACITY_QUANTITIES:
        return [RunJob(str(row.scenario_path()), overrides)]
    scenarios = [row.scenario] + ([row.baseline] if row.baseline else [])
    return [
        CapacityJob(
            str(row.scenario_path(name)),
            overrides,
            row.capacity_start,
            row.capacity_step,
            row.capacity_min_reply_ratio,
        )
        for name in scenarios
    ]


def row_value(row: ReferenceRow, results: list[dict[str, float]]) -> float:
    """One seed's value of ``row`` from the results of :func:`row_jobs` (same order).

    Raises ``KeyError`` when the run lacks the quantity (e.g. groups of a strategy that does
    not group).
    """
    if row.quantity == "capacity_gain":
        capacity, baseline = (r["capacity_clients"] for r in results)
        return capacity / baseline - 1.0 if baseline else float("nan")
    return results[0][row.quantity]
