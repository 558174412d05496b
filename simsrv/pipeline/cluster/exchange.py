"""Messages between nodes and the CPU they cost each end, charged in the nodes' frames.

Every message goes through the interconnect model [V] (:class:`simsrv.interconnect.Network`):
posted at a time ``t`` s, it costs the sender ``send_cpu_us`` and the receiver
``recv_cpu_us`` and reaches the receiver after ``send + bytes / bandwidth + latency + recv``
(on idle links).  Synchronisation assumption (docs/cluster.md): nodes exchange at frame
boundaries.  A node pays the send CPU of what it posts as a ``Compute`` of its next frame's
coordinator (``mirror_send``, ``handoff_send``), before the strategy's work; it pays the
receive CPU of the messages received (``received_us``) before one of its frames starts as a
``Compute`` of that frame (``mirror_recv``, ``handoff_recv``, ...).  Messages are never
charged twice; a message still in flight at the end of the run is never charged to its
receiver.  A cross-border action request (kind ``action``) waits, once received, in its
receiver's :meth:`Exchange.take_requests` until that node answers it (kind ``action_reply``,
:mod:`simsrv.pipeline.cluster.actions`).

The interconnect metrics of the measured window are digested as messages are posted and
received (:class:`ExchangeDigest`); the messages themselves are kept only when asked (``keep``:
:attr:`Exchange.posted` and :attr:`Exchange.deliveries`, for tests and inspection), and the
network forgets a message once it is received.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simsrv.interconnect import Delivery, InterconnectProfile, Network
from simsrv.machine.plan import Compute, FramePlan
from simsrv.machine.plan_arrays import COMPUTE, PlanArrays
from simsrv.metrics.kahan import ExactSum

KINDS = ("mirror", "handoff", "action", "action_reply")
"""Message kinds (``action``: a cross-border action's request, ``action_reply``: its answer);
their activities are ``<kind>_recv`` and ``<kind>_send``."""


@dataclass(frozen=True)
class Posted:
    """One message: ``kind``, nodes, ``message_bytes``, ``posted_s`` and ``items`` (entity
    states for a mirror message, forwarded packets for a handoff)."""

    message_id: int
    kind: str
    src: int
    dst: int
    message_bytes: int
    posted_s: float
    items: int


@dataclass
class ExchangeDigest:
    """The measured window's ``[t0_s, t1_s)`` messages, digested as they are posted and
    received (:func:`simsrv.pipeline.cluster.metrics.interconnect_metrics`): counts and integer sums
    of the messages posted in it, and the exact sums (:class:`~simsrv.metrics.kahan.ExactSum`)
    of the latencies of its mirror messages and of the round trips of its action requests,
    received by the end of the run."""

    t0_s: float
    t1_s: float
    messages: int = 0
    message_bytes: int = 0
    action_items: int = 0
    mirror_latency_us: ExactSum = field(default_factory=ExactSum)
    mirrors_received: int = 0
    round_trip_us: ExactSum = field(default_factory=ExactSum)
    round_trips: int = 0

    def inside(self, t_s: float) -> bool:
        """Whether ``t_s`` is in the window."""
        return self.t0_s <= t_s < self.t1_s

    def posted(self, message: Posted) -> None:
        if self.inside(message.posted_s):
            self.messages += 1
            self.message_bytes += message.message_bytes
            if message.kind == "action":
                self.action_items += message.items

    def received(self, message: Posted, delivery: Delivery, request_s: float | None) -> None:
        """``message`` was received; an action reply answers a request posted at
        ``request_s`` s."""
        if message.kind == "mirror" and self.inside(message.posted_s):
            self.mirror_latency_us.add([delivery.latency_us])
            self.mirrors_received += 1
        if request_s is not None and self.inside(request_s):
            self.round_trip_us.add([delivery.received_us - request_s * 1e6])
            self.round_trips += 1


class Exchange:
    """The interconnect of ``nodes`` nodes and what each node still has to pay for; its
    messages digested over the measured ``window`` (s) and kept with ``keep``."""

    def __init__(
        self,
        profile: InterconnectProfile,
        nodes: int,
        window: tuple[float, float] = (0.0, float("inf")),
        keep: bool = False,
    ) -> None:
        self.profile = profile
        self.nodes = nodes
        self.network = Network(profile, nodes, forget_received=True) if nodes > 1 else None
        self.keep = keep
        self.digest = ExchangeDigest(*window)
        self.posted: list[Posted] = []
        """Every message posted, in posting order (with ``keep``)."""
        self.deliveries: dict[int, Delivery] = {}
        """Message id -> its delivery, for the messages received (with ``keep``)."""
        self.posted_count = 0
        """Messages posted so far."""
        self._in_flight: dict[int, Posted] = {}
        self._request_s: dict[int, float] = {}  # action reply id -> its request's post time
        self._due: list[dict[str, float]] = [{} for _ in range(nodes)]
        self._received = [0] * nodes
        self._requests: list[list[Posted]] = [[] for _ in range(nodes)]

    def post(
        self,
        kind: str,
        src: int,
        dst: int,
        message_bytes: int,
        at_s: float,
        items: int,
        answers: Posted | None = None,
    ) -> int:
        """Post a message at ``at_s`` s (an action reply: ``answers`` its request); its send
        CPU is due on ``src``'s next frame.  Returns its id."""
        assert self.network is not None, "one node has nobody to send to"
        message_id = self.network.post(src, dst, message_bytes, at_s * 1e6)
        message = Posted(message_id, kind, src, dst, message_bytes, at_s, items)
        self._in_flight[message_id] = message
        self.posted_count += 1
        if answers is not None:
            self._request_s[message_id] = answers.posted_s
        if self.keep:
            self.posted.append(message)
        self.digest.posted(message)
        self._charge(src, f"{kind}_send", self.profile.send_cpu_us)
        return message_id

    def advance(self, t_s: float) -> None:
        """Move the network to ``t_s`` s (never backwards); messages received meanwhile owe
        their receive CPU to the receiver's next frame."""
        if self.network is None or t_s * 1e6 <= self.network.now_us:
            return
        for delivery in self.network.advance(t_s * 1e6):
            message = self._in_flight.pop(delivery.message_id)
            if self.keep:
                self.deliveries[delivery.message_id] = delivery
            self.digest.received(message, delivery, self._request_s.pop(message.message_id, None))
            kind = message.kind
            self._charge(delivery.dst, f"{kind}_recv", delivery.recv_cpu_us)
            self._received[delivery.dst] += 1
            if kind == "action":
                self._requests[delivery.dst].append(message)

    def take_ops(self, node: int) -> tuple[Compute, ...]:
        """The ``Compute`` ops ``node`` owes now (receives first, then sends), and forget them."""
        due, self._due[node] = self._due[node], {}
        order = [f"{k}_recv" for k in KINDS] + [f"{k}_send" for k in KINDS]
        return tuple(Compute(a, due[a]) for a in order if due.get(a, 0.0) > 0)

    def take_requests(self, node: int) -> list[Posted]:
        """The action requests ``node`` received since the last call, in arrival order."""
        requests, self._requests[node] = self._requests[node], []
        return requests

    def take_received(self, node: int) -> int:
        """Messages ``node`` received since the last call."""
        count, self._received[node] = self._received[node], 0
        return count

    def _charge(self, node: int, activity: str, cost_us: float) -> None:
        due = self._due[node]
        due[activity] = due.get(activity, 0.0) + cost_us


def with_ops(plan: FramePlan | PlanArrays, ops: tuple[Compute, ...]) -> FramePlan | PlanArrays:
    """``plan`` with ``ops`` run first by its coordinator (thread 0); the same plan if none
    (a plan as arrays stays arrays: the ops become its first rows)."""
    if not ops:
        return plan
    if type(plan) is PlanArrays:
        activities = list(plan.activities)
        for op in ops:
            if op.activity not in activities:
                activities.append(op.activity)
        k = len(ops)
        return plan._replace(
            thread=np.concatenate([np.zeros(k, np.int64), plan.thread]),
            kind=np.concatenate([np.full(k, COMPUTE, np.int8), plan.kind]),
            cost=np.concatenate([[op.cost_us for op in ops], plan.cost]),
            arg=np.concatenate([np.full(k, -1, np.int64), plan.arg]),
            activity=np.concatenate([[activities.index(op.activity) for op in ops], plan.activity]),
            activities=tuple(activities),
        )
    main = plan.threads[0]
    return plan._replace(threads=(main._replace(ops=ops + main.ops), *plan.threads[1:]))
