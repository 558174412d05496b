"""The interconnect model: exact timelines of messages, link sharing, properties, ping-pong."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.interconnect import Network, load_profile, run_size, send_one
from simsrv.interconnect.links import Links, max_min_rates
from simsrv.interconnect.pingpong import elapsed_us
from simsrv.interconnect.profile import InterconnectProfile

# 1 byte/us: a message of m bytes takes m us on an idle link
PLAIN = InterconnectProfile(
    name="plain",
    semantics="async",
    send_cpu_us=7.0,
    recv_cpu_us=11.0,
    latency_us=5.0,
    bandwidth_bytes_per_s=1e6,
)

PAPER_40KB = {"libvip": 41.1, "libvip-altered": 38.75, "tcp": 35.0}  # MB/s [V §4.1]


def test_a_message_on_an_idle_link_costs_send_bytes_latency_and_receive():
    d = send_one(PLAIN, 1000)
    # hand computed: 7 (send CPU) + 1000 / 1 (link) + 5 (latency) + 11 (receive CPU)
    assert (d.sent_us, d.transmitted_us, d.delivered_us, d.received_us) == (
        7.0,
        1007.0,
        1012.0,
        1023.0,
    )
    assert (d.send_cpu_us, d.recv_cpu_us) == (7.0, 11.0)
    assert d.sender_free_us == 0.0  # async: the post returns at once
    sync = send_one(PLAIN.model_copy(update={"semantics": "sync"}), 1000)
    assert sync.received_us == 1023.0 and sync.sender_free_us == 7.0  # send() blocked


def test_two_concurrent_messages_share_the_link_half_each_while_both_fly():
    network = Network(PLAIN, 3)
    network.post(0, 1, 1000, 0.0)  # both leave node 0: they share its attachment
    network.post(0, 2, 3000, 0.0)  # (a send thread per connection: both start at 7)
    got = {d.dst: d for d in network.run()}
    # 7..2007: 0.5 byte/us each, the first is done (1000 B); the second has 2000 B left at
    # the full rate: done at 4007
    assert got[1].transmitted_us == 2007.0 and got[2].transmitted_us == 4007.0
    assert got[1].received_us == 2007.0 + 5 + 11 and got[2].received_us == 4007.0 + 5 + 11


def test_opposite_directions_share_the_attachments_and_disjoint_pairs_do_not():
    network = Network(PLAIN, 4)
    network.post(0, 1, 1000, 0.0)
    network.post(1, 0, 1000, 0.0)
    network.post(2, 3, 1000, 0.0)
    got = {(d.src, d.dst): d.transmitted_us for d in network.run()}
    assert got == {(0, 1): 2007.0, (1, 0): 2007.0, (2, 3): 1007.0}


def test_a_later_message_slows_one_in_flight():
    network = Network(PLAIN, 2)
    network.post(0, 1, 1000, 0.0)
    network.advance(507.0)  # 500 bytes sent
    network.post(1, 0, 1000, 507.0)  # starts at 514 (its send CPU)
    got = {d.src: d.transmitted_us for d in network.run()}
    # 0->1: 507 bytes by 514, then 493 at 0.5 byte/us: 986 us -> 1500; the other has
    # 493 bytes by then, 507 left at full rate -> 2007
    assert got == {0: 1500.0, 1: 2007.0}


def test_messages_on_one_connection_queue_for_its_send_and_receive_threads():
    slow_cpu = PLAIN.model_copy(update={"send_cpu_us": 100.0, "recv_cpu_us": 300.0})
    network = Network(slow_cpu, 2)
    first, second = network.post(0, 1, 10, 0.0), network.post(0, 1, 10, 0.0)
    assert (network.sent_us(first), network.sent_us(second)) == (100.0, 200.0)
    received = [d.received_us for d in network.run()]
    assert received == [100 + 10 + 5 + 300.0, 100 + 10 + 5 + 300 + 300.0]


def test_max_min_rates_give_unused_capacity_to_the_others():
    # a: 0->1, b: 0->2, c: 3->2.  Attachment 0 holds a, b; attachment 2 holds b, c: every
    # flow gets 1/2.  Add d: 3->4: attachment 3 holds c and d -> still 1/2 each
    rates = max_min_rates([(1, (0, 1)), (2, (0, 2)), (3, (3, 2)), (4, (3, 4))], 1.0)
    assert rates == {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5}
    # three flows out of node 0, one of them also through a busy attachment 5
    rates = max_min_rates([(1, (0, 1)), (2, (0, 2)), (3, (0, 5)), (4, (6, 5))], 1.0)
    assert rates == pytest.approx({1: 1 / 3, 2: 1 / 3, 3: 1 / 3, 4: 2 / 3})


def test_bad_posts_are_refused():
    network = Network(PLAIN, 2)
    with pytest.raises(ValueError, match="two different nodes"):
        network.post(0, 0, 10, 0.0)
    network.advance(10.0)
    with pytest.raises(ValueError, match="before the network's clock"):
        network.post(0, 1, 10, 5.0)


def test_an_unknown_profile_names_the_allowed_ones():
    with pytest.raises(InputError, match="allowed: libvip, libvip-altered, tcp"):
        load_profile("myrinet")


@pytest.mark.parametrize("name", sorted(PAPER_40KB))
def test_pingpong_is_within_10_percent_of_the_paper_at_40_kb(name):
    point = run_size(load_profile(name), 40000)
    assert point.bandwidth_MB_per_s == pytest.approx(PAPER_40KB[name], rel=0.10)


def test_pingpong_times_follow_the_closed_forms():
    # sync: t_c = c + m/B; async: t_c = c/2 + m/B (c = send + latency + receive)
    c = 7.0 + 5.0 + 11.0
    sync = PLAIN.model_copy(update={"semantics": "sync"})
    assert run_size(sync, 1000, 10).time_us == pytest.approx(c + 1000.0)
    assert run_size(PLAIN, 1000, 10).time_us == pytest.approx(c / 2 + 1000.0)


profiles = st.builds(
    InterconnectProfile,
    name=st.just("p"),
    semantics=st.sampled_from(["async", "sync"]),
    send_cpu_us=st.floats(0, 500),
    recv_cpu_us=st.floats(0, 500),
    latency_us=st.floats(0, 500),
    bandwidth_bytes_per_s=st.floats(1e5, 1.25e8),
)
messages = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 50_000), st.floats(0, 5000)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(profiles, messages)
def test_bytes_are_conserved_and_every_message_arrives(profile, posts):
    network = Network(profile, 4)
    expected = dict.fromkeys(range(4), 0.0)
    for src, hop, size, at in sorted(posts, key=lambda p: p[3]):
        dst = (src + hop) % 4
        network.post(src, dst, size, at)
        expected[src] += size
        expected[dst] += size
    deliveries = network.run()
    assert len(deliveries) == len(posts)
    for node, total in expected.items():
        assert network.links.carried.get(node, 0.0) == pytest.approx(total, rel=1e-9, abs=1e-6)
    for d in deliveries:
        assert d.posted_us <= d.sent_us <= d.transmitted_us <= d.delivered_us <= d.received_us
        # never faster than alone on idle links
        assert d.received_us - d.posted_us >= profile.idle_time_us(d.message_bytes) - 1e-6


@settings(max_examples=40, deadline=None)
@given(profiles, messages, st.integers(0, 50_000), st.integers(1, 50_000))
def test_a_bigger_message_never_arrives_sooner(profile, background, size, extra):
    def received(m: int) -> float:
        network = Network(profile, 4)
        ours = network.post(0, 1, m, 0.0)
        for src, hop, s, at in sorted(background, key=lambda p: p[3]):
            network.post(src, (src + hop) % 4, s, at)
        return next(d.received_us for d in network.run() if d.message_id == ours)

    assert received(size + extra) >= received(size) - 1e-6


@settings(max_examples=40, deadline=None)
@given(profiles, st.integers(0, 100_000), st.integers(1, 20_000))
def test_pingpong_time_grows_with_size_and_async_is_never_slower(profile, size, extra):
    small = elapsed_us(profile, size, 5)
    assert elapsed_us(profile, size + extra, 5) >= small - 1e-6 * small
    sync = profile.model_copy(update={"semantics": "sync"})
    asyn = profile.model_copy(update={"semantics": "async"})
    assert elapsed_us(asyn, size, 5) <= elapsed_us(sync, size, 5) * (1 + 1e-12) + 1e-9
    assert math.isfinite(small)


def test_a_flow_whose_rest_the_clock_cannot_tell_finishes_late_in_a_long_run():
    """At ~1.7e7 us (a cluster run's 17th simulated second) the clock moves by ~3.7e-9 us: a
    rest of 8e-8 bytes (above the 7.2e-8 sliver of a 72-byte message) at 44.8 bytes/us takes
    less than that.  It used to never finish: the network spun at that instant forever."""
    links = Links(44.762376200000006)
    links.now_us = 16896884.833351232
    links.add(1, 0, 2, 72.0)
    links.flows[1].remaining = 7.969728699208645e-08
    assert links.next_finish_us() == links.now_us
    assert links.advance(links.now_us) == [1]
    assert links.carried[0] == pytest.approx(7.969728699208645e-08)


def test_a_flow_that_finishes_on_the_way_to_an_event_is_delivered():
    """Found by the property above: a flow whose finish time rounds to just after
    the next posting finished while the links moved to that posting, and was dropped."""
    update = {"send_cpu_us": 0.0, "recv_cpu_us": 0.0, "latency_us": 1.0}
    profile = PLAIN.model_copy(update={**update, "bandwidth_bytes_per_s": 1e5})
    network = Network(profile, 4)
    network.post(0, 1, 1, 0.0)
    network.post(0, 2, 2, 6.80786836778116e-15)
    network.post(0, 1, 1, 1.0)
    assert sorted(d.message_id for d in network.run()) == [0, 1, 2]
