"""Run the reference rows and compare the model with the papers.

Data flow: reference rows -> the distinct jobs of every (row, seed) (:mod:`.jobs`) -> a process
pool -> each row's value per seed -> mean (or standard deviation) over seeds, its 95 %
interval, the relative error and pass/fail (:class:`RowResult`).

Seeds are ``1 .. seeds`` (the calibration's seeds), passed as ``run.seed``.  ``--quick`` runs
:data:`~simsrv.core.defaults.QUICK_SEEDS` seeds of :data:`~simsrv.core.defaults.QUICK_DURATION_S`
simulated seconds each, for CI; the tolerances stay those of the table.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from simsrv.core.defaults import QUICK_DURATION_S, VALIDATION_SEEDS
from simsrv.core.errors import InputError
from simsrv.pipeline.result import describe_error
from simsrv.sweep.local import run_parallel
from simsrv.sweep.statistics import ci95_half_width
from simsrv.validation.jobs import CapacityJob, Job, execute, row_jobs, row_value
from simsrv.validation.pingpong import PingpongJob
from simsrv.validation.reference import ReferenceRow, load_reference

DEFAULT_SEEDS = VALIDATION_SEEDS


@dataclass
class RowResult:
    """The model against one reference row.

    ``values`` holds one value per seed that ran; ``model_value`` is their mean (or, for a
    ``statistic = "sd"`` row, their sample standard deviation); ``ci95`` the half-width of the
    Student 95 % interval of the mean (None for ``sd`` rows and single seeds); ``rel_error``
    is ``(model - paper) / paper``.  ``error`` says why a row has no value (a failed or
    interrupted run).
    """

    row: ReferenceRow
    values: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def model_value(self) -> float | None:
        finite = [v for v in self.values if math.isfinite(v)]
        if self.error or not finite:
            return None
        if self.row.statistic == "sd":
            return statistics.stdev(finite) if len(finite) > 1 else None
        return statistics.fmean(finite)

    @property
    def ci95(self) -> float | None:
        if self.model_value is None or self.row.statistic == "sd" or len(self.values) < 2:
            return None
        return ci95_half_width(self.values)

    @property
    def rel_error(self) -> float | None:
        value = self.model_value
        if value is None or self.row.value == 0:
            return None
        return (value - self.row.value) / abs(self.row.value)

    @property
    def passed(self) -> bool:
        value = self.model_value
        return value is not None and self.row.passes(value)

    @property
    def conflicted(self) -> bool:
        """Out of tolerance, but the row records why the joint fit cannot meet it
        (``ReferenceRow.conflict``); a row that did not run is never just a conflict."""
        return not self.passed and bool(self.row.conflict) and self.model_value is not None

    def to_json(self, paper_title: str) -> dict:
        """The row as ``simsrv validate --json`` prints it."""
        row = self.row
        return {
            "id": row.id,
            "paper": row.paper,
            "paper_title": paper_title,
            "source": row.source,
            "quantity": row.description,
            "quantity_name": row.quantity,
            "statistic": row.statistic,
            "relation": row.relation,
            "paper_value": row.value,
            "model_value": self.model_value,
            "ci95": self.ci95,
            "rel_error": self.rel_error,
            "tolerance": row.tolerance,
            "kind": row.kind,
            "passed": self.passed,
            "seeds": len(self.values),
            "error": self.error,
        }


def calibration_failures(results: Sequence[RowResult]) -> list[RowResult]:
    """The calibration rows that are out of tolerance (or did not run), except those whose
    conflict with the other targets is recorded (``ReferenceRow.conflict``) and that ran."""
    return [r for r in results if r.row.kind == "calibration" and not r.passed and not r.conflicted]


def validate(
    rows: Sequence[ReferenceRow],
    *,
    seeds: int = DEFAULT_SEEDS,
    quick: bool = False,
    workers: int = 1,
    platform_files: dict[str, str] | None = None,
    on_job: Callable[[str, str | None], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> list[RowResult]:
    """The model against every row, in the rows' order.

    ``platform_files`` replaces a platform (by name) with a file for the rows of its papers
    (``simsrv calibrate`` checks a new fit this way).  ``on_plan(jobs)`` is called once the
    distinct jobs are known, ``on_job(label, error)`` as each finishes.  A
    ``KeyboardInterrupt`` propagates with ``.results`` attached: the rows whose jobs all
    finished have values, the others the error ``"not run (interrupted)"``.
    """
    reference = load_reference()
    platforms = platform_files or {}
    for row in rows:
        for name in filter(None, (row.scenario, row.baseline)):
            if not row.scenario_path(name).is_file():
                raise InputError(
                    f"reference: {row.id}: scenario not found: {row.scenario_path(name)} "
                    "(simsrv validate needs the repository's scenarios/ directory)"
                )
    jobs: dict[Job, int] = {}
    plan: list[tuple[ReferenceRow, list[list[int]]]] = []
    for row in rows:
        extra = []
        if quick:
            extra.append(f"run.duration_s={QUICK_DURATION_S}")
        platform = reference.papers[row.paper].platform
        profile_dir = None
        if platform in platforms and row.pingpong:
            profile_dir = platforms[platform]  # a directory of interconnect profiles
        elif platform in platforms:
            extra.append(f'machine.platform="{platforms[platform]}"')
        per_seed = []
        for seed in range(1, seeds + 1):
            row_seed = row_jobs(row, seed, extra, profile_dir)
            per_seed.append([jobs.setdefault(job, len(jobs)) for job in row_seed])
        plan.append((row, per_seed))

    # capacity searches are the longest jobs: start them first
    ordered = sorted(jobs, key=lambda job: (not isinstance(job, CapacityJob), jobs[job]))
    outcomes: dict[int, dict[str, float] | str] = {}
    if on_plan is not None:
        on_plan(len(ordered))

    def done(index: int, outcome: dict[str, float] | str) -> None:
        job = ordered[index]
        outcomes[jobs[job]] = outcome
        if on_job is not None:
            if isinstance(job, PingpongJob):
                label = f"pingpong {job.profile} {job.quantity} {job.message_bytes}"
            else:
                name = job.scenario.rsplit("/scenarios/", 1)[-1]
                label = f"{name} {' '.join(o for o in job.overrides if 'platform' not in o)}"
            on_job(label, outcome if isinstance(outcome, str) else None)

    try:
        run_parallel(ordered, execute, workers, done, lambda i, error: describe_error(error))
    except KeyboardInterrupt as interrupt:
        interrupt.results = _collect(plan, outcomes, "not run (interrupted)")
        raise
    return _collect(plan, outcomes, "not run")


def _collect(
    plan: list[tuple[ReferenceRow, list[list[int]]]],
    outcomes: dict[int, dict[str, float] | str],
    missing: str,
) -> list[RowResult]:
    results = []
    for row, per_seed in plan:
        result = RowResult(row)
        for job_ids in per_seed:
            got = [outcomes.get(i, missing) for i in job_ids]
            failure = next((g for g in got if isinstance(g, str)), None)
            if failure is not None:
                result.error = failure
                break
            try:
                result.values.append(row_value(row, got))
            except KeyError:
                result.error = f"the run has no quantity {row.quantity!r}"
                break
        results.append(result)
    return results
