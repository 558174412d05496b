"""Reading until the socket is empty (``server.read_until_empty``, mvdsv's ``SV_ReadPackets``):
a packet that arrives while the frame reads the ones before it joins the frame.

The exact timeline: every frame's start, packets and end against a hand-written reference of
the rule on the stream's own arrivals, with the cold start, a frame limit and both socket
paths; the reference engine gives the same frames; refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from simsrv.core.errors import InputError
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.simulation import build_world, simulate
from simsrv.workload.clients import ClientStream
from tests.platform_files import platform_with

SCENARIO = "scenarios/testbed/mvdsv-dm1.toml"
WAKE_US, FIXED_US, RECV_US, EXECUTE_US, SEND_US = 7.0, 5.0, 3.0, 17.0, 11.0
"""The costs of the timeline (us): wake-up latency, fixed frame work, receive call, execution,
send call (everything else 0)."""


def _platform(tmp_path: Path, cold: tuple[float, float, float], name: str) -> str:
    fields = {
        "wakeup_latency_us": WAKE_US, "cold_start_us": cold[0], "cold_refill_us": cold[1],
        "cold_decay_us": cold[2],
    }  # fmt: skip
    return platform_with(tmp_path, name, fields, drop=("wakeup_latency_quantiles_us",))


def _scenario(tmp_path: Path, cold=(0.0, 0.0, 1.0), name="p", extra=()):
    costs = {
        "frame_overhead": FIXED_US, "world_base": 0.0, "world_per_entity": 0.0,
        "net_recv_per_message": RECV_US, "request_per_message": EXECUTE_US,
        "request_per_command": 0.0, "request_per_range_entity": 0.0, "reply_per_client": 0.0,
        "reply_per_visible_entity": 0.0, "reply_per_pvs_room": 0.0, "reply_per_scanned_entity": 0.0,
        "net_send_per_reply": SEND_US,
    }  # fmt: skip
    sets = [
        "run.duration_s=0.3", "run.warmup_s=0.1", "players.count=12", "clients.hosts=3",
        "clients.jitter_s=0.0", "clients.host_burst_s=0.0001", "server.read_until_empty=true",
        _platform(tmp_path, cold, name), *(f"machine.costs.{k}={v}" for k, v in costs.items()),
        *extra,
    ]  # fmt: skip
    return load_scenario(SCENARIO, sets)


def _arrivals(scenario) -> tuple[np.ndarray, np.ndarray]:
    """The stream's packets (arrival s, client) to the run's end, as the run draws them."""
    rng = run_streams(scenario.run)
    world = build_world(scenario, rng)
    stop = scenario.run.warmup_s + scenario.run.duration_s
    stream = ClientStream(scenario.clients, world, rng["clients"], (scenario.run.warmup_s, stop))
    packets = stream.release_until(stop + 0.05)
    return packets["arrival_s"], packets["client"]


def _reference(arrivals, clients, cold, limit, stop):
    """The rule by hand: (start, packets, end) of each frame starting before ``stop``, s."""

    def cold_s(idle_s):
        wake, refill, decay = cold
        if idle_s <= 0.0 or (wake == 0.0 and refill == 0.0):
            return 0.0
        return (wake + refill * -math.expm1(-idle_s * 1e6 / decay)) * 1e-6

    frames, i, now, last_end = [], 0, -1.0, 0.0
    while i < len(arrivals) and now < stop:
        if arrivals[i] > now:  # the socket is empty: asleep until a packet wakes it
            now = arrivals[i] + WAKE_US * 1e-6
        t = now + cold_s(now - last_end) + FIXED_US * 1e-6
        n = 0  # every queued packet, then each one that arrived by its turn
        while n < limit and i + n < len(arrivals) and arrivals[i + n] <= t:
            t += (RECV_US + EXECUTE_US) * 1e-6
            n += 1
        replies = len(set(clients[i : i + n].tolist()))
        end = t + replies * SEND_US * 1e-6
        frames.append((now, n, end))
        i += n
        now = last_end = end
    return [f for f in frames if f[0] < stop]


def _frames(scenario):
    out = simulate(scenario, keep_frames=KEEP_ALL)
    stop = scenario.run.warmup_s + scenario.run.duration_s
    frames = out.frames[out.frames.start_s < stop]
    return list(zip(frames.start_s, frames.messages, frames.end_s, strict=True))


@pytest.mark.parametrize(
    ("cold", "limit", "socket"),
    [
        ((0.0, 0.0, 1.0), 100_000, 256),
        ((9.0, 30.0, 500.0), 100_000, 256),
        ((9.0, 30.0, 500.0), 3, 256),
        ((9.0, 30.0, 500.0), 100_000, 0),  # the stream's compiled release (unbounded socket)
    ],
)
def test_every_frame_reads_the_queued_packets_and_each_that_arrives_by_its_turn(
    tmp_path, cold, limit, socket
):
    name = f"c{cold[0]:g}-{limit}-{socket}"
    extra = (f"server.max_messages_per_frame={limit}", f"clients.socket_buffer_messages={socket}")
    scenario = _scenario(tmp_path, cold, name, extra)
    arrivals, clients = _arrivals(scenario)
    stop = scenario.run.warmup_s + scenario.run.duration_s
    expected = _reference(arrivals, clients, cold, limit, stop)
    got = _frames(scenario)
    assert len(got) == len(expected) > 20
    for (start, n, end), (e_start, e_n, e_end) in zip(got, expected, strict=True):
        assert n == e_n
        assert start == pytest.approx(e_start, abs=1e-9)
        assert end == pytest.approx(e_end, abs=1e-9)
    # a host's 4 packets are 25 us apart and a packet takes 20 us: the frame its first
    # wakes reads the next ones as they arrive, as long as the clock keeps ahead of them
    assert max(n for _, n, _ in got) == min(limit, 4 if cold[0] else 3)


def test_without_the_rule_a_frame_reads_only_what_was_queued_when_it_started(tmp_path):
    on = _frames(_scenario(tmp_path, name="on", extra=("clients.host_burst_s=0.00001",)))
    off = _frames(
        _scenario(
            tmp_path,
            name="off",
            extra=("clients.host_burst_s=0.00001", "server.read_until_empty=false"),
        )
    )
    # 4 packets 10 us wide: the frame that the first wakes reads all four with the rule
    assert np.mean([n for _, n, _ in on]) == pytest.approx(4.0, abs=0.05)
    assert np.mean([n for _, n, _ in off]) < 3.0


def test_both_engines_give_the_same_frames(tmp_path):
    fast = _frames(_scenario(tmp_path, (9.0, 30.0, 500.0), "fast"))
    slow = _frames(_scenario(tmp_path, (9.0, 30.0, 500.0), "slow", ('machine.engine="simpy"',)))
    assert fast == slow


@pytest.mark.parametrize(
    "sets",
    [
        ['server.strategy="abdelkhalek"'],
        ["server.read_until_empty=1"],
    ],
)
def test_the_rule_is_refused_off_a_sequential_server_in_one_line(sets):
    with pytest.raises(InputError, match="read_until_empty") as error:
        load_scenario(SCENARIO, ["server.read_until_empty=true", *sets])
    assert "\n" not in str(error.value)
