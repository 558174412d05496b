"""The senders study (simsrv.studies.senders): every condition is a valid scenario, and the
host window is the stated share of each scenario's client period."""

from __future__ import annotations

import pytest

from simsrv.core.toml_file import read_toml
from simsrv.pipeline.load import apply_override, build_scenario
from simsrv.studies.senders import CONDITIONS, ROOT, SCENARIOS


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_every_condition_builds_its_scenario(name, condition):
    raw = read_toml(ROOT / "scenarios" / "cordeiro2007" / f"{name}.toml")
    rate = float(raw["clients"]["rate_hz"])
    spec = CONDITIONS[condition]
    for item in spec.overrides(rate):
        apply_override(raw, item)
    scenario = build_scenario(raw)
    clients = scenario.clients
    if spec.burst_periods is None:
        assert clients.host_burst_s == 0.0
    else:
        assert clients.hosts == 5 and scenario.players.count == 160
        assert clients.host_burst_s == pytest.approx(spec.burst_periods / rate)
    assert scenario.players.respawn == ("respawn" in " ".join(spec.sets))
