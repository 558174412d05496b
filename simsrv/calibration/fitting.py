"""What every platform calibration shares: options, a registry, seed-averaged runs and a
one-dimensional root finder on the log of a cost.

A calibration fits a few cost parameters, one at a time in a fixed order, each so that one
target (a reference row of kind ``calibration``, :mod:`simsrv.validation.reference`) is met.
Each evaluation is the mean over ``seeds`` seeds of ``duration_s`` simulated seconds with the
same seeds every time (common random numbers), so the function being solved is deterministic.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy.optimize import brentq

from simsrv.core.registry import Registry
from simsrv.sweep.orphan import exit_with_parent
from simsrv.validation.jobs import RunJob, execute


@dataclass(frozen=True)
class FitOptions:
    """How a calibration evaluates its targets.

    ``start`` multiplies every fitted parameter's current value to give the starting point
    (1: the committed values; a different start checks that the fit is stable).
    """

    seeds: int = 3
    duration_s: float = 5.0
    start: float = 1.0
    workers: int = 1
    data: Path | None = None
    """Measurements a calibration reads (this-machine-mvdsv: a testbed campaign's store)."""


@dataclass(frozen=True)
class Calibrator:
    """A platform's calibration: ``fit`` returns the fitted values (by name), ``write`` puts
    them into a platform file (``source`` is the committed file, ``out`` where to write)."""

    platform: str
    fit: Callable[[FitOptions, Callable[[str], None]], dict[str, float]]
    write: Callable[[dict[str, float], Path, Path], None]
    duration: str
    """Wall time of a fit on a 2-core machine, for the help text."""
    duration_s: float = 5.0
    """Simulated seconds per evaluation run unless the user says otherwise."""
    report: Callable[[FitOptions, Callable[[str], None]], Any] | None = None
    """The identifiability report at the committed values (joint fits only): an object
    with ``format() -> str`` (:class:`simsrv.calibration.joint.FitReport`)."""


CALIBRATORS: Registry[Calibrator] = Registry("calibrated platform")


class SeedAverage:
    """Means over seeds of the quantities of scenario runs, on a pool kept for the whole fit."""

    def __init__(self, options: FitOptions) -> None:
        self.seeds = range(1, options.seeds + 1)
        self.duration_s = options.duration_s
        self.pool = (
            ProcessPoolExecutor(options.workers, initializer=exit_with_parent)
            if options.workers > 1
            else None
        )

    def mean(self, scenario: Path, overrides: Sequence[str], quantity: str) -> float:
        """Mean of ``quantity`` over the seeds of ``scenario`` with ``overrides``."""
        return self.means(scenario, overrides)[quantity]

    def means(self, scenario: Path, overrides: Sequence[str]) -> dict[str, float]:
        """Mean of every quantity over the seeds."""
        jobs = [
            RunJob(
                str(scenario), (*overrides, f"run.seed={s}", f"run.duration_s={self.duration_s}")
            )
            for s in self.seeds
        ]
        results = list(self.pool.map(execute, jobs) if self.pool else map(execute, jobs))
        return {key: statistics.fmean(r[key] for r in results) for key in results[0]}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def __enter__(self) -> SeedAverage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def boundary_clients(value: float, step: int) -> int:
    """The client count half a step above the last count below a published capacity
    ``value`` (92 for ~90 in steps of 8): where a fitted server should just saturate."""
    return int(step * (value // step) + step // 2)


class NoBracket(RuntimeError):
    """The target is not reached anywhere in the parameter's allowed range; ``bound`` is the
    end of the range closest to it."""

    def __init__(self, message: str, bound: float) -> None:
        super().__init__(message)
        self.bound = bound


def solve_log(
    f: Callable[[float], float],
    target: float,
    x0: float,
    *,
    rising: bool,
    lo: float,
    hi: float,
    rtol: float = 0.005,
) -> float:
    """The ``x`` in ``[lo, hi]`` where ``f(x) = target``, for ``f`` monotone in ``x``.

    From ``x0`` the bracket is grown by doubling steps on ``log x`` in the direction of the
    target, then refined by Brent's method (``scipy.optimize.brentq``) to ``rtol`` relative
    precision in ``x``.  ``rising``: ``f`` grows with ``x``.  Values of ``f`` are cached, so a
    bracket end is never run twice.  Raises :class:`NoBracket` when even ``lo`` or ``hi``
    does not reach the target.
    """
    cache: dict[float, float] = {}
    sign = 1.0 if rising else -1.0

    def g(u: float) -> float:  # increasing in u, zero at the solution
        if u not in cache:
            cache[u] = sign * (f(math.exp(u)) - target)
        return cache[u]

    a = b = math.log(min(max(x0, lo), hi))
    step = math.log(2.0)
    upward = g(a) < 0
    while (g(b) < 0) == upward:
        if b == math.log(hi if upward else lo):
            side = "hi" if upward else "lo"
            bound = math.exp(b)
            raise NoBracket(f"the target {target:g} is not reached at {side} = {bound:g}", bound)
        a, b = b, b + step if upward else b - step
        b = min(b, math.log(hi)) if upward else max(b, math.log(lo))
        step *= 2
    lower, upper = (a, b) if upward else (b, a)
    return math.exp(brentq(g, lower, upper, xtol=rtol))


def log_to_stderr(line: str) -> None:
    """The default progress log of a fit: one line per evaluation."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
