"""The joint least-squares calibration (:mod:`simsrv.calibration.joint`).

Recovery: targets made with the model itself at known costs are fitted from a start 25 %
away, and the fit must return the known costs within 2 % (common random numbers make the
model a deterministic function of the costs).  Identifiability: the committed Cordeiro
platform's fitted parameters are each pinned by some target.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from simsrv.calibration import cordeiro2007
from simsrv.calibration.fitting import FitOptions
from simsrv.calibration.joint import PIN_FLOOR, FitParameter, JointFit, Target
from simsrv.calibration.platform_file import PlatformFiles
from simsrv.validation.reference import SCENARIO_DIR

SEQUENTIAL = str(SCENARIO_DIR / "cordeiro2007/sequential.toml")
BWCONTROL = str(SCENARIO_DIR / "cordeiro2007/sequential-bwcontrol.toml")
SHORT = ("run.warmup_s=0.2",)
PARAMETERS = (
    FitParameter("frame_overhead", ("frame_overhead",), 1.0, 5000.0),
    FitParameter("request_per_message", ("request_per_message",), 1.0, 5000.0),
    FitParameter("reply_per_client", ("reply_per_client",), 0.1, 5000.0),
)
KNOWN = {"frame_overhead": 80.0, "request_per_message": 50.0, "reply_per_client": 40.0}
QUANTITIES = (
    (SEQUENTIAL, "frames_per_s"),
    (BWCONTROL, "frames_per_s"),
    (SEQUENTIAL, "request_reply_share"),
    (SEQUENTIAL, "network_share"),
)
OPTIONS = FitOptions(seeds=2, duration_s=2.0, workers=2)


def _fit(start: dict[str, float], targets, files) -> JointFit:
    return JointFit(PARAMETERS, targets, start, files, OPTIONS, lambda line: None)


def test_joint_fit_recovers_known_costs_from_targets_made_by_the_model():
    with PlatformFiles(cordeiro2007.PLATFORM) as files:
        truth = {**cordeiro2007.committed_values(), **KNOWN}
        probe = [Target(f"t{i}", s, SHORT, q, 1.0, 1.0) for i, (s, q) in enumerate(QUANTITIES)]
        with _fit(truth, probe, files) as joint:
            values = joint.model(np.zeros(len(PARAMETERS)))
        targets = [replace(t, value=v, scale=0.001 * v) for t, v in zip(probe, values, strict=True)]
        start = {**truth, **{k: v * 1.25 for k, v in KNOWN.items()}}
        start["reply_per_client"] = KNOWN["reply_per_client"] * 0.75
        with _fit(start, targets, files) as joint:
            report = joint.fit(max_evaluations=80, xtol=1e-4)
    for key, value in KNOWN.items():
        assert report.values[key] == pytest.approx(value, rel=0.02), report.format()
    assert float(report.residuals @ report.residuals) < 1.0  # within 0.1 % of each target
    assert not report.unpinned
    assert math.isfinite(report.condition_number)


def test_a_bound_that_holds_has_no_residual_and_one_that_fails_counts_its_excess():
    bound = Target("world", SEQUENTIAL, (), "world_share", 0.05, 0.005, "at_most")
    assert bound.residual(0.02) == 0.0
    assert bound.residual(0.06) == pytest.approx(2.0)
    at_least = replace(bound, relation="at_least")
    assert at_least.residual(0.06) == 0.0 and at_least.residual(0.04) == pytest.approx(-2.0)


def test_a_parameter_no_target_sees_is_flagged_unpinned():
    # the sequential server never forks: no sequential target can pin the fork cost
    parameters = (*PARAMETERS[:1], FitParameter("fork", ("fork",), 1.0, 1e5))
    targets = [Target("fps", SEQUENTIAL, SHORT, "frames_per_s", 2000.0, 60.0)]
    start = cordeiro2007.committed_values()
    with (
        PlatformFiles(cordeiro2007.PLATFORM) as files,
        JointFit(parameters, targets, start, files, OPTIONS, print) as fit,
    ):
        report = fit.report()
    assert report.unpinned == ["fork"]
    assert report.pin_strength[0] >= PIN_FLOOR
    assert "NOT PINNED" in report.format()


def test_a_relative_target_is_a_log_residual_that_matches_the_plain_one_near_the_value():
    rate = Target("fps", SEQUENTIAL, (), "frames_per_s", 400.0, 24.0, relative=True)
    assert rate.residual(400.0 * 1.001) == pytest.approx(0.001 * 400.0 / 24.0, rel=1e-3)
    assert rate.residual(4000.0) == pytest.approx(math.log(10.0) / 0.06)  # not (4000-400)/24
    assert rate.residual(0.0) < 0  # a run with no frames is far below, not an error


@pytest.mark.parametrize("platform", ["cordeiro2007-xeon", "abdelkhalek2004-xeon-ht"])
def test_every_parameter_of_the_committed_fits_is_pinned_by_its_targets(platform):
    # the identifiability guard: a fitted parameter whose pin strength ||dr/dlog x|| falls
    # below PIN_FLOOR (doubling it moves no target by ~0.7 of a tolerance) is not fitted
    from simsrv.calibration import CALIBRATORS

    options = FitOptions(seeds=1, duration_s=1.5, workers=2)
    report = CALIBRATORS.get(platform, "PLATFORM").report(options, lambda line: None)
    assert report.unpinned == [], report.format()
    assert min(report.pin_strength) >= PIN_FLOOR
