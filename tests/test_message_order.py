"""The compiled arrival order (a bucket sort) and merge give the order of a lexicographic sort
on (arrival, client, tick), ties and bunched arrivals included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.workload.messages import (
    MESSAGE_DTYPE,
    arrival_order,
    merge_by_arrival,
    sort_by_arrival,
)


def _messages(rng: np.random.Generator, clients: int, ticks: int, spread: float, levels: int):
    """Every client's message of each tick, arrivals drawn from ``levels`` distinct values
    (few levels: many ties) or continuous (``levels`` 0), over ``spread`` s."""
    n = clients * ticks
    out = np.zeros(n, dtype=MESSAGE_DTYPE)
    out["client"] = np.tile(np.arange(clients), ticks)
    out["tick"] = np.repeat(np.arange(ticks), clients)
    if levels:
        out["arrival_s"] = rng.integers(0, levels, n) * (spread / levels)
    else:
        out["arrival_s"] = rng.uniform(0.0, spread, n)
    return out[rng.permutation(n)]


def _lexsorted(messages: np.ndarray) -> np.ndarray:
    return messages[np.lexsort((messages["tick"], messages["client"], messages["arrival_s"]))]


@settings(max_examples=80, deadline=None)
@given(
    clients=st.integers(1, 300),
    ticks=st.integers(1, 6),
    spread=st.sampled_from([0.0, 1e-9, 0.5, 1e6]),
    levels=st.sampled_from([0, 1, 2, 7, 1000]),
    bunched=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_arrival_order_is_the_lexicographic_order(clients, ticks, spread, levels, bunched, seed):
    rng = np.random.default_rng(seed)
    messages = _messages(rng, clients, ticks, spread, levels)
    if bunched and len(messages) > 2:  # one outlier: every other message in one bucket or two
        messages["arrival_s"][0] = 1e9
    order = arrival_order(messages["arrival_s"], messages["client"], messages["tick"])
    assert sorted(order.tolist()) == list(range(len(messages)))
    assert sort_by_arrival(messages).tobytes() == _lexsorted(messages).tobytes()


@settings(max_examples=60, deadline=None)
@given(
    clients=st.integers(1, 100),
    split=st.floats(0.0, 1.0),
    levels=st.sampled_from([0, 3, 50]),
    seed=st.integers(0, 2**16),
)
def test_merging_two_sorted_runs_gives_the_lexicographic_order(clients, split, levels, seed):
    rng = np.random.default_rng(seed)
    messages = _messages(rng, clients, 4, 1.0, levels)
    cut = int(split * len(messages))
    first, second = _lexsorted(messages[:cut]), _lexsorted(messages[cut:])
    assert merge_by_arrival(first, second).tobytes() == _lexsorted(messages).tobytes()
