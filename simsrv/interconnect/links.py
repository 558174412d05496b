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

Two implementations give the same numbers, bit for bit (``tests/test_links_compiled.py``):

* :func:`max_min_rates` and :class:`ReferenceLinks`, plain Python, are the specification:
  the sharing recomputed over every flow at each event, the flows moved one by one;
* :class:`Links`, the one :class:`~simsrv.interconnect.network.Network` uses, keeps the flows
  in arrays and runs compiled (:mod:`simsrv.interconnect.link_kernels`): the flows of one
  attachment pair share one rate, and an event re-shares only the flows connected to it
  through shared attachments.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from simsrv.interconnect import link_kernels as kernels
from simsrv.interconnect.link_kernels import FINISHED_BYTES

__all__ = ["FINISHED_BYTES", "Flow", "FlowView", "Links", "ReferenceLinks", "max_min_rates"]


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


class ReferenceLinks:
    """The flows in flight on the nodes' attachments and their progress in time, in plain
    Python: the specification of :class:`Links` (same interface, same numbers)."""

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


def _finished(flow: Flow, now_us: float) -> bool:
    """Whether ``flow`` has sent its bytes at ``now_us``: what is left is a rounding sliver
    (``FINISHED_BYTES * max(1, size)``), or would take less time than the clock can tell
    (``now + remaining / rate <= now``: late in a long run a clock of ~1e7 us moves by
    ~2e-9 us, more than a sliver takes to send; without this the flow would never finish and
    the network would spin at that instant)."""
    if flow.remaining <= FINISHED_BYTES * max(1.0, flow.size):
        return True
    return flow.rate > 0 and now_us + flow.remaining / flow.rate <= now_us


class Links:
    """The flows in flight on the nodes' attachments and their progress in time: the numbers
    of :class:`ReferenceLinks`, compiled.  Attachments are numbered from 0; a key is in
    flight at most once."""

    def __init__(self, capacity_bytes_per_us: float) -> None:
        if not capacity_bytes_per_us > 0:
            raise ValueError(f"capacity must be > 0 bytes/us, got {capacity_bytes_per_us}")
        self.capacity = float(capacity_bytes_per_us)
        self._now = 0.0
        self._next = math.inf  # the next finish time at the current state
        self._stale = False  # whether _next must be computed again
        self._flows_i = np.zeros((64, 4), np.int64)
        self._flows_f = np.zeros((64, 2))
        self._pairs_i = np.zeros((16, 6), np.int64)
        self._pair_rate = np.zeros(16)
        self._ports_i = np.zeros((0, 3), np.int64)
        self._ports_f = np.zeros((0, 2))
        self._sizes = np.zeros(2, np.int64)

    @property
    def now_us(self) -> float:
        """The links' clock, us."""
        return self._now

    @now_us.setter
    def now_us(self, value: float) -> None:
        self._now = float(value)
        self._stale = True

    @property
    def flows(self) -> Mapping[int, FlowView]:
        """The flows in flight by key, in the order they started (views of the arrays)."""
        return _FlowTable(self)

    @property
    def carried(self) -> Mapping[int, float]:
        """Bytes each attachment has carried so far (a flow counts at both ends), by
        attachment, for the attachments flows have crossed."""
        return _Carried(self)

    def add(self, key: int, src: int, dst: int, size: float) -> None:
        """Start sending ``size`` bytes from ``src`` to ``dst`` now."""
        if src < 0 or dst < 0:
            raise ValueError(f"src, dst: attachments are numbered from 0, got {src}, {dst}")
        self._room(max(src, dst))
        started, next_us = kernels.add(
            self._flows_i,
            self._flows_f,
            self._pairs_i,
            self._pair_rate,
            self._ports_i,
            self._ports_f,
            self._sizes,
            int(key),
            int(src),
            int(dst),
            float(size),
            self.capacity,
            self._now,
        )
        if not started:
            raise ValueError(f"key: a flow {key} is already in flight")
        self._next, self._stale = next_us, False

    def next_finish_us(self) -> float:
        """When the next flow finishes at the current rates (infinity if none is sending)."""
        if self._stale:
            self._next = kernels.next_finish(
                self._flows_i, self._flows_f, self._pair_rate, self._sizes, self._now
            )
            self._stale = False
        return self._next

    def advance(self, to_us: float) -> list[int]:
        """Move the flows on to ``to_us`` (at most :meth:`next_finish_us`); returns the keys
        of the flows that finished, in key order, and re-shares the capacity."""
        if to_us - self._now < 0:
            raise ValueError(f"time runs forward: now {self._now} us, asked {to_us} us")
        done, self._next = kernels.advance(
            self._flows_i,
            self._flows_f,
            self._pairs_i,
            self._pair_rate,
            self._ports_i,
            self._ports_f,
            self._sizes,
            self._now,
            float(to_us),
            self.capacity,
        )
        self._now = float(to_us)
        self._stale = False
        return done.tolist() if len(done) else []

    def _room(self, port: int) -> None:
        """Grow the arrays for one more flow, one more pair and attachments up to ``port``."""
        if self._sizes[kernels.N_FLOWS] == len(self._flows_i):
            self._flows_i = _grown(self._flows_i, 2 * len(self._flows_i), 0)
            self._flows_f = _grown(self._flows_f, 2 * len(self._flows_f), 0.0)
        if self._sizes[kernels.N_PAIRS] == len(self._pairs_i):
            self._pairs_i = _grown(self._pairs_i, 2 * len(self._pairs_i), 0)
            self._pair_rate = _grown(self._pair_rate, 2 * len(self._pair_rate), 0.0)
        if port >= len(self._ports_i):
            old, ports = len(self._ports_i), max(port + 1, 2 * len(self._ports_i))
            self._ports_i = _grown(self._ports_i, ports, 0)
            self._ports_i[old:, kernels.HEAD] = -1
            self._ports_f = _grown(self._ports_f, ports, 0.0)

    def _row(self, key: int) -> int:
        """The row of the flow ``key`` (KeyError if it is not in flight)."""
        n = self._sizes[kernels.N_FLOWS]
        rows = np.flatnonzero(self._flows_i[:n, kernels.KEY] == key)
        if len(rows) == 0:
            raise KeyError(key)
        return int(rows[0])


def _grown(array: np.ndarray, rows: int, fill: float) -> np.ndarray:
    """``array`` with ``rows`` rows, the new ones ``fill``."""
    grown = np.full((rows, *array.shape[1:]), fill, array.dtype)
    grown[: len(array)] = array
    return grown


class FlowView:
    """A flow of :class:`Links` in flight (its row in the arrays): the attributes of
    :class:`Flow`; ``remaining`` may be written."""

    __slots__ = ("_links", "key")

    def __init__(self, links: Links, key: int) -> None:
        self._links = links
        self.key = key

    def _int(self, column: int) -> int:
        return int(self._links._flows_i[self._links._row(self.key), column])

    @property
    def src(self) -> int:
        return self._int(kernels.SRC)

    @property
    def dst(self) -> int:
        return self._int(kernels.DST)

    @property
    def size(self) -> float:
        return float(self._links._flows_f[self._links._row(self.key), kernels.SIZE])

    @property
    def remaining(self) -> float:
        return float(self._links._flows_f[self._links._row(self.key), kernels.REMAINING])

    @remaining.setter
    def remaining(self, value: float) -> None:
        self._links._flows_f[self._links._row(self.key), kernels.REMAINING] = value
        self._links._stale = True

    @property
    def rate(self) -> float:
        return float(self._links._pair_rate[self._int(kernels.PAIR)])


class _FlowTable(Mapping[int, FlowView]):
    """The flows of :class:`Links` in flight by key, in the order they started."""

    def __init__(self, links: Links) -> None:
        self._links = links

    def __getitem__(self, key: int) -> FlowView:
        self._links._row(key)  # KeyError if not in flight
        return FlowView(self._links, key)

    def __iter__(self) -> Iterator[int]:
        n = self._links._sizes[kernels.N_FLOWS]
        return iter(self._links._flows_i[:n, kernels.KEY].tolist())

    def __len__(self) -> int:
        return int(self._links._sizes[kernels.N_FLOWS])


class _Carried(Mapping[int, float]):
    """Bytes each attachment of :class:`Links` has carried, for the attachments flows have
    crossed."""

    def __init__(self, links: Links) -> None:
        self._links = links

    def __getitem__(self, port: int) -> float:
        ports_i = self._links._ports_i
        if not (isinstance(port, (int, np.integer)) and 0 <= port < len(ports_i)):
            raise KeyError(port)
        if ports_i[port, kernels.HEAD] < 0:
            raise KeyError(port)
        return float(self._links._ports_f[port, kernels.CARRIED])

    def __iter__(self) -> Iterator[int]:
        return iter(np.flatnonzero(self._links._ports_i[:, kernels.HEAD] >= 0).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self._links._ports_i[:, kernels.HEAD] >= 0))
