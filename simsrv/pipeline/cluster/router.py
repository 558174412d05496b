"""Routing client packets to the node that serves their player, and handoffs.

A packet of tick ``k`` goes to the owner of its player at tick ``k`` (the zone where the
player was when it sent it).  When a player's owner changes (it crossed a border), the player
is handed over at the arrival of its first packet for the new node: its queued packets at the
old node are taken out of the old socket and re-queued, in order, at the new node at once,
and one message of ``handoff_bytes + forwarded x FORWARDED_PACKET_BYTES`` goes from the old
node to the new one (the client state and the forwarded packets).  So exactly one node holds a
player's unread packets at any time, and no packet is lost or read twice.  The new node's
frame builder takes the player's last executed tick (command accounting) from the old one.
Packets whose tick is no longer kept (after the run stopped) go to the player's current node,
or, for a player none of whose packets was routed before, to its owner at the last kept tick.

A batch is routed in compiled passes and no Python per packet: :func:`_owners` finds each
packet's node, :func:`_handoffs` the handoffs (in arrival order), then the socket bank
appends the packets and moves the handed-over players' packets at their places
(:meth:`SocketBank.deliver`); the handoffs' messages are then posted in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.core.compiled import compiled, inlined_allocating, row_kernel
from simsrv.core.row_split import split_rows
from simsrv.core.uninitialised import empty
from simsrv.pipeline.cluster.exchange import Exchange
from simsrv.pipeline.cluster.socket import SocketBank
from simsrv.pipeline.cluster.zones import ZonedWorld
from simsrv.workload.frame import FrameBuilder

FORWARDED_PACKET_BYTES = 36
"""A QuakeWorld ``clc_move`` packet (8-byte netchan header, checksum, loss byte, three
delta-compressed user commands of up to ~8 bytes each): a few tens of bytes."""


@dataclass(frozen=True)
class Handoff:
    """Player ``client`` handed from node ``src`` to ``dst`` at ``t_s`` with ``forwarded``
    queued packets."""

    t_s: float
    client: int
    src: int
    dst: int
    forwarded: int


class Router:
    """Puts released packets into the sockets (``bank``) of the nodes serving their players."""

    def __init__(
        self,
        zoned: ZonedWorld,
        bank: SocketBank,
        builders: list[FrameBuilder],
        exchange: Exchange,
        handoff_bytes: int,
    ) -> None:
        self.zoned = zoned
        self.bank = bank
        self.builders = builders
        self.exchange = exchange
        self.handoff_bytes = handoff_bytes
        self.nodes = len(builders)
        self.serving = np.full(zoned.players, -1, dtype=np.int64)
        self.served = np.zeros(self.nodes, dtype=np.int64)
        """Players each node serves (whose packets go to it): from a player's first packet."""
        self.handoffs: list[Handoff] = []
        """Every handoff (when the exchange keeps its messages)."""
        self.handoffs_in_window = 0
        """Handoffs in the exchange's measured window."""
        self.touched: set[int] = set()
        """Nodes whose socket got packets (the caller clears it)."""
        self._seen = np.zeros(zoned.players, dtype=np.int64)  # scratch of :func:`_handoffs`

    def owners(self, arrived: np.ndarray, serving: np.ndarray | None = None) -> np.ndarray:
        """The node each of ``arrived`` goes to (module docstring), without routing them;
        ``serving``: the players' nodes to use (a copy of :attr:`serving` taken earlier, so
        that packets routed in pieces get the nodes one batch would)."""
        return self.owners_of(arrived["client"], arrived["tick"], serving)

    def owners_of(
        self, clients: np.ndarray, ticks: np.ndarray, serving: np.ndarray | None = None
    ) -> np.ndarray:
        """:meth:`owners` of the packets of ``clients`` at ``ticks``."""
        if self.nodes == 1:
            return np.zeros(len(clients), dtype=np.int64)
        zoned = self.zoned
        owner = empty(len(clients), np.int64)
        split_rows(
            _owners,
            len(clients),
            clients,
            ticks,
            zoned.owner_ring,
            zoned.first_tick,
            zoned.last_tick,
            self.serving if serving is None else serving,
            owner,
        )
        return owner

    def count_unqueued(self, clients: np.ndarray, ticks: np.ndarray, arrival_s: np.ndarray) -> None:
        """Count, in their nodes' arrivals and in the bank's :attr:`~SocketBank.unqueued`,
        packets no node will read and whose handoffs no longer matter (the run's end, its
        messages not kept: they would be posted after the measured window), in any order:
        each goes to the node one batch of them would send it to (:meth:`owners`)."""
        self.bank.count_unqueued(self.owners_of(clients, ticks), arrival_s)

    def route(
        self, arrived: np.ndarray, t_s: float | np.ndarray, owner: np.ndarray | None = None
    ) -> None:
        """Deliver ``arrived`` (in arrival order) at time ``t_s`` s, or each packet at its
        own time (``t_s`` an array: when its handoff, if any, is posted); ``owner``: their
        nodes if already known (:meth:`owners`)."""
        if len(arrived) == 0:
            return
        if owner is None:
            owner = self.owners(arrived)
        if self.nodes == 1:
            self.bank.deliver(arrived, owner, NO_HANDOFFS, 0)
            self.touched.add(0)
            return
        handoffs, bound = _handoffs(
            arrived["client"], owner, self.serving, self.served, self.bank.count, self._seen
        )
        forwarded, touched = self.bank.deliver(arrived, owner, handoffs, bound)
        self.touched.update(np.flatnonzero(touched).tolist())
        times = np.broadcast_to(np.asarray(t_s, dtype=float), len(arrived))
        digest = self.exchange.digest
        for (i, client, src, dst), moved in zip(handoffs.tolist(), forwarded.tolist(), strict=True):
            at = float(times[i])
            size = self.handoff_bytes + FORWARDED_PACKET_BYTES * moved
            self.exchange.post("handoff", src, dst, size, at, moved)
            self.builders[dst].last_tick[client] = self.builders[src].last_tick[client]
            if self.exchange.keep:
                self.handoffs.append(Handoff(at, client, src, dst, moved))
            self.handoffs_in_window += digest.inside(at)


NO_HANDOFFS = np.zeros((0, 4), dtype=np.int64)


@compiled
def first_packets(owner, nodes):  # pragma: no cover - compiled
    """The index of each node's first packet in ``owner`` (the packets' nodes), -1 if none:
    (nodes,) int64."""
    first = np.full(nodes, -1, np.int64)
    left = nodes
    for i in range(len(owner)):
        node = owner[i]
        if first[node] < 0:
            first[node] = i
            left -= 1
            if left == 0:
                break
    return first


@row_kernel
def _owners(
    lo, hi, clients, ticks, ring, first_tick, last_tick, serving, owner
):  # pragma: no cover
    """The node of packets ``lo .. hi``, to ``owner``: of a kept tick (``first_tick ..
    last_tick``, row ``tick % len(ring)``), its player's owner then; of another tick, the
    player's node (``serving``), or, for a player never routed, its owner at the last kept
    tick."""
    keep = len(ring)
    for i in range(lo, hi):
        c = clients[i]
        tick = ticks[i]
        if first_tick <= tick <= last_tick:
            owner[i] = ring[tick % keep, c]
        elif serving[c] >= 0:
            owner[i] = serving[c]
        else:
            owner[i] = ring[last_tick % keep, c]


@compiled
def _handoffs(clients, owner, serving, served, count, seen):  # pragma: no cover - compiled
    """The handoffs ``(packet, player, from, to)`` of a batch going to ``owner``, in arrival
    order (``serving`` and ``served`` updated), and a bound on the packets they move
    (``count``: each player's queued packets; ``seen``: zeros, a scratch per player, left
    zero).  A packet whose node differs from the node of its player's previous packet (or,
    for its first in the batch, from the player's node before the batch, if any) hands the
    player over before it."""
    handoffs = empty((16, 4), np.int64)
    made = 0
    bound = 0
    for i in range(len(clients)):
        c = clients[i]
        o = owner[i]
        current = serving[c]
        if current < 0:  # first sight of the player: no handoff
            serving[c] = o
            served[o] += 1
        elif current != o:
            if made == len(handoffs):
                handoffs = _grown(handoffs, made)
            handoffs[made, 0] = i
            handoffs[made, 1] = c
            handoffs[made, 2] = current
            handoffs[made, 3] = o
            made += 1
            bound += count[c] + seen[c]
            serving[c] = o
            served[current] -= 1
            served[o] += 1
        seen[c] += 1
    for i in range(len(clients)):
        seen[clients[i]] = 0
    return handoffs[:made], bound


@inlined_allocating
def _grown(array, used):  # pragma: no cover - compiled
    out = empty((2 * len(array), array.shape[1]), array.dtype)
    out[:used] = array[:used]
    return out
