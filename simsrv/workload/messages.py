"""Client move packets as one numpy structured array.

Fields
------
``arrival_s``      when the packet reaches the server socket, s
``sent_s``         when the client sent it, s
``client``         client (= player) index
``tick``           client tick whose command the packet carries
``commands``       user commands the server executes (filled in when read: 1, or up to
                   ``commands_per_packet`` after lost or dropped packets)
``range_count``    entities in the sender's action range at that tick (self excluded)
``visible_count``  entities in the sender's visible set at that tick (self excluded)
``pvs_rooms``      rooms in the sender's PVS row at that tick (the PVS work of its reply)
``shot``           the command fires a weapon
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty

MESSAGE_DTYPE = np.dtype(
    [
        ("arrival_s", "f8"),
        ("sent_s", "f8"),
        ("client", "i4"),
        ("tick", "i8"),
        ("commands", "i4"),
        ("range_count", "i4"),
        ("visible_count", "i4"),
        ("pvs_rooms", "i4"),
        ("shot", "?"),
    ]
)

EMPTY = np.zeros(0, dtype=MESSAGE_DTYPE)


def sort_by_arrival(messages: np.ndarray) -> np.ndarray:
    """Messages in arrival order; ties broken by client then tick (deterministic)."""
    order = arrival_order(messages["arrival_s"], messages["client"], messages["tick"])
    return np.take(messages, order)  # ~8x faster than fancy indexing on records


def merge_by_arrival(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Two message arrays, each in arrival order (ties by client, tick), merged into one."""
    columns = ("arrival_s", "client", "tick")  # contiguous: one compiled signature
    order = merged_order(
        *(np.ascontiguousarray(first[c]) for c in columns),
        *(np.ascontiguousarray(second[c]) for c in columns),
    )
    return np.take(np.concatenate([first, second]), order)


@compiled
def _before(arrival, client, tick, i, j):  # pragma: no cover - compiled
    """Whether message ``i`` comes before message ``j``: (arrival, client, tick) ascending."""
    if arrival[i] != arrival[j]:
        return arrival[i] < arrival[j]
    if client[i] != client[j]:
        return client[i] < client[j]
    return tick[i] < tick[j]


@compiled
def arrival_order(arrival, client, tick):  # pragma: no cover - compiled
    """The permutation sorting messages by (arrival, client, tick), (n,) int64.

    A bucket sort, O(n) for arrivals spread over their range: each message goes to one of
    ``n`` buckets by a monotone map of its arrival (so the buckets are in order), then each
    bucket is sorted on the exact key: insertion sort for a few messages, merge sort for many
    (arrivals bunched together, e.g. clients of one host without jitter).  The order is the
    unique one of the key (a client sends one message per tick).
    """
    n = len(arrival)
    order = empty(n, np.int64)
    if n == 0:
        return order
    low = arrival.min()
    span = arrival.max() - low
    scale = n / span if span > 0 else 0.0
    if not np.isfinite(scale):
        scale = 0.0
    bucket = empty(n, np.int64)
    start = np.zeros(n + 1, np.int64)
    for i in range(n):
        b = min(int((arrival[i] - low) * scale), n - 1)
        bucket[i] = b
        start[b + 1] += 1
    for b in range(n):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    for i in range(n):
        order[fill[bucket[i]]] = i
        fill[bucket[i]] += 1
    scratch = empty(0, np.int64)
    for b in range(n):
        lo, hi = start[b], start[b + 1]
        if hi - lo <= 1:
            continue
        if hi - lo <= 32:
            for k in range(lo + 1, hi):  # insertion sort
                v = order[k]
                m = k - 1
                while m >= lo and _before(arrival, client, tick, v, order[m]):
                    order[m + 1] = order[m]
                    m -= 1
                order[m + 1] = v
            continue
        if len(scratch) < hi - lo:
            scratch = empty(hi - lo, np.int64)
        width = 1
        part = order[lo:hi]
        while width < hi - lo:  # bottom-up merge sort
            for left in range(0, hi - lo, 2 * width):
                mid = min(left + width, hi - lo)
                right = min(left + 2 * width, hi - lo)
                a, c, k = left, mid, 0
                while a < mid and c < right:
                    if _before(arrival, client, tick, part[c], part[a]):
                        scratch[k] = part[c]
                        c += 1
                    else:
                        scratch[k] = part[a]
                        a += 1
                    k += 1
                while a < mid:
                    scratch[k] = part[a]
                    a += 1
                    k += 1
                while c < right:
                    scratch[k] = part[c]
                    c += 1
                    k += 1
                part[left:right] = scratch[:k]
            width *= 2
    return order


@compiled
def merged_order(arrival_a, client_a, tick_a, arrival_b, client_b, tick_b):  # pragma: no cover
    """The permutation of ``a`` then ``b`` (each sorted by (arrival, client, tick)) that merges
    them, (len(a) + len(b),) int64 (``b``'s messages numbered after ``a``'s)."""
    na, nb = len(arrival_a), len(arrival_b)
    order = empty(na + nb, np.int64)
    i, j, k = 0, 0, 0
    while i < na and j < nb:
        if arrival_b[j] != arrival_a[i]:
            b_first = arrival_b[j] < arrival_a[i]
        elif client_b[j] != client_a[i]:
            b_first = client_b[j] < client_a[i]
        else:
            b_first = tick_b[j] < tick_a[i]
        if b_first:
            order[k] = na + j
            j += 1
        else:
            order[k] = i
            i += 1
        k += 1
    while i < na:
        order[k] = i
        i += 1
        k += 1
    while j < nb:
        order[k] = na + j
        j += 1
        k += 1
    return order
