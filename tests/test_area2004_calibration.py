"""The UltraSPARC platform against the report's facts about the sequential server [R §5].

The calibration (``simsrv.calibration.area2004``) fits stage 2 per packet at 32 clients, the
stage-1 share at 32 clients and saturation at 28; these checks run the shipped platform on one
seed, with tolerances for seed-to-seed spread.
"""

from __future__ import annotations

import pytest

from simsrv.calibration.area2004 import measure
from simsrv.capacity import find_capacity
from simsrv.platforms.profile import load_platform

SEQUENTIAL = "scenarios/area2004/sequential.toml"


def test_shipped_platform_reproduces_the_sequential_facts(monkeypatch):
    monkeypatch.setattr("simsrv.calibration.area2004.SEEDS", (1,))
    costs = load_platform("area2004-ultrasparc").costs.model_dump()
    at_32 = measure(costs, 32)
    assert at_32["stage2_us_per_packet"] == pytest.approx(800.0, rel=0.03)  # "almost 0.8 ms"
    assert at_32["stage1"] == pytest.approx(0.05, abs=0.01)  # world ~5 %
    assert 0.25 <= at_32["stage3"] <= 0.40  # "up to 40 %" of a saturated server (29 %)
    assert at_32["reply_ratio"] < 0.95  # overloaded at 32
    at_24 = measure(costs, 24)
    assert at_24["reply_ratio"] > 0.99  # keeps up at 24 ...
    assert 1 - at_24["stage1"] - at_24["stage2"] - at_24["stage3"] > 0.005  # ... with idle left


def test_sequential_capacity_is_24_clients_with_the_report_rule():
    found = find_capacity(SEQUENTIAL, ["run.duration_s=3"], min_reply_ratio=0.95)
    assert found.capacity_clients == 24
    assert [p["clients"] for p in found.points] == [8, 16, 24, 32]
