"""How a testbed condition is described to the model, and campaign files (no server)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from simsrv.core.errors import InputError
from simsrv.testbed.build import SharedFolder
from simsrv.testbed.campaign import load_campaign, standard_campaign
from simsrv.testbed.clients import PhasePattern
from simsrv.testbed.model import config_from_row, phase_overrides, scenario_overrides
from simsrv.testbed.run import TestbedConfig


def test_independent_phases_are_hosts_zero_with_the_measured_lateness_as_jitter():
    config = TestbedConfig(clients=16, rate_hz=77.0, phases="independent")
    assert phase_overrides(config, burst_width_ms=0.0, send_lateness_ms=0.1) == [
        "clients.jitter_s=0.0002",
        "clients.hosts=0",
        "clients.host_burst_s=0",
    ]


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
    # a burst's lateness moves the whole burst: no jitter between its packets
    assert out[0] == "clients.jitter_s=0.0"
    independent = phase_overrides(
        TestbedConfig(clients=32), burst_width_ms=0.0, send_lateness_ms=100.0
    )
    assert independent[0] == f"clients.jitter_s={0.5 / 77.0!r}"  # capped at half a period


def test_a_quota_becomes_the_machines_cpu_quota_and_the_map_file_is_the_shared_one(tmp_path):
    shared = SharedFolder(tmp_path)
    config = TestbedConfig(
        clients=12, map="dm3", quota_us=1000, period_us=20_000, duration_s=10.0, warmup_s=2.0
    )
    out = scenario_overrides(config, shared, seed=3, platform="p.toml")
    assert {"machine.cpu_quota_us=1000.0", "machine.cpu_period_us=20000.0"} <= set(out)
    assert not any(o.startswith("machine.background") for o in out)
    assert f"map.file={tmp_path}/maps/quake-gpl/dm3.bsp.gz" in out
    assert {
        "players.count=12",
        "run.seed=3",
        "machine.platform=p.toml",
        "run.duration_s=10.0",
        "run.warmup_s=2.0",
    } <= set(out)


def test_scenario_overrides_load_into_a_valid_scenario(tmp_path):
    from simsrv.pipeline.load import load_scenario
    from simsrv.testbed.model import SCENARIO

    shared = SharedFolder(tmp_path)
    bsp = shared.map_file("dm1")
    bsp.parent.mkdir(parents=True)
    bsp.write_bytes(b"")  # the path is checked when the map is built, not when loaded
    config = TestbedConfig(clients=32, phases="hosts:4", quota_us=2000, period_us=20_000)
    scenario = load_scenario(
        str(SCENARIO),
        scenario_overrides(
            config,
            shared,
            seed=1,
            platform="this-machine-mvdsv",
            burst_width_ms=0.4,
            send_lateness_ms=0.2,
        ),
    )
    assert scenario.players.count == 32 and scenario.clients.hosts == 4
    assert scenario.machine.cpus == 1 and scenario.server.strategy == "sequential"
    assert scenario.machine.background == []
    assert (scenario.machine.cpu_quota_us, scenario.machine.cpu_period_us) == (2000.0, 20000.0)


def test_config_round_trips_through_a_campaign_row():
    config = TestbedConfig(clients=24, map="dm2", phases="step", quota_us=1000, period_us=20_000)
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


def test_standard_campaign_repeats_every_condition_up_to_256_clients():
    campaign = standard_campaign()
    labels = [c.config.label for c in campaign.conditions]
    assert len(set(labels)) == len(labels)
    by_seed = {s: [c for c in campaign.conditions if c.config.seed == s] for s in (1, 2, 3)}
    # three passes of the same conditions, each calibrated on dm1 8, 16, 128 and 16 in step
    first = [replace(c.config, seed=0) for c in by_seed[1]]
    assert all([replace(c.config, seed=0) for c in by_seed[s]] == first for s in (2, 3))
    calibration = {
        (c.config.clients, c.config.phases) for c in by_seed[1] if c.role == "calibration"
    }
    assert calibration == {
        (8, "independent"),
        (16, "independent"),
        (128, "independent"),
        (16, "step"),
    }
    assert {c.config.map for c in campaign.conditions} == {f"dm{i}" for i in range(1, 7)}
    assert max(c.config.clients for c in campaign.conditions) == 256
    # per pass: capacity under a 5 % quota (steps of 4) and without one (steps of 8)
    assert len(campaign.capacity) == 6
    names = {s.name for s in campaign.capacity}
    assert names == {"dm1-77hz-independent-q1000", "dm1-125hz-independent-no-quota"}
    steps = {s.name: s.clients[1] - s.clients[0] for s in campaign.capacity}
    assert steps == {"dm1-77hz-independent-q1000": 4, "dm1-125hz-independent-no-quota": 8}


def test_campaign_file_errors_name_the_field(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\nclients = 4\nrole = "calibration"\n[[run]]\nclients = 8\n')
    campaign = load_campaign(path)
    assert [c.role for c in campaign.conditions] == ["calibration", "prediction"]
    path.write_text("[[run]]\nclient = 4\n")
    with pytest.raises(InputError, match=r"run\.0\.client: unknown field; allowed fields: bind"):
        load_campaign(path)
    path.write_text('[[run]]\nrole = "fit"\n')
    with pytest.raises(InputError, match="run.0.role: Input should be 'calibration' or"):
        load_campaign(path)
    path.write_text("[[run]]\nclients = 999\n")
    with pytest.raises(InputError, match=r"run\.0\.clients: Input should be less than or equal"):
        load_campaign(path)
    with pytest.raises(InputError, match="'standard', 'quaketm' or a TOML file"):
        load_campaign(tmp_path / "missing.toml")


def test_campaign_resumes_without_measuring_again(tmp_path, monkeypatch):
    import simsrv.testbed.campaign as campaign_module
    from simsrv.testbed.campaign import Campaign, Condition, run_campaign

    calls = []

    class Fake:
        def __init__(self, config):
            self.config = config
            self.summary = {
                "label": config.label,
                "config": config.__dict__,
                "reply_ratio": 1.0,
                "frames_per_s": 10.0,
            }

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
    assert (
        "overflow" in (tmp_path / "runs" / TestbedConfig(clients=3).label / "error.txt").read_text()
    )
    table = run_campaign(campaign, tmp_path, log=lambda line: None)
    assert len(calls) == 4  # only the failed condition is tried again
    assert sorted(table["config.clients"]) == [2, 4]


def test_calibrate_without_data_is_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "simsrv", "calibrate", "this-machine-mvdsv"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "simsrv: error: calibrate this-machine-mvdsv needs --data DIR: a campaign measured by "
        "simsrv testbed --campaign standard --out DIR"
    ]


def _fake_row(config: TestbedConfig, role: str) -> dict:
    """A campaign row with made-up measurements (the model side is what is tested)."""
    return {
        "label": config.label,
        "role": role,
        "question": "clients",
        "kind": "testbed",
        **{f"config.{k}": v for k, v in config.__dict__.items()},
        "frames_per_s": 300.0,
        "messages_per_frame": 1.02,
        "messages_per_s": 306.0,
        "replies_per_s": 306.0,
        "reply_ratio": 1.0,
        "server_cpu_utilization": 0.05,
        "quota_share": None if config.quota_us is None else config.quota_us / config.period_us,
        "cpu_share.world": 0.03,
        "cpu_share.net_recv": 0.05,
        "cpu_share.request": 0.2,
        "cpu_share.reply": 0.12,
        "cpu_share.net_send": 0.25,
        "cpu_share.frame": 0.35,
        "burst_width_ms": 0.0,
        "send_lateness_ms": 0.1,
        "socket_buffer_packets": 256,
    }


def test_compare_writes_the_table_the_summary_and_the_figure(tmp_path):
    import json

    import pandas as pd

    from simsrv.testbed.build import default_shared_root
    from simsrv.testbed.compare import compare_campaign

    shared = default_shared_root()
    if not (shared / "maps" / "quake-gpl" / "dm1.bsp.gz").is_file():
        pytest.skip(f"no GPL maps under {shared}")
    configs = [
        TestbedConfig(clients=4, duration_s=0.5, warmup_s=0.2),
        TestbedConfig(clients=4, duration_s=0.5, warmup_s=0.2, phases="step"),
        TestbedConfig(clients=4, duration_s=0.5, warmup_s=0.2, quota_us=1000, period_us=20_000),
    ]
    rows = [_fake_row(c, "calibration" if i == 0 else "prediction") for i, c in enumerate(configs)]
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet", index=False)
    base = configs[2]
    (tmp_path / "capacity.json").write_text(
        json.dumps(
            {
                "capacity_clients": 4,
                "min_reply_ratio": 0.95,
                "base": base.__dict__,
                "clients_grid": [4, 8],
                "clients_tried": [4, 8],
            }
        )
    )
    out = tmp_path / "cmp"
    table = compare_campaign(tmp_path, out, seeds=1, workers=1, log=lambda line: None)
    assert len(table) == 3 * 11
    assert set(table["role"]) == {"calibration", "prediction"}
    # relative errors for rates, points for shares, each against its own tolerance
    fps = table[table["quantity"] == "frames/s"].iloc[0]
    assert fps["error"] == pytest.approx((fps["model"] - 300.0) / 300.0)
    share = table[table["quantity"] == "world share"].iloc[0]
    assert share["error"] == pytest.approx(share["model"] - 0.03)
    assert (table["within"] == (table["error"].abs() <= table["tolerance"])).all()
    # the quota run's CPU is the model's busy time at the quota's speed (<= 5 % of a CPU)
    quota = table[(table["quantity"] == "server CPU busy") & table["quota_share"].notna()]
    assert 0 < quota["model"].iloc[0] <= 0.05 + 1e-9
    (capacity,) = json.loads((out / "capacity-compared.json").read_text())
    assert capacity["measured"] == [4] and capacity["model"] in (0, 4, 8)
    assert capacity["within"] == (capacity["model"] in (0, 4, 8)) and capacity["step"] == 4
    summary = (out / "validation-summary.md").read_text()
    assert summary.count("\n| dm1-") == 3
    assert (out / "testbed-vs-model.png").stat().st_size > 10_000
    assert "capacity at 5% of a CPU, 77 Hz" in (out / "validation.md").read_text()


def test_repeats_pool_into_their_condition_with_the_half_range_as_spread():
    import pandas as pd

    from simsrv.testbed.campaign import condition_of, pool_repeats

    rows = []
    for seed, fps in ((1, 300.0), (2, 330.0), (3, 318.0)):
        row = _fake_row(TestbedConfig(clients=8, seed=seed, duration_s=10.0), "calibration")
        rows.append({**row, "frames_per_s": fps})
    rows.append(_fake_row(TestbedConfig(clients=16, seed=1, duration_s=10.0), "prediction"))
    pooled = pool_repeats(pd.DataFrame(rows))
    assert list(pooled["condition"]) == ["dm1-n8-77hz-independent", "dm1-n16-77hz-independent"]
    assert list(pooled["repeats"]) == [3, 1]
    first = pooled.iloc[0]
    assert first["frames_per_s"] == pytest.approx(316.0)
    assert first["spread.frames_per_s"] == pytest.approx(15.0)
    assert first["label"] == "dm1-n8-77hz-independent-s1" and first["config.seed"] == 1
    assert pooled.iloc[1]["spread.frames_per_s"] == 0.0
    assert condition_of("dm1-n32-77hz-hosts:4-q1000-s12") == "dm1-n32-77hz-hosts:4-q1000"


def test_a_tolerance_is_the_repeats_spread_where_that_is_wider():
    import pandas as pd

    from simsrv.testbed.campaign import pool_repeats
    from simsrv.testbed.compare import compare_rows

    rows = []
    for seed, fps, frame_share in ((1, 250.0, 0.30), (2, 350.0, 0.32)):
        row = _fake_row(TestbedConfig(clients=8, seed=seed), "prediction")
        rows.append({**row, "frames_per_s": fps, "cpu_share.frame": frame_share})
    pooled = pool_repeats(pd.DataFrame(rows))
    model = {
        "frames_per_s": 345.0,  # +15 %: beyond +-10 %, within the repeats' +-16.7 %
        "messages_per_frame": 1.02,
        "frame_share": 0.38,  # +7 points: the repeats spread +-1 point, so +-5 holds
    }
    table = compare_rows(pooled, [model]).set_index("quantity")
    fps = table.loc["frames/s"]
    assert fps["spread"] == pytest.approx(50.0 / 300.0)
    assert fps["tolerance"] == pytest.approx(50.0 / 300.0) and fps["tolerance_from_spread"]
    assert fps["within"] and fps["repeats"] == 2
    share = table.loc["per-frame share"]
    assert share["tolerance"] == 0.05 and not share["tolerance_from_spread"]
    assert not share["within"]
    assert table.loc["messages/frame", "within"]


def test_a_run_reused_by_a_capacity_search_is_one_row():
    """The capacity search at 125 Hz reuses the pass's stored 192-client run (same label):
    gathered once, so that pooling counts each measurement once."""
    from simsrv.testbed.campaign import gather, pool_repeats

    def row(label, fps, role="prediction"):
        return {"label": label, "role": role, "frames_per_s": fps, "machine": {"cpu": "x"}}

    rows = [
        row("dm1-n192-125hz-independent-s1", 100.0),
        row("dm1-n192-125hz-independent-s2", 300.0),
        row("dm1-n192-125hz-independent-s1", 100.0, "capacity"),  # the search's reuse
    ]
    table = gather(rows)
    assert list(table["label"]) == [
        "dm1-n192-125hz-independent-s1",
        "dm1-n192-125hz-independent-s2",
    ]
    assert "machine.cpu" not in table
    pooled = pool_repeats(table)
    assert pooled["repeats"].tolist() == [2]
    assert pooled["frames_per_s"].tolist() == [200.0]


def test_the_quaketm_campaign_is_three_passes_of_distinct_valid_conditions():
    from simsrv.testbed.quaketm_campaign import quaketm_campaign

    campaign = load_campaign("quaketm")
    assert campaign == quaketm_campaign()
    labels = [c.config.label for c in campaign.conditions]
    assert len(labels) == 3 * 76 and len(set(labels)) == len(labels)
    calibration = [c for c in campaign.conditions if c.role == "calibration"]
    assert {c.config.server for c in calibration} == {"quaketm-serial"}
    for condition in campaign.conditions:
        condition.config.checked()  # every condition is a valid run
