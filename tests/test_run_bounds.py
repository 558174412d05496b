"""Runs that must stay bounded in time and memory whatever the input."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from simsrv.platforms.profile import load_platform
from simsrv.world import proximity
from simsrv.world.cell_list import count_pairs
from simsrv.world.proximity import neighbour_lists

ROOT = Path(__file__).resolve().parents[1]


def test_a_frame_that_outlasts_the_run_does_not_stretch_the_accounting():
    """A one-second cost per packet makes the only frame last ~160 simulated s; the end-of-run
    accounting stops one measured window after the run instead of generating every packet up
    to the frame's end, and still balances."""
    scenario = load_scenario(
        None,
        ["machine.costs.request_per_message=1e6", "run.duration_s=0.2", "run.warmup_s=1.5"],
    )
    start = time.perf_counter()
    out = simulate(scenario)
    elapsed = time.perf_counter() - start
    assert out.end_s > 100  # the frame really outlasts the run
    acc = out.accounting
    assert acc["sent"] == (
        acc["lost"] + acc["in_flight"] + acc["dropped"] + acc["processed"] + acc["queued"]
    )
    # packets sent up to 1.7 s + 0.2 s: 160 clients x 31.25/s x 1.9 s, plus one tick
    assert acc["sent"] <= 160 * (31.25 * 1.9 + 1)
    assert elapsed < 10


def test_a_normal_run_is_accounted_at_its_last_frame_end(short_scenario):
    out = simulate(short_scenario())
    acc = out.accounting
    assert out.end_s < 0.7 + 0.5
    # every packet sent up to the end of the last frame is counted
    assert acc["sent"] >= int(160 * 31.25 * out.end_s) - 160


@pytest.mark.parametrize("value", ["1e12", "1000000.5"])
def test_costs_above_one_second_per_operation_are_refused(value, capsys):
    code = main(["run", "--set", f"machine.costs.request_per_message={value}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "machine.costs.request_per_message: must be <= 1e+06 microseconds" in err


def test_one_second_of_cpu_is_still_allowed():
    scenario = load_scenario(None, ["machine.costs.request_per_message=1e6"])
    assert scenario.machine.costs["request_per_message"] == 1e6


def test_a_platform_file_with_a_cost_above_one_second_is_refused(tmp_path):
    path = tmp_path / "slow.toml"
    path.write_text('name = "slow"\n[costs]\nworld_base = 2e6\n')
    with pytest.raises(InputError, match=r"costs\.world_base: Input should be less than or"):
        load_platform(str(path))


def test_a_crowd_too_dense_for_memory_is_refused_naming_players_count(capsys):
    """100,000 players on fork-wait's 2048-unit map: ~2.3e8 pairs in range (~20 GiB of
    neighbour lists) used to end in MemoryError; now a one-line error before the pairs."""
    code = main(
        [
            "run",
            str(ROOT / "scenarios" / "cordeiro2007" / "fork-wait.toml"),
            "--set",
            "players.count=100000",
            "--set",
            "run.duration_s=0.05",
            "--set",
            "run.warmup_s=0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("simsrv: error: players.count: 100000 players")
    assert re.search(r"would need more than \d+\.\d GiB", err)


def test_the_budget_refuses_only_above_the_exact_pair_count(monkeypatch):
    rng = np.random.default_rng(3)
    players = rng.uniform(0, 300, (200, 3))
    entities = rng.uniform(0, 300, (5, 3))
    exact = count_pairs(np.vstack([players, entities]), 128.0)
    monkeypatch.setattr(proximity, "MAX_PAIRS", exact)
    lists = neighbour_lists(players, entities, 256.0)  # exactly at the budget: allowed
    assert lists.counts.sum() > 0
    monkeypatch.setattr(proximity, "MAX_PAIRS", exact - 1)
    with pytest.raises(
        InputError,
        match=rf"players.count: 200 players \(with 5 map entities\) "
        rf"stand in more than {exact - 1:,} pairs",
    ):
        neighbour_lists(players, entities, 256.0)
