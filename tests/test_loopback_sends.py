"""Two cost rules of the real server on one machine: replies that wake a sleeping receiver
(``net_send_wake`` x ``clients.receiver_idle_share``, once per frame with replies) and world
physics charged per player (``world_counts_map_entities = false``).

Exact timelines: every frame's end against its start, packets and replies by hand, both
engines; the world computations' lengths; the fit of the sends recovers known numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsrv.core.errors import InputError
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.simulation import build_map, simulate
from simsrv.testbed.frames import send_wake_fit
from tests.platform_files import platform_with

SCENARIO = "scenarios/testbed/mvdsv-dm1.toml"
FIXED_US, RECV_US, EXECUTE_US, SEND_US, WAKE_US = 5.0, 3.0, 17.0, 11.0, 23.0
WORLD_BASE_US, WORLD_ENTITY_US = 7.0, 0.5


def _platform(tmp_path: Path, name: str, counts_map: bool) -> str:
    fields = {
        "wakeup_latency_us": 2.0, "cold_start_us": 0, "cold_refill_us": 0,
        "world_counts_map_entities": counts_map,
    }  # fmt: skip
    return platform_with(tmp_path, name, fields, drop=("wakeup_latency_quantiles_us",))


def _scenario(tmp_path, name, idle=0.0, counts_map=False, extra=()):
    costs = {
        "frame_overhead": FIXED_US, "world_base": WORLD_BASE_US,
        "world_per_entity": WORLD_ENTITY_US, "net_recv_per_message": RECV_US,
        "request_per_message": EXECUTE_US, "request_per_command": 0.0,
        "request_per_range_entity": 0.0, "reply_per_client": 0.0,
        "reply_per_visible_entity": 0.0, "reply_per_pvs_room": 0.0, "reply_per_scanned_entity": 0.0,
        "net_send_per_reply": SEND_US, "net_send_wake": WAKE_US,
    }  # fmt: skip
    sets = [
        "run.duration_s=0.3", "run.warmup_s=0.1", "players.count=12", "clients.hosts=3",
        "clients.jitter_s=0.0", "clients.host_burst_s=0.0001", "server.read_until_empty=false",
        f"clients.receiver_idle_share={idle}", _platform(tmp_path, name, counts_map),
        *(f"machine.costs.{k}={v}" for k, v in costs.items()), *extra,
    ]  # fmt: skip
    return load_scenario(SCENARIO, sets)


def _frames(scenario):
    out = simulate(scenario, keep_frames=KEEP_ALL)
    return out.frames, out


@pytest.mark.parametrize("idle", [0.0, 0.25, 1.0])
def test_a_frame_with_replies_wakes_their_receiver_once(tmp_path, idle):
    frames, _ = _frames(_scenario(tmp_path, f"i{idle}", idle))
    players = 12
    world = WORLD_BASE_US + WORLD_ENTITY_US * players
    expected = (
        FIXED_US
        + frames["physics"] * world
        + frames["messages"] * (RECV_US + EXECUTE_US)
        + frames["replies"] * SEND_US
        + (frames["replies"] > 0) * WAKE_US * idle
    ) * 1e-6
    assert (
        len(frames) > 20 and (frames["replies"] > 1).any() and (frames["replies"] == 0).sum() == 0
    )
    np.testing.assert_allclose(frames["duration_s"], expected, rtol=0, atol=1e-12)


def test_both_engines_charge_the_wake_up_alike(tmp_path):
    fast, _ = _frames(_scenario(tmp_path, "fast", 0.6))
    slow, _ = _frames(_scenario(tmp_path, "slow", 0.6, extra=('machine.engine="simpy"',)))
    pd.testing.assert_frame_equal(fast, slow)


def test_the_wake_up_is_in_the_send_activity(tmp_path):
    scenario = _scenario(tmp_path, "trace", 1.0)
    out = simulate(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    trace, frames = out.trace, out.frames
    sends = trace[trace["activity"] == "net_send"].set_index("frame")
    lengths = (sends["end_s"] - sends["start_s"]) * 1e6
    expected = frames["replies"] * SEND_US + WAKE_US
    assert len(lengths) > 20
    np.testing.assert_allclose(lengths, expected.loc[lengths.index], atol=1e-6)


@pytest.mark.parametrize("counts_map", [False, True])
def test_world_physics_charges_the_players_or_the_map_too(tmp_path, counts_map):
    scenario = _scenario(tmp_path, f"w{counts_map}", counts_map=counts_map)
    out = simulate(scenario, keep_trace=KEEP_ALL)
    world = out.trace[out.trace["activity"] == "world"]
    map_entities = len(build_map(scenario, run_streams(scenario.run)).entities)
    assert map_entities > 0
    entities = 12 + (map_entities if counts_map else 0)
    lengths = (world["end_s"] - world["start_s"]).to_numpy() * 1e6
    assert len(lengths) > 3
    np.testing.assert_allclose(lengths, WORLD_BASE_US + WORLD_ENTITY_US * entities, atol=1e-6)


def test_the_idle_share_is_a_probability():
    with pytest.raises(InputError, match="clients.receiver_idle_share") as error:
        load_scenario(None, ["clients.receiver_idle_share=1.5"])
    assert "\n" not in str(error.value)


def test_the_sends_fit_recovers_the_cost_per_reply_and_the_wake_up():
    rng = np.random.default_rng(3)
    runs = []
    for idle in (0.1, 0.5, 0.9):
        replies = rng.integers(1, 6, 4000)
        woke = rng.random(4000) < idle  # the receiver slept: the frame's first send wakes it
        send = 2.5 * replies + 18.0 * woke + rng.normal(0.0, 0.5, 4000)
        frames = pd.DataFrame({"measured": True, "replies": replies, "send_syscall_us": send})
        runs.append((frames, idle))
    fit = send_wake_fit(runs)
    assert fit["per_reply_us"] == pytest.approx(2.5, abs=0.1)
    assert fit["wake_us"] == pytest.approx(18.0, abs=0.5)
    with pytest.raises(ValueError, match="different shares"):
        send_wake_fit([(runs[0][0], 0.5), (runs[1][0], 0.5)])


def _frames_table(rng, n, gap_us, warm, cold, refill_in_frame=0.5):
    """Synthetic frame records: one packet and one reply each, after ``gap_us`` of idleness,
    with the warm stage costs plus a cold start (wake, refill, decay) split between the
    per-frame work (the wake-up and ``refill_in_frame`` of the refill) and the execution."""
    from simsrv.testbed.frames import frames_cold_us

    wake, refill, decay = cold
    total = frames_cold_us(gap_us, wake, refill, decay)
    refill_part = np.where(total > 0, total - wake, 0.0)
    frame_cold = np.where(total > 0, wake, 0.0) + refill_in_frame * refill_part
    noise = rng.normal(0.0, 0.3, (3, n))
    wall_us = np.full(n, 50.0)
    start = np.cumsum(gap_us + wall_us) * 1e-6
    return pd.DataFrame(
        {
            "start_s": start,
            "wall_us": wall_us,
            "measured": True,
            "physics_ran": 0,
            "packets": 1,
            "connectionless": 0,
            "replies": 1,
            "other_us": warm[0] / 2 + frame_cold + noise[0],
            "select_us": np.full(n, warm[0] / 2),
            "recv_syscall_us": warm[1] + noise[1],
            "execute_us": warm[2] + (1 - refill_in_frame) * refill_part + noise[2],
            "send_syscall_us": np.full(n, 3.0),
        }
    )


def test_the_cold_start_fit_recovers_the_warm_costs_the_cold_start_and_its_split():
    from simsrv.testbed.frames import cold_start_fit, warm_costs

    rng = np.random.default_rng(5)
    warm, cold = (4.0, 1.5, 7.0), (10.0, 45.0, 2000.0)
    crowd = _frames_table(rng, 3000, np.full(3000, 1.0), warm, cold)  # back to back
    idle = _frames_table(rng, 3000, rng.exponential(1500.0, 3000) + 6.0, warm, cold)
    measured = warm_costs([crowd, idle])
    assert measured["frame_us"] == pytest.approx(4.0, abs=0.05)
    assert measured["recv_us"] == pytest.approx(1.5, abs=0.05)
    assert measured["execute_us"] == pytest.approx(7.0, abs=0.05)
    fit = cold_start_fit([crowd, idle], measured)
    assert fit["wake_us"] == pytest.approx(10.0, abs=0.5)
    assert fit["refill_us"] == pytest.approx(45.0, rel=0.05)
    assert fit["decay_us"] == pytest.approx(2000.0, rel=0.1)
    assert fit["refill_frame_share"] == pytest.approx(0.5, abs=0.02)
