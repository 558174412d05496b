"""The primitive benchmark's tables and the wake-up fit the QuakeTM platform takes from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simsrv.calibration.testbed_quaketm import wake_fit
from simsrv.testbed.primitives import summary, tidy


def test_a_run_s_json_becomes_one_row_per_quantity_policy_and_parameter():
    run = {
        "omp_wait_policy": "PASSIVE",
        "cpus": [0, 1],
        "lock_uncontended_ns": 18.0,
        "lock_handoff_ns.1": 20000.0,
        "lock_handoff_ns.1000": 48000.0,
        "fork_wake_ns.100000": 115000.0,
    }
    table = tidy({"passive": run})
    assert len(table) == 4
    handoff = table[table["quantity"] == "lock_handoff_ns"]
    assert sorted(handoff["parameter"]) == [1.0, 1000.0]
    assert table[table["quantity"] == "lock_uncontended_ns"]["parameter"].isna().all()
    repeats = tidy({"passive": run}).assign(repeat=0)
    other = tidy({"passive": {**run, "lock_uncontended_ns": 22.0}}).assign(repeat=1)
    s = summary(pd.concat([repeats, other]))
    row = s[s["quantity"] == "lock_uncontended_ns"].iloc[0]
    assert row["median_ns"] == pytest.approx(20.0) and row["spread_ns"] == pytest.approx(2.0)
    assert row["repeats"] == 2


def test_the_wake_fit_recovers_a_constant_and_a_part_that_grows_with_idleness():
    idle = np.array([0.0, 1.0, 5.0, 50.0, 1000.0, 20_000.0, 100_000.0, 300_000.0])
    wake = 30.0 + 90.0 * (1.0 - np.exp(-idle / 15_000.0))
    constant, grows, decay = wake_fit(idle, wake)
    assert constant == pytest.approx(30.0, rel=1e-3)
    assert grows == pytest.approx(90.0, rel=1e-3)
    assert decay == pytest.approx(15_000.0, rel=1e-3)
