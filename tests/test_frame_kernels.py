"""The frame rules' compiled kernels (simsrv.workload.frame_kernels) against plain numpy
versions of the same rules (the implementation they replaced): commands after lost or dropped
packets, the clients' last ticks, and the replied clients of a frame whose senders repeat."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.workload.frame_kernels import (
    commit_ticks,
    count_commands,
    distinct_senders,
    reply_targets,
)
from simsrv.workload.messages import MESSAGE_DTYPE

CLIENTS = 6


def _numpy_commands(messages, last_tick, cpp, unique):
    """Commands and the new last ticks, with numpy (lexsort by client, then tick)."""
    last = last_tick.copy()
    clients, ticks = messages["client"], messages["tick"]
    if unique:
        gap = ticks - last[clients]
        last[clients] = ticks
    else:
        order = np.lexsort((ticks, clients))
        c, k = clients[order], ticks[order]
        previous = last[c]
        same = np.zeros(len(c), dtype=bool)
        same[1:] = c[1:] == c[:-1]
        previous[1:][same[1:]] = k[:-1][same[1:]]
        gap = np.empty_like(k)
        gap[order] = k - previous
        np.maximum.at(last, c, k)
    return np.minimum(np.maximum(gap, 1), cpp), last


def _numpy_replies(messages):
    """Unique senders by id, with their newest packet's visible and PVS counts."""
    newest_first = messages[::-1]
    clients, first = np.unique(newest_first["client"], return_index=True)
    return clients, newest_first["visible_count"][first], newest_first["pvs_rooms"][first]


@st.composite
def frames(draw):
    """A frame's packets: each client sends ticks in order, at most one packet a tick; the
    read order interleaves clients arbitrarily."""
    packets = []
    for client in range(CLIENTS):
        ticks = sorted(draw(st.sets(st.integers(0, 40), max_size=4)))
        packets += [(client, t) for t in ticks]
    order = draw(st.permutations(range(len(packets))))
    messages = np.zeros(len(packets), MESSAGE_DTYPE)
    for row, index in enumerate(order):
        messages[row]["client"], messages[row]["tick"] = packets[index]
    messages["visible_count"] = draw(
        st.lists(st.integers(0, 9), min_size=len(packets), max_size=len(packets))
    )
    messages["pvs_rooms"] = draw(
        st.lists(st.integers(0, 9), min_size=len(packets), max_size=len(packets))
    )
    last_tick = np.array(draw(st.lists(st.integers(-1, 20), min_size=CLIENTS, max_size=CLIENTS)))
    return messages, last_tick


@settings(max_examples=300, deadline=None)
@given(frames(), st.integers(1, 3))
def test_the_kernels_follow_the_numpy_rules(frame, cpp):
    messages, last_tick = frame
    seen = np.zeros(CLIENTS, np.int64)
    unique = distinct_senders(messages, seen, 1)
    assert unique == (len(set(messages["client"].tolist())) == len(messages))
    expected_commands, expected_last = _numpy_commands(messages, last_tick, cpp, unique)
    count_commands(messages, last_tick, cpp, unique)
    commit_ticks(messages, last_tick, unique)
    assert messages["commands"].tolist() == expected_commands.tolist()
    assert last_tick.tolist() == expected_last.tolist()
    if not unique:
        out = [np.zeros(len(messages), np.int32) for _ in range(3)]
        count = reply_targets(messages, seen, 2, np.zeros(CLIENTS, np.int64), *out)
        for got, want in zip(out, _numpy_replies(messages), strict=True):
            assert got[:count].tolist() == want.tolist()
