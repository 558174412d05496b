"""The links' flows and their max-min fair sharing, compiled (:class:`~.links.Links` drives them).

**State.**  Arrays, grown by the caller before a call needs more room:

* flows, one row per flow in flight, in the order they started (``flows_i``: ``KEY``, ``SRC``,
  ``DST``, ``PAIR``; ``flows_f``: ``SIZE``, ``REMAINING``); ``sizes[N_FLOWS]`` rows are used.
  A finished flow's row is removed and the rows after it move up: the order stays the order
  of :class:`~.links.ReferenceLinks`' dictionary, so the bytes each attachment carried add up
  in the same order.
* pairs: the unordered attachment pairs ``{A, B}`` (``A <= B``) flows have crossed
  (``pairs_i``: ``A``, ``B``, ``COUNT`` flows in flight, ``NEXT_A``/``NEXT_B``: the next pair of
  ``A``'s/``B``'s list, ``FIXED``: scratch of the sharing; ``pair_rate``: the rate of each of
  its flows).  A pair is created the first time a flow crosses it and kept (with ``COUNT`` 0
  while no flow does); ``sizes[N_PAIRS]`` rows are used.
* ports (attachments, numbered from 0): ``ports_i``: ``HEAD`` (first pair of the port's list,
  -1 if none), ``LOAD`` and ``SEEN`` (scratch of the sharing); ``ports_f``: ``LEFT`` (scratch)
  and ``CARRIED`` (bytes carried so far, a flow counting at both ends).

**Sharing.**  Every flow crosses exactly two attachments of equal capacity, so the flows of one
pair get the same rate (they are fixed in the same round of the progressive filling, by the
same share): the filling runs on pairs weighted by their count.  It is the one of
:func:`~.links.max_min_rates`, operation for operation: the bottleneck is the attachment of
smallest ``left / count`` (ties to the smallest id), its share is ``max(left / count, 0.0)``,
and each of its flows takes the share off each of its two attachments, one subtraction per
flow (all subtractions from an attachment in a round are the same number, so their order does
not matter).  A flow's start or end only changes the rates of the connected component (through
shared attachments) of its attachments; the filling restricted to a component makes the same
choices in the same order as the global one (a component's attachments are changed only by its
own rounds), so :func:`share` recomputes those components alone and the other pairs keep their
rates: the numbers are those of the global computation, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from simsrv.core.compiled import compiled, inlined
from simsrv.core.uninitialised import empty

FINISHED_BYTES = 1e-9
"""Remaining bytes below this (relative to the flow's size, at least 1e-9 bytes) count as
sent: the rounding of ``rate x time`` never leaves a flow with a sliver to send."""

KEY, SRC, DST, PAIR = 0, 1, 2, 3
"""Columns of ``flows_i``."""
SIZE, REMAINING = 0, 1
"""Columns of ``flows_f``."""
A, B, COUNT, NEXT_A, NEXT_B, FIXED = 0, 1, 2, 3, 4, 5
"""Columns of ``pairs_i``."""
HEAD, LOAD, SEEN = 0, 1, 2
"""Columns of ``ports_i``."""
LEFT, CARRIED = 0, 1
"""Columns of ``ports_f``."""
N_FLOWS, N_PAIRS = 0, 1
"""Entries of ``sizes``."""


@compiled
def finished(remaining: float, size: float, rate: float, now_us: float) -> bool:
    """Whether a flow has sent its bytes at ``now_us``: what is left is a rounding sliver
    (``FINISHED_BYTES * max(1, size)``), or would take less time than the clock can tell
    (``now + remaining / rate <= now``: late in a long run a clock of ~1e7 us moves by
    ~2e-9 us, more than a sliver takes to send; without this the flow would never finish and
    the network would spin at that instant)."""
    if remaining <= FINISHED_BYTES * (size if size > 1.0 else 1.0):
        return True
    return rate > 0 and now_us + remaining / rate <= now_us


@compiled
def next_finish(flows_i, flows_f, pair_rate, sizes, now_us):
    """When the next flow finishes at the current rates: the smallest ``now + remaining /
    rate``, ``now_us`` if a flow has already finished, infinity if none is sending."""
    finish = math.inf
    for i in range(sizes[N_FLOWS]):
        remaining = flows_f[i, REMAINING]
        rate = pair_rate[flows_i[i, PAIR]]
        if finished(remaining, flows_f[i, SIZE], rate, now_us):
            return now_us
        if rate > 0:
            at = now_us + remaining / rate
            if at < finish:
                finish = at
    return finish


@inlined
def _keep_loaded(component, size, ports_i):  # pragma: no cover - compiled
    """Keep, in order, the first ``size`` attachments of ``component`` that still carry
    unfixed flows (load > 0) at its front; returns how many."""
    kept = 0
    for k in range(size):
        if ports_i[component[k], LOAD] > 0:
            component[kept] = component[k]
            kept += 1
    return kept


@compiled
def share(pairs_i, pair_rate, ports_i, ports_f, seeds, capacity):
    """Max-min fair rates of the pairs of the components (through pairs with flows) of the
    attachments ``seeds``, by progressive filling (see the module's text)."""
    ports = ports_i.shape[0]
    component = empty(ports, np.int64)  # the component's attachments, in the order reached
    size = 0
    for seed in seeds:
        if ports_i[seed, SEEN] == 0:
            ports_i[seed, SEEN] = 1
            component[size] = seed
            size += 1
    reached = 0
    while reached < size:
        port = component[reached]
        reached += 1
        pair = ports_i[port, HEAD]
        while pair >= 0:
            a = pairs_i[pair, A]
            if pairs_i[pair, COUNT] > 0:
                other = pairs_i[pair, B] if a == port else a
                if ports_i[other, SEEN] == 0:
                    ports_i[other, SEEN] = 1
                    component[size] = other
                    size += 1
            pair = pairs_i[pair, NEXT_A] if a == port else pairs_i[pair, NEXT_B]
    for k in range(size):
        port = component[k]
        ports_i[port, SEEN] = 0
        ports_i[port, LOAD] = 0
        ports_f[port, LEFT] = capacity
    for k in range(size):
        port = component[k]
        pair = ports_i[port, HEAD]
        while pair >= 0:
            a = pairs_i[pair, A]
            count = pairs_i[pair, COUNT]
            if a == port and count > 0:  # each pair once (a self pair is in one list)
                ports_i[a, LOAD] += count
                ports_i[pairs_i[pair, B], LOAD] += count
                pairs_i[pair, FIXED] = 0
            pair = pairs_i[pair, NEXT_A] if a == port else pairs_i[pair, NEXT_B]
    # the attachments with unfixed flows, in any order (ties are broken by id below)
    active = _keep_loaded(component, size, ports_i)
    while active > 0:
        best = -1
        best_share = 0.0
        for k in range(active):
            port = component[k]
            ratio = ports_f[port, LEFT] / ports_i[port, LOAD]
            if best < 0 or ratio < best_share or (ratio == best_share and port < best):
                best = port
                best_share = ratio
        level = 0.0 if best_share < 0.0 else best_share  # Python's max(share, 0.0)
        pair = ports_i[best, HEAD]
        while pair >= 0:
            a = pairs_i[pair, A]
            count = pairs_i[pair, COUNT]
            if count > 0 and pairs_i[pair, FIXED] == 0:
                pairs_i[pair, FIXED] = 1
                pair_rate[pair] = level
                for end in (a, pairs_i[pair, B]):
                    for _ in range(count):  # one subtraction per flow, as the reference
                        ports_f[end, LEFT] -= level
                    ports_i[end, LOAD] -= count
            pair = pairs_i[pair, NEXT_A] if a == best else pairs_i[pair, NEXT_B]
        active = _keep_loaded(component, active, ports_i)


@compiled
def add(
    flows_i,
    flows_f,
    pairs_i,
    pair_rate,
    ports_i,
    ports_f,
    sizes,
    key,
    src,
    dst,
    size,
    capacity,
    now_us,
):
    """Start a flow of ``size`` bytes from ``src`` to ``dst`` (room for one more flow and one
    more pair, ports up to ``max(src, dst)``: the caller's); re-share.  Returns whether it
    started (not if a flow of ``key`` is in flight: nothing changes) and the next finish time
    (:func:`next_finish`)."""
    n = sizes[N_FLOWS]
    for i in range(n):
        if flows_i[i, KEY] == key:
            return False, now_us
    low, high = (src, dst) if src <= dst else (dst, src)
    pair = ports_i[low, HEAD]
    while pair >= 0 and not (pairs_i[pair, A] == low and pairs_i[pair, B] == high):
        pair = pairs_i[pair, NEXT_A] if pairs_i[pair, A] == low else pairs_i[pair, NEXT_B]
    if pair < 0:
        pair = sizes[N_PAIRS]
        sizes[N_PAIRS] = pair + 1
        pairs_i[pair, A] = low
        pairs_i[pair, B] = high
        pairs_i[pair, COUNT] = 0
        pairs_i[pair, FIXED] = 0
        pair_rate[pair] = 0.0
        pairs_i[pair, NEXT_A] = ports_i[low, HEAD]
        ports_i[low, HEAD] = pair
        pairs_i[pair, NEXT_B] = -1
        if high != low:
            pairs_i[pair, NEXT_B] = ports_i[high, HEAD]
            ports_i[high, HEAD] = pair
    pairs_i[pair, COUNT] += 1
    flows_i[n, KEY] = key
    flows_i[n, SRC] = src
    flows_i[n, DST] = dst
    flows_i[n, PAIR] = pair
    flows_f[n, SIZE] = size
    flows_f[n, REMAINING] = size
    sizes[N_FLOWS] = n + 1
    seeds = empty(2, np.int64)
    seeds[0] = low
    seeds[1] = high
    share(pairs_i, pair_rate, ports_i, ports_f, seeds, capacity)
    return True, next_finish(flows_i, flows_f, pair_rate, sizes, now_us)


@compiled
def advance(
    flows_i,
    flows_f,
    pairs_i,
    pair_rate,
    ports_i,
    ports_f,
    sizes,
    now_us,
    to_us,
    capacity,
):
    """Move the flows from ``now_us`` to ``to_us`` (``moved = min(rate x dt, remaining)``,
    carried at both ends), remove the finished ones, re-share if any finished; returns their
    keys in key order and the next finish time at ``to_us``."""
    n = sizes[N_FLOWS]
    dt = to_us - now_us
    done = 0
    for i in range(n):
        rate = pair_rate[flows_i[i, PAIR]]
        remaining = flows_f[i, REMAINING]
        moved = rate * dt
        if remaining < moved:  # Python's min(rate * dt, remaining)
            moved = remaining
        remaining -= moved
        flows_f[i, REMAINING] = remaining
        ports_f[flows_i[i, SRC], CARRIED] += moved
        ports_f[flows_i[i, DST], CARRIED] += moved
        if finished(remaining, flows_f[i, SIZE], rate, to_us):
            done += 1
    if done == 0:
        return empty(0, np.int64), next_finish(flows_i, flows_f, pair_rate, sizes, to_us)
    rows = empty(done, np.int64)
    keys = empty(done, np.int64)
    k = 0
    for i in range(n):
        rate = pair_rate[flows_i[i, PAIR]]
        if finished(flows_f[i, REMAINING], flows_f[i, SIZE], rate, to_us):
            rows[k] = i
            keys[k] = flows_i[i, KEY]
            k += 1
    order = np.argsort(keys)
    seeds = empty(2 * done, np.int64)
    for k in range(done):
        row = rows[order[k]]
        sliver = flows_f[row, REMAINING]  # the rounding sliver is carried too
        ports_f[flows_i[row, SRC], CARRIED] += sliver
        ports_f[flows_i[row, DST], CARRIED] += sliver
        pair = flows_i[row, PAIR]
        pairs_i[pair, COUNT] -= 1
        seeds[2 * k] = pairs_i[pair, A]
        seeds[2 * k + 1] = pairs_i[pair, B]
    kept = 0
    k = 0
    for i in range(n):
        if k < done and rows[k] == i:
            k += 1
            continue
        if kept != i:
            flows_i[kept] = flows_i[i]
            flows_f[kept] = flows_f[i]
        kept += 1
    sizes[N_FLOWS] = kept
    share(pairs_i, pair_rate, ports_i, ports_f, seeds, capacity)
    return keys[order], next_finish(flows_i, flows_f, pair_rate, sizes, to_us)
