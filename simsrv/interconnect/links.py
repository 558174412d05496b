"""The nodes' network attachments, shared by the messages in flight: exact, event by event.

Each node has one attachment of ``capacity`` bytes/us carrying everything it sends and
receives, both directions together (NIC, PCI bus and TCP processing of a 2003 PC; the
full-duplex wire is not the bottleneck: [V §4.1] measures 33-41 MB/s on Gigabit Ethernet, and
the asynchronous ping-pong, whose two directions overlap, does not double the synchronous
one's bandwidth).  A message from ``a`` to ``b`` is a *flow* through ``a``'s and ``b``'s
attachments.  Concurrent flows share them by max-min fairness (progressive filling, as in
SimGrid's flow models): every flow gets the same share of its most loaded attachment, and
capacity a flow cannot use goes to the others.  Two flows on one attachment and nothing else
get half the capacity each.

Rates are constant between events (a flow starting or finishing), so the computation is
exact: no time step.  Times are microseconds, sizes bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

FINISHED_BYTES = 1e-9
"""Remaining bytes below this (relative to the flow's size, at least 1e-9 bytes) count as
sent: the rounding of ``rate x time`` never leaves a flow with a sliver to send."""


@dataclass
class Flow:
    """A message on the links: ``remaining`` of ``size`` bytes still to go at ``rate``."""

    key: int
    src: int
    dst: int
    size: float
    remaining: float
    rate: float = 0.0


def max_min_rates(
    flows: Iterable[tuple[int, tuple[int, ...]]], capacity: float
) -> dict[int, float]:
    """Max-min fair rates of flows through attachments of equal ``capacity``.

    ``flows``: ``(key, attachments)`` pairs.  Progressive filling: the attachment with the
    smallest equal share of its remaining capacity fixes the rate of its unfixed flows; their
    rate is taken off their other attachments; repeat.  Ties go to the smallest attachment
    id, so the result does not depend on the order of ``flows``.
    """
    through = dict(flows)
    left: dict[int, float] = {}
    for ports in through.values():
        for port in ports:
            left[port] = capacity
    rates: dict[int, float] = {}
    unfixed = set(through)
    while unfixed:
        count: dict[int, int] = {}
        for key in unfixed:
            for port in through[key]:
                count[port] = count.get(port, 0) + 1
        port = min(count, key=lambda p: (left[p] / count[p], p))
        share = max(left[port] / count[port], 0.0)
        for key in sorted(k for k in unfixed if port in through[k]):
            rates[key] = share
            unfixed.discard(key)
            for other in through[key]:
                left[other] -= share
    return rates


class Links:
    """The flows in flight on the nodes' attachments and their progress in time."""

    def __init__(self, capacity_bytes_per_us: float) -> None:
        if not capacity_bytes_per_us > 0:
            raise ValueError(f"capacity must be > 0 bytes/us, got {capacity_bytes_per_us}")
        self.capacity = capacity_bytes_per_us
        self.now_us = 0.0
        self.flows: dict[int, Flow] = {}
        self.carried: dict[int, float] = {}
        """Bytes each attachment has carried so far (a flow counts at both ends)."""

    def add(self, key: int, src: int, dst: int, size: float) -> None:
        """Start sending ``size`` bytes from ``src`` to ``dst`` now."""
        self.flows[key] = Flow(key, src, dst, float(size), float(size))
        self._share()

    def next_finish_us(self) -> float:
        """When the next flow finishes at the current rates (infinity if none is sending)."""
        finish = math.inf
        for flow in self.flows.values():
            if _finished(flow, self.now_us):
                return self.now_us
            if flow.rate > 0:
                finish = min(finish, self.now_us + flow.remaining / flow.rate)
        return finish

    def advance(self, to_us: float) -> list[int]:
        """Move the flows on to ``to_us`` (at most :meth:`next_finish_us`); returns the keys
        of the flows that finished, in key order, and re-shares the capacity."""
        dt = to_us - self.now_us
        if dt < 0:
            raise ValueError(f"time runs forward: now {self.now_us} us, asked {to_us} us")
        for flow in self.flows.values():
            moved = min(flow.rate * dt, flow.remaining)
            flow.remaining -= moved
            for port in (flow.src, flow.dst):
                self.carried[port] = self.carried.get(port, 0.0) + moved
        self.now_us = to_us
        done = sorted(k for k, f in self.flows.items() if _finished(f, to_us))
        for key in done:
            flow = self.flows.pop(key)
            for port in (flow.src, flow.dst):  # the rounding sliver is carried too
                self.carried[port] = self.carried.get(port, 0.0) + flow.remaining
        if done:
            self._share()
        return done

    def _share(self) -> None:
        rates = max_min_rates(((k, (f.src, f.dst)) for k, f in self.flows.items()), self.capacity)
        for key, flow in self.flows.items():
            flow.rate = rates[key]


def _sliver(flow: Flow) -> float:
    return FINISHED_BYTES * max(1.0, flow.size)


def _finished(flow: Flow, now_us: float) -> bool:
    """Whether ``flow`` has sent its bytes at ``now_us``: what is left is a rounding sliver,
    or would take less time than the clock can tell (``now + remaining / rate == now``: late
    in a long run a clock of ~1e7 us moves by ~2e-9 us, more than a sliver takes to send;
    without this the flow would never finish and the network would spin at that instant)."""
    if flow.remaining <= _sliver(flow):
        return True
    return flow.rate > 0 and now_us + flow.remaining / flow.rate <= now_us
