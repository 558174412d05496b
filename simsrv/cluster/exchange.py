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
:mod:`simsrv.cluster.actions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from simsrv.interconnect import Delivery, InterconnectProfile, Network
from simsrv.machine.plan import Compute, FramePlan
from simsrv.machine.plan_arrays import PlanArrays

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


class Exchange:
    """The interconnect of ``nodes`` nodes and what each node still has to pay for."""

    def __init__(self, profile: InterconnectProfile, nodes: int) -> None:
        self.profile = profile
        self.nodes = nodes
        self.network = Network(profile, nodes) if nodes > 1 else None
        self.posted: list[Posted] = []
        self.deliveries: dict[int, Delivery] = {}
        self._due: list[dict[str, float]] = [{} for _ in range(nodes)]
        self._received = [0] * nodes
        self._requests: list[list[Posted]] = [[] for _ in range(nodes)]

    def post(self, kind: str, src: int, dst: int, message_bytes: int, at_s: float, items: int):
        """Post a message at ``at_s`` s; its send CPU is due on ``src``'s next frame."""
        assert self.network is not None, "one node has nobody to send to"
        message_id = self.network.post(src, dst, message_bytes, at_s * 1e6)
        self.posted.append(Posted(message_id, kind, src, dst, message_bytes, at_s, items))
        self._charge(src, f"{kind}_send", self.profile.send_cpu_us)
        return message_id

    def advance(self, t_s: float) -> None:
        """Move the network to ``t_s`` s (never backwards); messages received meanwhile owe
        their receive CPU to the receiver's next frame."""
        if self.network is None or t_s * 1e6 <= self.network.now_us:
            return
        for delivery in self.network.advance(t_s * 1e6):
            self.deliveries[delivery.message_id] = delivery
            kind = self.posted[delivery.message_id].kind
            self._charge(delivery.dst, f"{kind}_recv", delivery.recv_cpu_us)
            self._received[delivery.dst] += 1
            if kind == "action":
                self._requests[delivery.dst].append(self.posted[delivery.message_id])

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
    (a plan as arrays with ops becomes the same plan as objects, the ops prepended)."""
    if not ops:
        return plan
    if type(plan) is PlanArrays:
        plan = plan.to_plan()
    main = plan.threads[0]
    return plan._replace(threads=(main._replace(ops=ops + main.ops), *plan.threads[1:]))
