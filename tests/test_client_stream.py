"""The client stream releases packets in the order sorting all of them would give, although
each chunk is only merged into the backlog."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.scenario.schema import ClientsSection
from simsrv.workload.clients import CHUNK_MESSAGES, CHUNK_TICKS, ClientStream
from simsrv.workload.messages import EMPTY, sort_by_arrival

WINDOW = (0.5, 2.0)


def closed_stream(players, rate, jitter, latency, loss, seed, same_phase):
    """A stream that generates packets without a world (closed), as the accounting does."""
    cfg = ClientsSection(rate_hz=rate, jitter_s=jitter, latency_s=latency, packet_loss=loss)
    world = SimpleNamespace(players=players)
    stream = ClientStream(cfg, world, np.random.default_rng(seed), WINDOW)
    if same_phase:  # every client sends at the same instant: ties broken by client, tick
        stream.phase_s = np.zeros(players)
    stream.close()
    return stream


@settings(max_examples=60, deadline=None)
@given(
    players=st.integers(1, 50),
    rate=st.sampled_from([10.0, 31.25, 72.0]),
    jitter_share=st.sampled_from([0.0, 0.3, 0.99]),
    latency=st.sampled_from([0.0, 0.004, 0.5]),
    loss=st.sampled_from([0.0, 0.2]),
    same_phase=st.booleans(),
    steps=st.lists(st.floats(0.0, 1.5), min_size=1, max_size=12),
    seed=st.integers(0, 2**16),
    chunk=st.sampled_from([1, 2, 3, None]),
    mode=st.sampled_from(["at once", "in pieces", "unordered"]),
)
def test_released_packets_come_in_the_fully_sorted_order(
    players, rate, jitter_share, latency, loss, same_phase, steps, seed, chunk, mode
):
    """Released at once (``release_until``) or in pieces (``release_in_pieces``, each at
    most the packets of two chunks' ticks): the order of sorting every packet.  Unordered
    (``release_unordered``): the same packets, and the same backlog, draws and counts."""
    jitter = jitter_share / rate
    stream = closed_stream(players, rate, jitter, latency, loss, seed, same_phase)
    assert stream.chunk_ticks == min(CHUNK_TICKS, CHUNK_MESSAGES // players)
    if chunk is not None:  # the chunks of many clients: a few ticks each
        stream.chunk_ticks = chunk
    released, now = [], 0.0
    for step in steps:
        now += step
        if mode == "in pieces":
            pieces = list(stream.release_in_pieces(now))
            assert all(len(p) <= 2 * stream.chunk_ticks * players for p in pieces)
            released += pieces
        elif mode == "unordered":
            for client, tick, arrival in stream.release_unordered(now):
                columns = np.zeros(len(client), dtype=EMPTY.dtype)
                columns["client"], columns["tick"], columns["arrival_s"] = client, tick, arrival
                released.append(columns)
        else:
            released.append(stream.release_until(now))
    got = np.concatenate(released) if released else EMPTY
    if mode == "unordered":  # compared on the columns it gives, in the sorted order
        got = sort_by_arrival(got)
    reference = closed_stream(players, rate, jitter, latency, loss, seed, same_phase)
    ticks = stream.next_tick
    assert ticks % stream.chunk_ticks == 0
    everything = sort_by_arrival(
        np.concatenate([reference._tick_messages(tick, None) for tick in range(ticks)])
    )
    expected = everything[everything["arrival_s"] <= now]
    if mode == "unordered":
        keys = ("client", "tick", "arrival_s")
        assert len(got) == len(expected)
        assert all((got[k] == expected[k]).all() for k in keys)
    else:
        assert got.tobytes() == expected.tobytes()
    assert stream.pending.tobytes() == everything[everything["arrival_s"] > now].tobytes()
    assert stream.sent == ticks * players
    assert [lost.tolist() for lost in stream.lost_sent_s] == [
        lost.tolist() for lost in reference.lost_sent_s
    ]
    arrival = expected["arrival_s"]
    inside = np.count_nonzero((arrival >= WINDOW[0]) & (arrival < WINDOW[1]))
    assert stream.arrived_in_window() == inside


@settings(max_examples=60, deadline=None)
@given(
    players=st.integers(1, 40),
    rate=st.sampled_from([10.0, 31.25]),
    jitter_share=st.sampled_from([0.0, 0.5]),
    latency=st.sampled_from([0.0, 0.004, 0.5]),
    loss=st.sampled_from([0.0, 0.2]),
    released_s=st.floats(0.0, 2.0),
    settle_after=st.floats(0.0, 3.0),
    seed=st.integers(0, 2**16),
)
def test_settling_counts_what_generating_every_packet_would(
    players, rate, jitter_share, latency, loss, released_s, settle_after, seed
):
    """The end-of-run accounting draws the remaining ticks without storing them; its counts
    are those of the packets generated in full (the stream's own draws)."""
    args = (players, rate, jitter_share / rate, latency, loss, seed, False)
    stream = closed_stream(*args)
    stream.release_until(released_s)
    at = released_s + settle_after
    got = stream.settle(at, arrival_times=True)
    reference = closed_stream(*args)
    ticks = int(np.floor(at * rate)) + 2
    parts, lost = [], []
    for tick in range(ticks):
        sent, kept = reference._draw(tick)
        kept = np.ones(players, bool) if kept is None else kept
        parts.append(sent[kept])
        lost.append(sent[~kept])
    sent, lost = np.concatenate(parts), np.concatenate(lost)
    arrival = sent + latency
    assert got.sent == np.count_nonzero(sent <= at) + np.count_nonzero(lost <= at)
    assert got.lost == np.count_nonzero(lost <= at)
    assert got.in_flight == np.count_nonzero((sent <= at) & (arrival > at))
    released = np.count_nonzero(arrival <= released_s)
    assert got.arrived == np.count_nonzero(arrival <= at) - released
    np.testing.assert_array_equal(got.arrival_s, np.sort(arrival[arrival <= at])[released:])
    inside = (arrival <= at) & (arrival >= WINDOW[0]) & (arrival < WINDOW[1])
    assert stream.arrived_in_window() == np.count_nonzero(inside)


class _Card:
    """The network card's side for a stream: each packet readable ``delay_s`` after the
    previous one's readable time or its arrival (a FIFO softirq), every ``drop_every``-th
    dropped by the kernel (NaN), as the machine answers :attr:`ClientStream.on_arrivals`."""

    def __init__(self, delay_s: float, drop_every: int) -> None:
        self.delay_s, self.drop_every, self.last, self.count = delay_s, drop_every, -np.inf, 0
        self.horizons: list[float] = []

    def __call__(self, arrivals_s: np.ndarray, horizon_s: float) -> np.ndarray:
        assert np.all(np.diff(arrivals_s) >= 0)
        assert not self.horizons or arrivals_s.size == 0 or arrivals_s[0] >= self.horizons[-1]
        assert arrivals_s.size == 0 or arrivals_s[-1] < horizon_s
        self.horizons.append(horizon_s)
        out = np.empty(len(arrivals_s))
        for i, a in enumerate(arrivals_s):
            self.count += 1
            if self.drop_every and self.count % self.drop_every == 0:
                out[i] = np.nan
                continue
            self.last = max(a, self.last) + self.delay_s
            out[i] = self.last
        return out


@settings(max_examples=40, deadline=None)
@given(
    players=st.integers(1, 40),
    rate=st.sampled_from([10.0, 31.25]),
    latency=st.sampled_from([0.0, 0.004]),
    delay=st.sampled_from([1e-4, 2e-3, 0.05]),
    drop_every=st.sampled_from([0, 3, 7]),
    steps=st.lists(st.floats(0.0, 0.7), min_size=1, max_size=10),
    seed=st.integers(0, 2**16),
)
def test_a_stream_with_a_card_releases_each_packet_once_readable(
    players, rate, latency, delay, drop_every, steps, seed
):
    """Every packet is handed to the card once, in arrival order, chunk by chunk before any
    could be released; the stream releases, in arrival order, exactly the packets whose
    readable time has come, and drops the ones the card drops (counted)."""
    stream = closed_stream(players, rate, 0.5 / rate, latency, 0.0, seed, False)
    card = _Card(delay, drop_every)
    stream.on_arrivals = card
    released, now = [], 0.0
    for step in steps:
        now += step
        got = stream.release_until(now)
        released.append(got)
    got = np.concatenate(released) if released else np.zeros(0)
    # the same packets, each with its readable time, from a plain stream and the same card
    plain = closed_stream(players, rate, 0.5 / rate, latency, 0.0, seed, False)
    packets = plain.release_until(now + 10.0)
    readable = _Card(delay, drop_every)(packets["arrival_s"], np.inf)
    kept = ~np.isnan(readable)
    expected = packets[kept][readable[kept] <= now]
    np.testing.assert_array_equal(got, expected)
    known = packets["arrival_s"] < card.horizons[-1]  # handed to the card so far
    assert stream.kernel_dropped == np.count_nonzero(~kept[known])
