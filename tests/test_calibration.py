"""The calibrated Cordeiro platform against the paper's measurements.

The default suite runs a short single-seed check of the final version; the full table (5 seeds
x 10 s, every run) is the ``slow`` study, also printed by
``python -m simsrv.calibration.cordeiro2007 report``.
"""

from __future__ import annotations

import pytest

from simsrv.calibration.cordeiro2007 import GROUP_TARGETS, TARGETS, measure, report


def test_final_version_runs_near_table_1_on_one_short_seed():
    # one seed of 6 s: seed-to-seed spread is ~4 % in frames/s (the 5-seed table is the real
    # check), so the tolerances here are wider than the 10 %
    r = measure("clone-nowait", 1, 6.0)
    assert r["frames_per_s"] == pytest.approx(350.0, rel=0.15)
    assert r["messages_per_frame"] == pytest.approx(11.0, rel=0.15)
    # a prediction, not fitted: all CPUs busy 55.65 % in the paper; the 5-seed mean is 45.6 %
    # and depends on the per-frame / per-packet split the targets barely constrain
    # (docs/calibration.md), so only the band is checked here
    assert r["all_cpus_busy"] == pytest.approx(0.5565, abs=0.15)


KNOWN_MISSES = {
    # the death32c stand-in forms more, smaller groups than death32c (docs/calibration.md);
    # the death32c-like map preset is the maps issue's
    ("fork-wait", "groups.mean_count"),
}


@pytest.mark.slow
def test_calibration_targets_over_five_seeds(tmp_path):
    rows = report(seeds=5, duration=10.0, as_json=str(tmp_path / "report.json"))
    checked = 0
    for row in rows:
        if row["kind"] != "target" or (row["run"], row["metric"]) in KNOWN_MISSES:
            continue
        is_group = row["metric"].startswith("groups.")
        tolerance = 0.20 if is_group else 0.10
        assert abs(row["error"]) <= tolerance, row
        checked += 1
    assert checked >= 2 * len(TARGETS) + 2 * len(GROUP_TARGETS) - len(KNOWN_MISSES)
