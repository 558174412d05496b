"""End-to-end behaviour of the frame loop with the sequential server."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv import run
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from simsrv.platforms import load_platform


@settings(max_examples=20, deadline=None)
@given(
    players=st.integers(1, 120),
    rate=st.sampled_from([10.0, 31.25, 72.0]),
    loss=st.sampled_from([0.0, 0.05, 0.3]),
    buffer=st.sampled_from([0, 1, 5, 40]),
    max_messages=st.sampled_from([0, 1, 3]),
    latency=st.sampled_from([0.0, 0.004, 0.05]),
    per_message_us=st.sampled_from([10.0, 400.0, 3000.0]),
    seed=st.integers(0, 1000),
)
def test_every_sent_message_is_accounted_for(
    players, rate, loss, buffer, max_messages, latency, per_message_us, seed
):
    scenario = load_scenario(
        None,
        [
            "run.duration_s=0.4",
            "run.warmup_s=0.1",
            f"run.seed={seed}",
            f"players.count={players}",
            f"clients.rate_hz={rate}",
            "clients.jitter_s=0.001",
            f"clients.packet_loss={loss}",
            f"clients.socket_buffer_messages={buffer}",
            f"server.max_messages_per_frame={max_messages}",
            f"clients.latency_s={latency}",
            f"machine.costs.request_per_message={per_message_us}",
        ],
    )
    acc = simulate(scenario).accounting
    assert acc["sent"] == (
        acc["lost"] + acc["in_flight"] + acc["dropped"] + acc["processed"] + acc["queued"]
    )
    assert acc["sent"] > 0


def test_same_seed_gives_identical_metrics(short_scenario):
    a, b = run(short_scenario()), run(short_scenario())
    strip = lambda r: {k: v for k, v in r.to_json_dict().items() if k != "wall_time_s"}  # noqa: E731
    assert json.dumps(strip(a), sort_keys=True) == json.dumps(strip(b), sort_keys=True)
    c = run(short_scenario("run.seed=2"))
    assert c.summary["frames_per_s"] != a.summary["frames_per_s"]


def test_closed_loop_longer_messages_mean_fewer_longer_frames(short_scenario):
    """A higher per-message cost lengthens frames and raises messages/frame [T §4.4.3]."""
    costs = load_platform(short_scenario().machine.platform).costs
    light = ("run.duration_s=2", "players.count=80")  # well below saturation
    base = run(short_scenario(*light), keep_frames=KEEP_ALL)
    slow = run(
        short_scenario(
            *light,
            f"machine.costs.request_per_message={1.5 * costs.request_per_message}",
            f"machine.costs.reply_per_client={3 * costs.reply_per_client}",
        ),
        keep_frames=KEEP_ALL,
    )
    fb, fs = base.frames, slow.frames
    assert (fs["end_s"] - fs["start_s"]).mean() > (fb["end_s"] - fb["start_s"]).mean()
    assert slow.summary["messages_per_frame"] > base.summary["messages_per_frame"]
    assert slow.summary["frames_per_s"] < base.summary["frames_per_s"]
    # below saturation both serve the whole offered load (80 x 31.25 = 2500 packets/s)
    assert base.summary["messages_per_s"] == pytest.approx(2500, rel=0.02)
    assert slow.summary["messages_per_s"] == pytest.approx(2500, rel=0.02)


def test_sequential_frame_time_is_the_sum_of_its_costs(short_scenario):
    result = run(short_scenario(), keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    scenario, frames, trace = result.scenario, result.frames, result.trace
    costs = load_platform(scenario.machine.platform).costs
    busy = trace.groupby("frame")[["start_s", "end_s"]].agg({"start_s": "min", "end_s": "max"})
    duration_us = (frames["end_s"] - frames["start_s"]) * 1e6
    per_frame_floor = (
        costs.frame_overhead
        + frames["messages"]
        * (costs.net_recv_per_message + costs.request_per_message + costs.request_per_command)
        + frames["replies"] * (costs.reply_per_client + costs.net_send_per_reply)
        + frames["physics"] * (costs.world_base + costs.world_per_entity * 160)
    )
    # the rest is per-entity work (action range, visible set): never negative
    extra = duration_us - per_frame_floor
    assert (extra >= -1e-6).all()
    assert np.allclose(busy["end_s"].to_numpy(), frames["end_s"].to_numpy())
    assert set(trace["cpu"]) == {0}  # one CPU only
    assert result.summary["parallel_fraction"] == 0.0


def test_world_physics_runs_at_most_once_per_mintic(short_scenario):
    frames = run(short_scenario("run.duration_s=1"), keep_frames=KEEP_ALL).frames
    times = frames.loc[frames["physics"], "start_s"].to_numpy()
    assert (np.diff(times) >= 0.03 - 1e-12).all()
    # and it does run: about once per 30 ms of a busy server
    assert len(times) >= 0.8 * (1.2 / 0.03) * 0.9


def test_bandwidth_control_chokes_replies(short_scenario):
    """QuakeWorld's rate limit: ~rate / reply size replies per client per second [T §4.4.2]."""
    free = run(short_scenario("run.duration_s=2"))
    limited = run(short_scenario("run.duration_s=2", "clients.bandwidth_control=true"))
    assert limited.summary["replies_per_s"] < 0.5 * free.summary["replies_per_s"]
    assert limited.summary["choked_per_s"] > 0
    per_client = limited.summary["replies_per_s"] / 160
    # replies of ~60 visible entities x 12 B + 40 B ~ 800 B at 2500 B/s: ~3 to 5 per second
    assert 2.0 < per_client < 8.0


def test_small_socket_buffer_drops_under_overload(short_scenario):
    result = run(
        short_scenario(
            "clients.socket_buffer_messages=20", "machine.costs.request_per_message=2000"
        )
    )
    assert result.summary["dropped_fraction"] > 0.5
    assert result.accounting["dropped"] > 0


def test_lost_packets_replay_their_commands(short_scenario):
    result = run(short_scenario("clients.packet_loss=0.3"), keep_frames=KEEP_ALL)
    commands = result.frames["commands"].sum()
    messages = result.frames["messages"].sum()
    # each delivered packet executes 1 + the lost ones before it (max 3): mean 1/(1-p) ~ 1.4
    assert 1.3 < commands / messages < 1.45


def test_a_closed_stream_sends_the_same_packets_without_the_world(short_scenario):
    """After the server stops, packets for the accounting come from the same draws (send
    times, losses) without advancing the world; only their world state is left empty."""
    from simsrv.pipeline.seeding import spawn_streams
    from simsrv.pipeline.simulation import build_world
    from simsrv.workload.clients import ClientStream

    scenario = short_scenario("clients.packet_loss=0.2", "players.count=40")
    streams = []
    for close in (False, True):
        rng = spawn_streams(7)
        stream = ClientStream(scenario.clients, build_world(scenario, rng), rng["clients"])
        stream.release_until(0.5)
        if close:
            stream.close()
        ticks_before = stream.world.tick
        streams.append((stream, stream.release_until(3.0), ticks_before))
    (open_stream, open_packets, _), (closed, closed_packets, ticks_before) = streams
    for field in ("sent_s", "arrival_s", "client", "tick"):
        np.testing.assert_array_equal(open_packets[field], closed_packets[field])
    assert closed.world.tick == ticks_before < open_stream.world.tick
    assert closed.settle(3.5, True)[:4] == open_stream.settle(3.5, True)[:4]
    after = closed_packets["tick"] >= ticks_before  # generated after the close
    assert after.any() and (closed_packets["range_count"][after] == 0).all()
    assert open_packets["range_count"][after].any()
