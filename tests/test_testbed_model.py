"""How a testbed condition is described to the model, and campaign files (no server)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from simsrv.errors import InputError
from simsrv.testbed.build import SharedFolder
from simsrv.testbed.campaign import load_campaign, standard_campaign
from simsrv.testbed.clients import PhasePattern
from simsrv.testbed.model import config_from_row, phase_overrides, scenario_overrides
from simsrv.testbed.run import TestbedConfig


def test_independent_phases_are_hosts_zero_with_the_measured_lateness_as_jitter():
    config = TestbedConfig(clients=16, rate_hz=77.0, phases="independent")
    assert phase_overrides(config, burst_width_ms=0.0, send_lateness_ms=0.1) == [
        "clients.jitter_s=0.0002", "clients.hosts=0", "clients.host_burst_s=0"]


def test_step_is_one_host_whose_burst_spans_the_measured_width():
    config = TestbedConfig(clients=8, rate_hz=77.0, phases="step")
    out = phase_overrides(config, burst_width_ms=0.7, send_lateness_ms=0.0)
    # 8 slots over host_burst_s: the last is 7/8 of it after the first = 0.7 ms
    assert out == ["clients.jitter_s=0.0", "clients.hosts=1", f"clients.host_burst_s={0.0008!r}"]


def test_hosts_pattern_and_a_burst_wider_than_a_period_is_capped():
    config = TestbedConfig(clients=32, rate_hz=77.0, phases="hosts:4")
    out = phase_overrides(config, burst_width_ms=500.0, send_lateness_ms=100.0)
    assert out[1] == "clients.hosts=4"
    assert out[2] == f"clients.host_burst_s={1 / 77.0!r}"
    assert out[0] == f"clients.jitter_s={0.5 / 77.0!r}"


def test_a_quota_becomes_background_load_and_the_map_file_is_the_shared_one(tmp_path):
    shared = SharedFolder(tmp_path)
    config = TestbedConfig(clients=12, map="dm3", quota_us=1000, period_us=20_000,
                           duration_s=10.0, warmup_s=2.0)
    out = scenario_overrides(config, shared, seed=3, platform="p.toml")
    assert "machine.background=[0.95]" in out
    assert f"map.file={tmp_path}/maps/quake-gpl/dm3.bsp.gz" in out
    assert {"players.count=12", "run.seed=3", "machine.platform=p.toml",
            "run.duration_s=10.0", "run.warmup_s=2.0"} <= set(out)


def test_scenario_overrides_load_into_a_valid_scenario(tmp_path):
    from simsrv.scenario.load import load_scenario
    from simsrv.testbed.model import SCENARIO

    shared = SharedFolder(tmp_path)
    bsp = shared.map_file("dm1")
    bsp.parent.mkdir(parents=True)
    bsp.write_bytes(b"")  # the path is checked when the map is built, not when loaded
    config = TestbedConfig(clients=32, phases="hosts:4", quota_us=2000, period_us=20_000)
    scenario = load_scenario(str(SCENARIO), scenario_overrides(
        config, shared, seed=1, platform="this-machine-mvdsv", burst_width_ms=0.4,
        send_lateness_ms=0.2))
    assert scenario.players.count == 32 and scenario.clients.hosts == 4
    assert scenario.machine.cpus == 1 and scenario.server.strategy == "sequential"
    assert scenario.machine.background == [pytest.approx(0.9)]


def test_config_round_trips_through_a_campaign_row():
    config = TestbedConfig(clients=24, map="dm2", phases="step", quota_us=1000,
                           period_us=20_000)
    row = {f"config.{k}": v for k, v in config.__dict__.items()}
    assert config_from_row(row) == config
    row["config.quota_us"] = float("nan")
    assert config_from_row(row).quota_us is None


def test_phase_pattern_parsing():
    assert PhasePattern.parse("hosts:4") == PhasePattern("hosts", 4)
    assert PhasePattern.parse("step").label() == "step"
    for bad in ("hosts", "hosts:0", "step:2", "random"):
        with pytest.raises(InputError, match="--phases"):
            PhasePattern.parse(bad)


def test_standard_campaign_calibrates_on_two_runs_and_predicts_the_rest():
    campaign = standard_campaign()
    roles = [c.role for c in campaign.conditions]
    assert roles.count("calibration") == 2
    labels = [c.config.label for c in campaign.conditions]
    assert len(set(labels)) == len(labels)
    assert {c.config.map for c in campaign.conditions} == {f"dm{i}" for i in range(1, 7)}
    assert campaign.capacity is not None and campaign.capacity.base.quota_us == 1000


def test_campaign_file_errors_name_the_field(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\nclients = 4\nrole = "calibration"\n[[run]]\nclients = 8\n')
    campaign = load_campaign(path)
    assert [c.role for c in campaign.conditions] == ["calibration", "prediction"]
    path.write_text("[[run]]\nclient = 4\n")
    with pytest.raises(InputError, match="unknown field 'client'"):
        load_campaign(path)
    path.write_text('[[run]]\nrole = "fit"\n')
    with pytest.raises(InputError, match="role must be one of calibration, prediction"):
        load_campaign(path)
    path.write_text("[[run]]\nclients = 99\n")
    with pytest.raises(InputError, match="--clients must be in"):
        load_campaign(path)
    with pytest.raises(InputError, match="'standard' or a TOML file"):
        load_campaign(tmp_path / "missing.toml")


def test_campaign_resumes_without_measuring_again(tmp_path, monkeypatch):
    import simsrv.testbed.campaign as campaign_module
    from simsrv.testbed.campaign import Campaign, Condition, run_campaign

    calls = []

    class Fake:
        def __init__(self, config):
            self.summary = {"label": config.label, "config": config.__dict__,
                            "reply_ratio": 1.0, "frames_per_s": 10.0}

        def write(self, out):
            out.mkdir(parents=True, exist_ok=True)
            import json

            (out / "summary.json").write_text(json.dumps(self.summary))

    def fake_run(config, shared_root=None):
        calls.append(config.label)
        if config.clients == 3:
            raise RuntimeError("the server exited during the run (code 1): ERROR: overflow")
        return Fake(config)

    monkeypatch.setattr(campaign_module, "run_testbed", fake_run)
    campaign = Campaign(tuple(Condition(TestbedConfig(clients=n)) for n in (2, 3, 4)))
    table = run_campaign(campaign, tmp_path, log=lambda line: None)
    assert len(table) == 2 and len(calls) == 3
    assert "overflow" in (tmp_path / "runs" / TestbedConfig(clients=3).label / "error.txt"
                          ).read_text()
    table = run_campaign(campaign, tmp_path, log=lambda line: None)
    assert len(calls) == 4  # only the failed condition is tried again
    assert sorted(table["config.clients"]) == [2, 4]


def test_calibrate_without_data_is_one_line():
    out = subprocess.run([sys.executable, "-m", "simsrv", "calibrate", "this-machine-mvdsv"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "simsrv: error: calibrate this-machine-mvdsv needs --data DIR: a campaign measured by "
        "simsrv testbed --campaign standard --out DIR"]
