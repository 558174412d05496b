"""The compiled links give the numbers of their plain-Python specification, bit for bit: the
max-min fair rates of :func:`max_min_rates`, every flow's progress, and a whole network's
deliveries (``==`` everywhere, never approximately)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.interconnect import Network, load_profile
from simsrv.interconnect.links import Links, ReferenceLinks, max_min_rates


@st.composite
def link_runs(draw: st.DrawFn) -> tuple[float, list[tuple]]:
    """A capacity and operations on 2..64 attachments: start a flow between two of them,
    finish a flow (its rest set to 0), move the clock part of the way to the next finish."""
    nodes = draw(st.integers(2, 64))
    hot = draw(st.integers(2, nodes))  # fewer attachments in use: more sharing, more ties
    capacity = draw(st.sampled_from([1.0, 0.3, 44.8]) | st.floats(0.01, 200.0))
    node = st.integers(0, hot - 1)
    size = st.integers(0, 5000).map(float) | st.floats(0.0, 1e6)
    start = st.builds(
        lambda src, hop, size: ("add", src, (src + 1 + hop % (hot - 1)) % hot, size),
        node,
        st.integers(0, 63),
        size,
    )
    finish = st.tuples(st.just("finish"), st.integers(0, 10**6))
    move = st.tuples(st.just("advance"), st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1))
    length = draw(st.integers(1, 300))  # not hypothesis's short lists: ties need many flows
    operations = draw(
        st.lists(start | start | start | finish | move, min_size=length, max_size=length)
    )
    return capacity, operations


def _state(links: Links | ReferenceLinks) -> tuple:
    flows = links.flows
    return (
        links.now_us,
        [(k, flows[k].src, flows[k].dst, flows[k].remaining, flows[k].rate) for k in flows],
        [links.carried.get(port, 0.0) for port in range(101)],
    )


@settings(max_examples=200, deadline=None)
@given(link_runs())
def test_compiled_sharing_and_progress_equal_the_reference_exactly(run):
    capacity, operations = run
    links, reference = Links(capacity), ReferenceLinks(capacity)
    key = 0
    for operation in operations:
        if operation[0] == "add":
            _, src, dst, size = operation
            links.add(key, src, dst, size)
            reference.add(key, src, dst, size)
            key += 1
        elif operation[0] == "finish" and reference.flows:
            victim = list(reference.flows)[operation[1] % len(reference.flows)]
            links.flows[victim].remaining = 0.0
            reference.flows[victim].remaining = 0.0
            assert links.advance(links.now_us) == reference.advance(reference.now_us)
        elif operation[0] == "advance":
            next_us = reference.next_finish_us()
            assert links.next_finish_us() == next_us
            to_us = reference.now_us + (next_us - reference.now_us) * operation[1]
            if not math.isfinite(to_us):
                to_us = reference.now_us + 1.0
            assert links.advance(to_us) == reference.advance(to_us)
        through = [(k, (f.src, f.dst)) for k, f in reference.flows.items()]
        rates = {k: links.flows[k].rate for k in links.flows}
        assert rates == max_min_rates(through, capacity)
        assert _state(links) == _state(reference)
        assert links.next_finish_us() == reference.next_finish_us()
    while math.isfinite(to_us := reference.next_finish_us()):  # drain
        assert links.next_finish_us() == to_us
        assert links.advance(to_us) == reference.advance(to_us)
        assert _state(links) == _state(reference)
    assert _state(links) == _state(reference)


post = st.tuples(
    st.integers(0, 63),
    st.integers(1, 63),
    st.integers(0, 200_000) | st.sampled_from([0, 1, 72, 1400, 40_000]),
    st.floats(0, 5000) | st.sampled_from([0.0, 100.0]),
    st.booleans(),
)
posts = st.integers(1, 120).flatmap(lambda n: st.lists(post, min_size=n, max_size=n))


@pytest.mark.parametrize("profile_name", ["libvip", "tcp"])
@settings(max_examples=60, deadline=None)
@given(nodes=st.integers(2, 64), posted=posts)
def test_a_network_delivers_the_same_messages_with_compiled_and_reference_links(
    profile_name, nodes, posted
):
    profile = load_profile(profile_name)
    compiled_run, reference_run = Network(profile, nodes), Network(profile, nodes)
    reference_run.links = ReferenceLinks(profile.bytes_per_us)
    got: list = []
    expected: list = []
    for src, hop, size, at, catch_up in sorted(posted, key=lambda p: p[3]):
        src, dst = src % nodes, (src + 1 + hop % (nodes - 1)) % nodes
        at = max(at, compiled_run.now_us)
        if catch_up:  # advance the clock to the post first, as a cluster run does
            got += compiled_run.advance(at)
            expected += reference_run.advance(at)
            assert compiled_run.next_event_us() == reference_run.next_event_us()
        assert compiled_run.post(src, dst, size, at) == reference_run.post(src, dst, size, at)
    got += compiled_run.run()
    expected += reference_run.run()
    assert len(got) == len(posted)
    assert got == expected


def test_the_flows_of_one_attachment_pair_share_one_rate_whatever_their_direction():
    links = Links(1.0)
    for key, (src, dst) in enumerate([(0, 1), (1, 0), (0, 1), (2, 3)]):
        links.add(key, src, dst, 100.0)
    assert [links.flows[k].rate for k in range(4)] == [1 / 3, 1 / 3, 1 / 3, 1.0]
    links.flows[3].remaining = 0.0
    assert links.advance(0.0) == [3]  # the other component keeps its rates
    assert [links.flows[k].rate for k in range(3)] == [1 / 3, 1 / 3, 1 / 3]
    assert list(links.flows) == [0, 1, 2]


def test_the_arrays_grow_past_their_first_size_and_a_key_is_in_flight_once():
    links, reference = Links(2.0), ReferenceLinks(2.0)
    for key in range(300):  # more flows, pairs and attachments than allocated at first
        src, dst = key % 97, (key * 7 + 1) % 101
        if src != dst:
            links.add(key, src, dst, 10.0 + key)
            reference.add(key, src, dst, 10.0 + key)
    assert _state(links) == _state(reference)
    with pytest.raises(ValueError, match="already in flight"):
        links.add(5, 1, 2, 1.0)
    with pytest.raises(ValueError, match="numbered from 0"):
        links.add(1000, -1, 2, 1.0)
    assert _state(links) == _state(reference)
    while math.isfinite(to_us := reference.next_finish_us()):
        assert links.advance(to_us) == reference.advance(to_us)
    assert _state(links) == _state(reference) and not links.flows


@pytest.mark.parametrize("seed", range(4))
def test_hundreds_of_flows_in_flight_match_the_reference(seed):
    """Seeded runs longer than the property's: a few hundred flows in flight on 64
    attachments, as in a 64-node cluster."""
    rng = random.Random(seed)
    capacity = rng.choice([44.8, 1.0, rng.uniform(0.1, 100.0)])
    links, reference = Links(capacity), ReferenceLinks(capacity)
    nodes, most = 64, 0
    for key in range(1500):
        src = rng.randrange(nodes)
        dst = (src + rng.randrange(1, nodes if rng.random() < 0.3 else 5)) % nodes
        size = float(rng.choice([0, 72, 1400, rng.randrange(40_000)]))
        links.add(key, src, dst, size)
        reference.add(key, src, dst, size)
        most = max(most, len(reference.flows))
        if rng.random() < 0.2:
            next_us = reference.next_finish_us()
            assert links.next_finish_us() == next_us
            to_us = next_us if rng.random() < 0.5 else reference.now_us + rng.uniform(0, 50)
            to_us = min(to_us, reference.now_us + 500.0)
            assert links.advance(to_us) == reference.advance(to_us)
        if key % 100 == 0:
            assert _state(links) == _state(reference)
    assert most > 200
    while math.isfinite(to_us := reference.next_finish_us()):
        assert links.next_finish_us() == to_us
        assert links.advance(to_us) == reference.advance(to_us)
    assert _state(links) == _state(reference)


@pytest.mark.parametrize("profile_name", ["libvip", "tcp"])
def test_a_busy_64_node_network_delivers_the_same_messages(profile_name):
    rng = random.Random(profile_name)
    profile = load_profile(profile_name)
    compiled_run, reference_run = Network(profile, 64), Network(profile, 64)
    reference_run.links = ReferenceLinks(profile.bytes_per_us)
    got: list = []
    expected: list = []
    at = 0.0
    for _ in range(2000):
        at += rng.expovariate(1 / 8.0)
        if rng.random() < 0.2:
            got += compiled_run.advance(at)
            expected += reference_run.advance(at)
        src = rng.randrange(64)
        dst = (src + rng.randrange(1, 64 if rng.random() < 0.3 else 9)) % 64
        size = rng.choice([72, 400, 1400, rng.randrange(20_000)])
        compiled_run.post(src, dst, size, at)
        reference_run.post(src, dst, size, at)
    got += compiled_run.run()
    expected += reference_run.run()
    assert len(got) == 2000 and got == expected
