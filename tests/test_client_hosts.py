"""Host-correlated sending (``clients.hosts``): each client keeps its rate, a host's packets of
a tick leave in one burst, the released order stays the fully sorted one, and a run still
accounts for every packet (also with QuakeWorld respawns on)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from simsrv.pipeline.summary import summarize
from simsrv.scenario.schema import ClientsSection
from simsrv.workload.clients import ClientStream
from simsrv.workload.hosts import host_of, send_phases
from simsrv.workload.messages import sort_by_arrival


def stream(players, hosts, burst_share, rate=31.25, jitter=0.002, seed=1):
    cfg = ClientsSection(
        rate_hz=rate, jitter_s=jitter, hosts=hosts, host_burst_s=burst_share / rate
    )
    s = ClientStream(cfg, SimpleNamespace(players=players), np.random.default_rng(seed))
    s.close()
    return s


@settings(max_examples=60, deadline=None)
@given(
    players=st.integers(1, 200),
    hosts=st.integers(1, 12),
    burst_share=st.sampled_from([0.0, 0.01, 0.25, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_a_hosts_clients_send_within_one_burst_and_hosts_are_near_even(
    players, hosts, burst_share, seed
):
    hosts = min(hosts, players)
    period = 1 / 31.25
    burst = burst_share * period
    phase = send_phases(players, period, hosts, burst, np.random.default_rng(seed))
    assert ((phase >= 0) & (phase < period)).all()
    host = host_of(players, hosts)
    sizes = np.bincount(host, minlength=hosts)
    assert sizes.max() - sizes.min() <= 1 and sizes.min() >= 1
    assert (np.diff(host) >= 0).all()  # contiguous blocks
    for h in range(hosts):
        mine = np.sort(phase[host == h])
        # on the circle of one period, the host's phases fit in an arc of ``burst``: the
        # largest gap between consecutive phases (wrapping) is at least period - burst
        gaps = np.diff(np.concatenate([mine, [mine[0] + period]]))
        assert gaps.max() >= period - burst - 1e-9
        if burst_share == 1.0 and len(mine) > 1:  # round robin: evenly spaced
            np.testing.assert_allclose(gaps, period / len(mine), rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    players=st.integers(1, 96),
    hosts=st.integers(1, 6),
    burst_share=st.sampled_from([0.0, 0.1, 1.0]),
    seconds=st.floats(2.0, 6.0),
    seed=st.integers(0, 2**16),
)
def test_every_client_keeps_its_long_run_rate(players, hosts, burst_share, seconds, seed):
    hosts = min(hosts, players)
    s = stream(players, hosts, burst_share, seed=seed)
    out = s.release_until(seconds)
    per_client = np.bincount(out["client"], minlength=players)
    # one packet per tick each, the packet of tick k leaving in [k, k + 2) periods: by
    # ``seconds`` every client sent floor((seconds - phase - jitter) x rate) + 1 packets,
    # within (seconds x rate - 2, seconds x rate + 1]
    gap = per_client - seconds * 31.25
    assert (gap > -2).all() and (gap <= 1 + 1e-9).all()
    assert s.release_until(seconds + 5).size + out.size > 0


def test_the_packets_of_one_host_arrive_in_bursts():
    players, hosts, rate = 160, 5, 31.25
    burst = 0.002  # 2 ms of the 32 ms period
    s = stream(players, hosts, burst * rate, rate=rate, jitter=0.0005)
    out = s.release_until(4.0)
    host = host_of(players, hosts)[out["client"]]
    # consecutive packets mostly come from the same host (runs of up to 32: one host's tick;
    # two hosts whose random phases nearly coincide interleave)
    same_next = np.mean(host[1:] == host[:-1])
    assert same_next > 0.6
    # each host sends its tick's 32 packets within burst + jitter
    for h in range(hosts):
        mine = out[host == h]
        for tick in np.unique(mine["tick"])[1:-1]:
            t = mine["sent_s"][mine["tick"] == tick]
            spread = (t.max() - t.min()) % (1 / rate)
            assert min(spread, 1 / rate - spread) <= burst + 0.0005 + 1e-9
    # without hosts, consecutive packets come from the same block of 32 only by chance (~1/5)
    free = stream(players, 0, 0.0, rate=rate, jitter=0.0005).release_until(4.0)
    free_host = host_of(players, hosts)[free["client"]]
    assert np.mean(free_host[1:] == free_host[:-1]) < 0.35


def test_released_order_is_the_fully_sorted_one_with_hosts():
    s = stream(40, 3, 0.1, seed=7)
    got = np.concatenate([s.release_until(t) for t in (0.3, 1.1, 2.5)])
    ref = stream(40, 3, 0.1, seed=7)
    everything = sort_by_arrival(
        np.concatenate([ref._tick_messages(tick, None) for tick in range(s.next_tick)])
    )
    assert got.tobytes() == everything[everything["arrival_s"] <= 2.5].tobytes()


def test_hosts_zero_is_the_independent_phase_draw():
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(
        send_phases(50, 0.032, 0, 0.0, rng_a), rng_b.uniform(0.0, 0.032, 50)
    )


RESPAWN = ["players.respawn=true", "players.spawn_select=quake", "players.respawn_wait=button"]


@pytest.mark.parametrize(
    "extra",
    [
        ["clients.hosts=5", "clients.host_burst_s=0.004"],
        RESPAWN,
        ["clients.hosts=5", "clients.host_burst_s=0.004", *RESPAWN, "players.hit_chance=1.0"],
    ],
)
def test_a_run_with_hosts_or_respawns_conserves_messages_and_is_seeded(extra):
    sets = ["run.duration_s=1", "players.count=40", "server.strategy=bsp-group", *extra]
    scenario = load_scenario(None, sets)
    a, b = simulate(scenario, keep_frames=KEEP_ALL), simulate(scenario, keep_frames=KEEP_ALL)
    assert a.checks["message_conservation"] is True
    acc = a.accounting
    assert acc["sent"] == sum(
        acc[k] for k in ("lost", "in_flight", "dropped", "processed", "queued")
    )
    assert acc["sent"] > 0
    pd.testing.assert_frame_equal(a.frames, b.frames)
    groups = summarize(scenario, a)["groups"]
    assert groups["mean_count"] > 0


@pytest.mark.parametrize(
    "sets, field",
    [
        (["clients.hosts=-1"], "clients.hosts"),
        (["players.count=4", "clients.hosts=5"], "clients.hosts"),
        (["clients.host_burst_s=0.04"], "clients.host_burst_s"),
        (["clients.host_burst_s=-0.001"], "clients.host_burst_s"),
        (["clients.hosts=1.5"], "clients.hosts"),
    ],
)
def test_bad_host_settings_are_one_line_errors(sets, field):
    with pytest.raises(InputError, match=f"^{field}: ") as error:
        load_scenario(None, sets)
    assert "\n" not in str(error.value)
