"""A joint, identifiable fit of a platform's costs to all its calibration targets at once.

Every fitted parameter is a *group* of cost keys multiplied by one factor (their ratios are
kept: ``fork`` and ``clone`` are the same system call, the receive and send system calls are
one network cost).  The unknowns are ``u_j = log(x_j / x_j0)``; the residual of a target is

    r_i(u) = (model_i(u) - value_i) / scale_i

where ``scale_i`` is the target's tolerance in the quantity's units (``rel_tol x value`` or
``abs_tol``; a bound with zero tolerance uses a tenth of its value), and a satisfied bound
(``at_most`` / ``at_least``) has residual 0.  ``scipy.optimize.least_squares`` minimises
``sum r_i^2`` within the parameters' bounds.  Every evaluation runs the same seeds (common
random numbers), so ``model(u)`` is a deterministic function and finite differences see the
parameters, not the noise.

At the solution the report gives, from the Jacobian ``J_ij = d r_i / d u_j``:

* each target's residual (in tolerances) and the model value;
* the *sensitivity* (elasticity) of every target to every parameter,
  ``d log model_i / d log x_j``;
* each parameter's *pin strength* ``||J_:j||`` (how many tolerances the targets move per
  e-fold change of the parameter); below :data:`PIN_FLOOR` no target pins it;
* the condition number of ``J`` and its weakest direction (the combination of parameters the
  targets see least).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from simsrv.calibration.fitting import FitOptions
from simsrv.calibration.platform_file import PlatformFiles
from simsrv.core.uninitialised import empty
from simsrv.sweep.orphan import exit_with_parent
from simsrv.validation.jobs import RunJob, execute

PIN_FLOOR = 1.0
"""A parameter whose pin strength ``||J_:j||`` is below this is not pinned by the targets:
doubling it moves every target by less than ~0.7 of its tolerance."""

DIFF_STEP = 0.03
"""Finite-difference step on ``u`` (3 % on each parameter).  An absolute step: scipy's
relative ``diff_step`` is zero at the start ``u = 0`` and falls back to ~1e-8, which moves no
discrete-event run at all."""


@dataclass(frozen=True)
class FitParameter:
    """One fitted factor applied to the platform numbers ``keys`` (cost keys, or top-level
    numbers such as ``migration_delay_us``; their ratios kept).

    ``lo`` and ``hi`` bound the first key's value (us); ``why`` says what it stands for.
    """

    name: str
    keys: tuple[str, ...]
    lo: float
    hi: float
    why: str = ""


@dataclass(frozen=True)
class Target:
    """A calibration target: ``quantity`` of ``scenario`` (+ ``overrides``) against ``value``.

    ``relation``: ``equal``, ``at_most`` or ``at_least``; ``scale``: the tolerance in the
    quantity's units (the residual's unit).  ``relative``: the tolerance is relative (a rate):
    the residual is ``log(model / value) / (scale / value)``, which equals the plain one near
    the target but grows only logarithmically when a saturated run's rate runs away (a
    closed loop at ``lambda c -> 1`` multiplies messages/frame tenfold for a few % of cost,
    which would swamp every other target and break the Gauss-Newton steps).
    """

    id: str
    scenario: str
    overrides: tuple[str, ...]
    quantity: str
    value: float
    scale: float
    relation: str = "equal"
    relative: bool = False

    def residual(self, model: float) -> float:
        """The gap to the value in tolerances (see the class docstring), 0 for a satisfied
        bound."""
        gap = model - self.value
        if (self.relation == "at_most" and gap <= 0) or (self.relation == "at_least" and gap >= 0):
            return 0.0
        if self.relative:
            return math.log(max(model, 1e-9 * self.value) / self.value) * self.value / self.scale
        return gap / self.scale


def target_from_row(row) -> Target:
    """The :class:`Target` of a reference row (a ``ReferenceRow`` of kind calibration)."""
    scale = row.abs_tol if row.abs_tol is not None else row.rel_tol * abs(row.value)
    if scale == 0:
        scale = 0.1 * abs(row.value) or 1.0
    return Target(
        row.id,
        str(row.scenario_path()),
        tuple(row.set),
        row.quantity,
        row.value,
        scale,
        row.relation,
        relative=row.abs_tol is None and row.value > 0,
    )


@dataclass
class FitReport:
    """The outcome of a joint fit (or of a report at fixed values)."""

    parameters: tuple[FitParameter, ...]
    values: dict[str, float]
    """Fitted cost values by cost key, us."""
    targets: tuple[Target, ...]
    model: np.ndarray
    """Model value of each target at the solution."""
    residuals: np.ndarray
    model_jacobian: np.ndarray
    """``d model_i / d u_j`` at the solution (targets x parameters), forward differences."""
    evaluations: int = 0
    message: str = ""
    bounded: tuple[str, ...] = field(default=())
    """Parameters that ended at a bound."""

    @property
    def jacobian(self) -> np.ndarray:
        """``d r_i / d u_j``: the model's Jacobian in tolerances; 0 on the rows of bounds
        that hold (they do not constrain the parameters there)."""
        scale = np.array([t.scale for t in self.targets])
        active = np.array(
            [
                t.relation == "equal" or r != 0
                for t, r in zip(self.targets, self.residuals, strict=True)
            ]
        )
        return self.model_jacobian / scale[:, None] * active[:, None]

    @property
    def elasticity(self) -> np.ndarray:
        """``d log model_i / d log x_j`` (targets x parameters); 0 where the model is 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.model_jacobian / self.model[:, None]
        return np.nan_to_num(out)

    @property
    def pin_strength(self) -> np.ndarray:
        """``||J_:j||`` per parameter."""
        return np.linalg.norm(self.jacobian, axis=0)

    @property
    def unpinned(self) -> list[str]:
        """Parameters whose pin strength is below :data:`PIN_FLOOR`."""
        return [
            p.name for p, s in zip(self.parameters, self.pin_strength, strict=True) if s < PIN_FLOOR
        ]

    @property
    def condition_number(self) -> float:
        """Condition number of the Jacobian (ratio of its extreme singular values)."""
        s = np.linalg.svd(self.jacobian, compute_uv=False)
        return float(s[0] / s[-1]) if s[-1] > 0 else math.inf

    def weakest_direction(self) -> dict[str, float]:
        """The unit combination of log-parameters the targets see least (last right
        singular vector of ``J``), by parameter name."""
        _, _, vt = np.linalg.svd(self.jacobian)
        v = vt[-1] * np.sign(vt[-1][np.argmax(np.abs(vt[-1]))])
        return {p.name: float(x) for p, x in zip(self.parameters, v, strict=True)}

    def format(self) -> str:
        """The identifiability report as text."""
        lines = ["targets (residual = (model - paper) / tolerance):"]
        lines.append(f"  {'target':44s} {'paper':>10s} {'model':>10s} {'residual':>9s}")
        for t, m, r in zip(self.targets, self.model, self.residuals, strict=True):
            rel = {"at_most": "<=", "at_least": ">="}.get(t.relation, "")
            lines.append(f"  {t.id:44s} {rel + format(t.value, '.4g'):>10s} {m:10.4g} {r:+9.2f}")
        lines.append(f"  sum of squares {float(self.residuals @ self.residuals):.3f}")
        lines.append("")
        lines.append("parameters (value of the first key, us; pin = ||dr/dlog x||):")
        for p, s in zip(self.parameters, self.pin_strength, strict=True):
            flag = "  NOT PINNED" if s < PIN_FLOOR else ""
            flag += "  at bound" if p.name in self.bounded else ""
            keys = ", ".join(f"{k} = {self.values[k]:.4g}" for k in p.keys)
            lines.append(f"  {p.name:22s} pin {s:8.2f}  {keys}{flag}")
        lines.append("")
        lines.append("sensitivity d log(model) / d log(parameter):")
        names = [p.name[:10] for p in self.parameters]
        lines.append("  " + " " * 44 + " ".join(f"{n:>10s}" for n in names))
        for t, row in zip(self.targets, self.elasticity, strict=True):
            lines.append(f"  {t.id:44s}" + " ".join(f"{x:+10.3f}" for x in row))
        lines.append("")
        weak = ", ".join(f"{k} {v:+.2f}" for k, v in self.weakest_direction().items())
        lines.append(f"condition number of J: {self.condition_number:.3g}")
        lines.append(f"weakest direction (unit, in log parameters): {weak}")
        return "\n".join(lines)


class JointFit:
    """Evaluates every target at a point and fits the parameters by least squares.

    ``start``: the platform's ``[costs]`` at the starting point (cost key -> us);
    ``write_platform(costs) -> str``: a platform file path for those costs, passed to runs as
    ``machine.platform``.
    """

    def __init__(
        self,
        parameters: Sequence[FitParameter],
        targets: Sequence[Target],
        start: dict[str, float],
        write_platform: Callable[[dict[str, float]], str],
        options: FitOptions,
        log: Callable[[str], None],
    ) -> None:
        self.parameters = tuple(parameters)
        self.targets = tuple(targets)
        self.start = dict(start)
        self.write_platform = write_platform
        self.options = options
        self.log = log
        self.evaluations = 0
        self.cache: dict[tuple[float, ...], np.ndarray] = {}
        self.pool = (
            ProcessPoolExecutor(options.workers, initializer=exit_with_parent)
            if options.workers > 1
            else None
        )
        # one run set per distinct (scenario, overrides): several targets read the same runs
        self.runs = list(dict.fromkeys((t.scenario, t.overrides) for t in self.targets))

    def costs(self, u: Sequence[float]) -> dict[str, float]:
        """The cost values at ``u``."""
        costs = dict(self.start)
        for p, uj in zip(self.parameters, u, strict=True):
            for key in p.keys:
                costs[key] = self.start[key] * math.exp(uj)
        return costs

    def model(self, u: Sequence[float]) -> np.ndarray:
        """Each target's quantity, mean over the seeds, at ``u`` (cached)."""
        key = tuple(round(float(x), 12) for x in u)
        if key not in self.cache:
            self.cache[key] = self._evaluate(self.costs(u))
        return self.cache[key]

    def _evaluate(self, costs: dict[str, float]) -> np.ndarray:
        self.evaluations += 1
        platform = self.write_platform(costs)
        seeds = range(1, self.options.seeds + 1)
        jobs = [
            RunJob(
                scenario,
                (
                    *overrides,
                    f"machine.platform={platform}",
                    f"run.seed={s}",
                    f"run.duration_s={self.options.duration_s}",
                ),
            )
            for scenario, overrides in self.runs
            for s in seeds
        ]
        results = list(self.pool.map(execute, jobs) if self.pool else map(execute, jobs))
        n = len(seeds)
        means = {  # per run: quantity -> mean over its seeds
            run: {
                q: float(np.mean([r[q] for r in results[i * n : (i + 1) * n]]))
                for q in results[i * n]
            }
            for i, run in enumerate(self.runs)
        }
        return np.array([means[(t.scenario, t.overrides)][t.quantity] for t in self.targets])

    def residuals(self, u: Sequence[float]) -> np.ndarray:
        model = self.model(u)
        r = np.array([t.residual(m) for t, m in zip(self.targets, model, strict=True)])
        values = ", ".join(f"{p.name}={self.costs(u)[p.keys[0]]:.4g}" for p in self.parameters)
        self.log(f"  eval {self.evaluations:3d}  ssq {float(r @ r):9.3f}  {values}")
        return r

    def residual_jacobian(self, u: Sequence[float]) -> np.ndarray:
        """d residual / d u by forward differences of :data:`DIFF_STEP`."""
        return self._differences(np.asarray(u, dtype=float), self.residuals)

    def _differences(
        self, u: np.ndarray, function: Callable[[Sequence[float]], np.ndarray]
    ) -> np.ndarray:
        """Forward differences of ``function`` (targets -> values) in each ``u_j``; a step
        that would leave the bounds goes backwards instead."""
        _, hi = self.bounds()
        f0 = function(u)
        out = empty((len(self.targets), len(self.parameters)))
        for j in range(len(self.parameters)):
            step = np.zeros_like(u)
            step[j] = DIFF_STEP if u[j] + DIFF_STEP <= hi[j] else -DIFF_STEP
            out[:, j] = (function(u + step) - f0) / step[j]
        return out

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on ``u`` from each parameter's bounds on its first key."""
        lo = [math.log(p.lo / self.start[p.keys[0]]) for p in self.parameters]
        hi = [math.log(p.hi / self.start[p.keys[0]]) for p in self.parameters]
        return np.array(lo), np.array(hi)

    def fit(self, max_evaluations: int = 200, xtol: float = 2e-3) -> FitReport:
        """Least squares from the start (stops when a step changes no log-parameter by more
        than about ``xtol``); the report at the solution."""
        lo, hi = self.bounds()
        u0 = np.clip(np.zeros(len(self.parameters)), lo + 1e-9, hi - 1e-9)
        result = least_squares(
            self.residuals,
            u0,
            bounds=(lo, hi),
            method="trf",
            jac=self.residual_jacobian,
            x_scale=1.0,
            xtol=xtol,
            ftol=1e-8,
            max_nfev=max_evaluations,
        )
        bounded = tuple(
            p.name
            for p, x, a, b in zip(self.parameters, result.x, lo, hi, strict=True)
            if x <= a + 1e-6 or x >= b - 1e-6
        )
        return self.report(result.x, result.message, bounded)

    def report(
        self, u: np.ndarray | None = None, message: str = "", bounded: tuple[str, ...] = ()
    ) -> FitReport:
        """The report at ``u`` (default: the start), with the model's Jacobian by forward
        differences (one evaluation per parameter)."""
        u = np.zeros(len(self.parameters)) if u is None else np.asarray(u, dtype=float)
        r0 = self.residuals(u)
        m0 = self.model(u)
        jacobian = self._differences(u, self.model)
        costs = self.costs(u)
        return FitReport(
            self.parameters,
            {k: round(costs[k], 4) for p in self.parameters for k in p.keys},
            self.targets,
            m0,
            r0,
            jacobian,
            self.evaluations,
            message,
            bounded,
        )

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def __enter__(self) -> JointFit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


BuildFit = Callable[[FitOptions, Callable[[str], None], PlatformFiles], "JointFit"]
"""A calibration's fit on trial platform files: ``build(options, log, files) -> JointFit``."""


def report_at_start(
    platform: Path, build: BuildFit, options: FitOptions, log: Callable[[str], None]
) -> FitReport:
    """The identifiability report at the fit's starting point (trial files of ``platform``)."""
    with PlatformFiles(platform) as files, build(options, log, files) as joint:
        return joint.report()


def fit_and_log(
    platform: Path,
    build: BuildFit,
    options: FitOptions,
    log: Callable[[str], None],
    **fit_arguments: float,
) -> FitReport:
    """The least-squares fit (:meth:`JointFit.fit` with ``fit_arguments``); logs its report."""
    with PlatformFiles(platform) as files, build(options, log, files) as joint:
        result = joint.fit(**fit_arguments)
    log(result.format())
    return result
