"""Messages between cluster nodes: post one, learn when the receiver has it and what each
end's CPU paid.  The call a cluster simulation makes.

Per message (times in microseconds, sizes in bytes; :mod:`simsrv.interconnect.profile`):

1. posted at ``posted_us``; the sender's CPU work ``send_cpu_us`` starts when the sending
   side of the connection ``src -> dst`` is free (one send thread per libVIP virtual
   interface, or the one socket: messages on a connection leave in order) and ends at
   ``sent_us`` (``VipSendWait`` returns; a blocking ``send()`` returns);
2. the bytes go through the links (:class:`~simsrv.interconnect.links.Links`, shared with
   every other message in flight at either end) until ``transmitted_us``;
3. ``latency_us`` later the message reaches the receiver (``delivered_us``);
4. the receiver's CPU work ``recv_cpu_us`` starts when the receiving side of the connection is
   free and ends at ``received_us``: the receiver has the message.

``sender_free_us`` is when the thread that posted may run again: at once for ``async``
profiles (the send thread works on another CPU), at ``sent_us`` for ``sync`` ones.

The computation is deterministic and exact; a message posted later can slow the ones in
flight (they share the links), so results are final only up to the network's clock: post at
times ``>= now_us`` and :meth:`Network.advance` the clock, or post everything and
:meth:`Network.run`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from simsrv.interconnect.links import Links
from simsrv.interconnect.profile import InterconnectProfile


@dataclass(frozen=True)
class Delivery:
    """One message's way from post to the receiver (times in us, absolute)."""

    message_id: int
    src: int
    dst: int
    message_bytes: int
    posted_us: float
    sent_us: float
    transmitted_us: float
    delivered_us: float
    received_us: float
    send_cpu_us: float
    """CPU the sender spent on it, us."""
    recv_cpu_us: float
    """CPU the receiver spent on it, us."""
    sender_free_us: float

    @property
    def latency_us(self) -> float:
        """Post to received, us."""
        return self.received_us - self.posted_us


@dataclass
class _Message:
    message_id: int
    src: int
    dst: int
    size: int
    posted_us: float
    sent_us: float
    transmitted_us: float = math.nan
    delivered_us: float = math.nan
    received_us: float = math.nan


_START, _DELIVER, _RECEIVE = 0, 1, 2
"""Event kinds, also their order at equal times (after the flows finishing at that time)."""


class Network:
    """``nodes`` nodes connected by the interconnect of ``profile``; with ``forget_received``
    a message received is forgotten (a long run's memory then does not grow with the messages
    it sent; :meth:`sent_us` is then known until the message is received)."""

    def __init__(
        self, profile: InterconnectProfile, nodes: int, forget_received: bool = False
    ) -> None:
        if nodes < 2:
            raise ValueError(f"nodes: a network needs at least 2 nodes, got {nodes}")
        self.profile = profile
        self.nodes = nodes
        self.links = Links(profile.bytes_per_us)
        self.now_us = 0.0
        self.forget_received = forget_received
        self._messages: dict[int, _Message] = {}
        self._posted = 0  # messages posted (the next message id)
        self._events: list[tuple[float, int, int, int]] = []  # (time, kind, seq, id)
        self._seq = 0
        self._send_free: dict[tuple[int, int], float] = {}
        self._recv_free: dict[tuple[int, int], float] = {}

    def post(self, src: int, dst: int, message_bytes: int, at_us: float) -> int:
        """Post ``message_bytes`` from node ``src`` to node ``dst`` at ``at_us`` (not before
        the clock); returns the message id.  Its sender CPU is known now:
        :meth:`sent_us` gives when the send completes."""
        if not (0 <= src < self.nodes and 0 <= dst < self.nodes) or src == dst:
            raise ValueError(
                f"src, dst: two different nodes in 0..{self.nodes - 1}, got {src}, {dst}"
            )
        if message_bytes < 0:
            raise ValueError(f"message_bytes: must be >= 0, got {message_bytes}")
        if at_us < self.now_us:
            raise ValueError(f"at_us: {at_us} is before the network's clock {self.now_us}")
        connection = (src, dst)
        start = max(at_us, self._send_free.get(connection, -math.inf))
        sent = start + self.profile.send_cpu_us
        self._send_free[connection] = sent
        message_id = self._posted
        self._posted += 1
        self._messages[message_id] = _Message(message_id, src, dst, message_bytes, at_us, sent)
        self._push(sent, _START, message_id)
        return message_id

    def sent_us(self, message_id: int) -> float:
        """When the sender's CPU work on the message ends (known at post)."""
        return self._messages[message_id].sent_us

    def next_event_us(self) -> float:
        """Time of the next event at the current state (infinity when nothing is pending)."""
        heap = self._events[0][0] if self._events else math.inf
        return min(heap, self.links.next_finish_us())

    def advance(self, until_us: float) -> list[Delivery]:
        """Process every event up to ``until_us`` and move the clock there; returns the
        messages received meanwhile, in order of receipt."""
        if until_us < self.now_us:
            raise ValueError(f"until_us: {until_us} is before the network's clock {self.now_us}")
        received: list[Delivery] = []
        while True:
            flows = self.links.next_finish_us()
            heap = self._events[0][0] if self._events else math.inf
            if min(flows, heap) > until_us or min(flows, heap) == math.inf:
                break
            if flows <= heap:
                self._transmitted(self.links.advance(flows), flows)
                continue
            time, kind, _, message_id = heapq.heappop(self._events)
            # flows due a rounding error after ``time`` may finish on the way there
            self._transmitted(self.links.advance(time), time)
            message = self._messages[message_id]
            if kind == _START:
                self.links.add(message_id, message.src, message.dst, message.size)
            elif kind == _DELIVER:
                connection = (message.src, message.dst)
                start = max(time, self._recv_free.get(connection, -math.inf))
                message.received_us = start + self.profile.recv_cpu_us
                self._recv_free[connection] = message.received_us
                self._push(message.received_us, _RECEIVE, message_id)
            else:
                received.append(self._delivery(message))
                if self.forget_received:
                    del self._messages[message_id]
        if math.isfinite(until_us):
            at = max(until_us, self.links.now_us)
            self._transmitted(self.links.advance(at), at)
            self.now_us = until_us
        else:
            self.now_us = max(self.now_us, self.links.now_us)
        return received

    def _transmitted(self, message_ids: list[int], at_us: float) -> None:
        """The flows of ``message_ids`` left the links at ``at_us``: deliver them after the
        latency."""
        for message_id in message_ids:
            message = self._messages[message_id]
            message.transmitted_us = at_us
            message.delivered_us = at_us + self.profile.latency_us
            self._push(message.delivered_us, _DELIVER, message_id)

    def run(self) -> list[Delivery]:
        """Process every pending event (the clock stops at the last one)."""
        return self.advance(math.inf)

    def _push(self, time: float, kind: int, message_id: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time, kind, self._seq, message_id))

    def _delivery(self, message: _Message) -> Delivery:
        profile = self.profile
        free = message.posted_us if profile.semantics == "async" else message.sent_us
        return Delivery(
            message.message_id,
            message.src,
            message.dst,
            message.size,
            message.posted_us,
            message.sent_us,
            message.transmitted_us,
            message.delivered_us,
            message.received_us,
            profile.send_cpu_us,
            profile.recv_cpu_us,
            free,
        )


def send_one(profile: InterconnectProfile, message_bytes: int) -> Delivery:
    """One message alone between two idle nodes (posted at 0)."""
    network = Network(profile, 2)
    network.post(0, 1, message_bytes, 0.0)
    (delivery,) = network.run()
    return delivery
