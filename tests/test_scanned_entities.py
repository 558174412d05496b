"""A reply scans the server's entity list: ``reply_per_scanned_entity`` x S per reply, S =
``server.scanned_entities`` or the world's own count (players + map entities).

Exact timelines against the fold it stands for (the same run with the scan added to
``reply_per_client`` by hand), the default count, both engines; the calibration's reply fit
recovers known costs; a testbed row carries its measured edict count into the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsrv.calibration.testbed_mvdsv import reply_fit
from simsrv.core.errors import InputError
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.simulation import build_map, simulate
from simsrv.platforms.profile import Costs
from simsrv.strategies.costs import with_scanned_entities

SCENARIO = "scenarios/testbed/mvdsv-dm1.toml"
PER_REPLY_US, PER_SCANNED_US = 4.0, 0.03
PLAYERS = 12


def _scenario(per_client_us: float, per_scanned_us: float, extra=()):
    costs = {
        "reply_per_client": per_client_us,
        "reply_per_visible_entity": 0.0,
        "reply_per_scanned_entity": per_scanned_us,
    }
    sets = [
        "run.duration_s=0.3", "run.warmup_s=0.1", f"players.count={PLAYERS}",
        "clients.hosts=3", "clients.jitter_s=0.0", "clients.host_burst_s=0.0001",
        *(f"machine.costs.{k}={v}" for k, v in costs.items()), *extra,
    ]  # fmt: skip
    return load_scenario(SCENARIO, sets)


def _reply_lengths_us(scenario) -> np.ndarray:
    out = simulate(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    replies = out.trace[out.trace["activity"] == "reply"].set_index("frame")
    per_frame = out.frames.set_index("frame")["replies"].loc[replies.index]
    lengths = (replies["end_s"] - replies["start_s"]).to_numpy() * 1e6
    assert len(lengths) > 20
    return lengths / per_frame.to_numpy()


@pytest.mark.parametrize("scanned", [300, 512])
def test_each_reply_pays_the_scan_of_the_given_entity_list(scanned):
    per_reply = _reply_lengths_us(
        _scenario(PER_REPLY_US, PER_SCANNED_US, [f"server.scanned_entities={scanned}"])
    )
    np.testing.assert_allclose(per_reply, PER_REPLY_US + PER_SCANNED_US * scanned, atol=1e-6)


def test_without_a_count_a_reply_scans_the_players_and_the_map():
    scenario = _scenario(PER_REPLY_US, PER_SCANNED_US)
    map_entities = len(build_map(scenario, run_streams(scenario.run)).entities)
    assert map_entities > 0
    per_reply = _reply_lengths_us(scenario)
    expected = PER_REPLY_US + PER_SCANNED_US * (PLAYERS + map_entities)
    np.testing.assert_allclose(per_reply, expected, atol=1e-6)


def test_the_scan_is_the_per_reply_cost_folded_once_on_both_engines():
    scan = _scenario(PER_REPLY_US, PER_SCANNED_US, ["server.scanned_entities=400"])
    folded = _scenario(PER_REPLY_US + PER_SCANNED_US * 400, 0.0)
    a, b = simulate(scan, keep_frames=KEEP_ALL), simulate(folded, keep_frames=KEEP_ALL)
    pd.testing.assert_frame_equal(a.frames, b.frames)
    slow = simulate(
        _scenario(
            PER_REPLY_US,
            PER_SCANNED_US,
            ["server.scanned_entities=400", 'machine.engine="simpy"'],
        ),
        keep_frames=KEEP_ALL,
    )
    pd.testing.assert_frame_equal(a.frames, slow.frames)


def test_a_platform_without_a_scan_cost_keeps_its_costs_unchanged():
    costs = Costs(reply_per_client=2.5)
    assert with_scanned_entities(costs, 10_000) is costs
    scanned = with_scanned_entities(Costs(reply_per_client=2.5, reply_per_scanned_entity=0.5), 4)
    assert scanned.reply_per_client == 4.5


def test_the_count_is_a_whole_non_negative_number_refused_in_one_line():
    for bad in ("-1", "2.5", "true", '"512"'):
        with pytest.raises(InputError, match="server.scanned_entities") as error:
            load_scenario(None, [f"server.scanned_entities={bad}"])
        assert "\n" not in str(error.value)


def test_the_reply_fit_recovers_the_fixed_listed_and_scanned_costs():
    rng = np.random.default_rng(11)
    visible = {"a": 6.0, "b": 14.0, "c": 60.0}
    # three repeats per condition: same listed entities, different edicts scanned
    edicts = {"a": (110, 120, 105), "b": (190, 220, 250), "c": (512, 512, 512)}
    frames = []
    for condition, counts in edicts.items():
        for repeat, scanned in enumerate(counts):
            replies = rng.integers(1, 4, 2000)
            build = replies * (3.0 + 0.05 * visible[condition] + 0.025 * scanned)
            build = build + rng.normal(0.0, 0.2, 2000)
            frames.append(
                pd.DataFrame(
                    {
                        "run": f"{condition}-s{repeat}",
                        "condition": condition,
                        "replies": replies,
                        "build_us": build,
                        "edicts": scanned,
                    }
                )
            )
    fixed, per_visible, per_scanned = reply_fit(pd.concat(frames), visible)
    assert fixed == pytest.approx(3.0, abs=0.05)
    assert per_visible == pytest.approx(0.05, abs=0.002)
    assert per_scanned == pytest.approx(0.025, abs=0.0005)
    # a campaign recorded before the edict count: a line against the listed entities only
    old = pd.concat(frames).drop(columns="edicts")
    assert reply_fit(old, visible)[2] == 0.0


def test_a_testbed_row_carries_its_measured_entity_list_into_the_model():
    from simsrv.testbed.model import row_overrides

    class Shared:
        def map_file(self, name):
            return Path(f"/maps/{name}.bsp")

    row = {
        "label": "dm1-n32-77hz-independent-s1",
        "config.clients": 32, "config.map": "dm1", "config.rate_hz": 77.0,
        "config.phases": "independent", "config.duration_s": 10.0, "config.warmup_s": 2.0,
        "config.seed": 1, "config.period_us": 20000, "config.port": 27500,
        "config.server_cpu": 1, "config.client_cpu": 0, "config.quota_us": float("nan"),
        "edicts_per_reply": 511.6,
    }  # fmt: skip
    sets = row_overrides(row, Shared(), seed=1, platform="this-machine-mvdsv")
    assert "server.scanned_entities=512" in sets
    row["edicts_per_reply"] = float("nan")  # a campaign measured before the count
    sets = row_overrides(row, Shared(), seed=1, platform="this-machine-mvdsv")
    assert not any(s.startswith("server.scanned_entities") for s in sets)


@pytest.mark.parametrize("name", ["sequential", "abdelkhalek", "area-quadrant", "bsp-group"])
def test_every_strategy_charges_the_scan_through_its_per_reply_cost(name):
    from tests.strategy_harness import make_strategy

    positions = np.random.default_rng(2).uniform(0.0, 1000.0, (9, 3))
    strategy = make_strategy(name, positions, {}, 2, {"reply_per_client": 2.0,
                             "reply_per_scanned_entity": 0.25})  # fmt: skip
    entities = strategy.context.world.entity_count
    assert entities >= 9  # the players, and the map's entities if it has any
    assert strategy.cost_vector["reply_per_client"][0] == 2.0 + 0.25 * entities
