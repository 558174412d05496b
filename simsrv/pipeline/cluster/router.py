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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.pipeline.cluster.exchange import Exchange
from simsrv.pipeline.cluster.socket import NodeSocket
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
    """Puts released packets into the sockets of the nodes serving their players."""

    def __init__(
        self,
        zoned: ZonedWorld,
        sockets: list[NodeSocket],
        builders: list[FrameBuilder],
        exchange: Exchange,
        handoff_bytes: int,
    ) -> None:
        self.zoned = zoned
        self.sockets = sockets
        self.builders = builders
        self.exchange = exchange
        self.handoff_bytes = handoff_bytes
        self.serving = np.full(zoned.players, -1, dtype=np.int64)
        self.served = np.zeros(len(sockets), dtype=np.int64)
        """Players each node serves (whose packets go to it): from a player's first packet."""
        self.handoffs: list[Handoff] = []
        """Every handoff (when the exchange keeps its messages)."""
        self.handoffs_in_window = 0
        """Handoffs in the exchange's measured window."""
        self.touched: set[int] = set()
        """Nodes whose socket got packets (the caller clears it)."""

    def route(self, arrived: np.ndarray, t_s: float) -> None:
        """Deliver ``arrived`` (in arrival order) at time ``t_s`` s."""
        if len(self.sockets) == 1:
            self.sockets[0].deliver_new(arrived)
            if len(arrived):
                self.touched.add(0)
            return
        if len(arrived) == 0:
            return
        owner = self._owners(arrived)
        clients = arrived["client"]
        changes = np.flatnonzero(self._changes(clients, owner))
        if len(changes) == 0:
            self._deliver(arrived, owner)
            return
        # a handoff needs its two sockets up to date (the packets before it delivered); the
        # other sockets take their packets later, in one piece: each socket sees the same
        # appends and removals in the same order
        pending = _Pending(arrived, owner, len(self.sockets))
        for i in changes.tolist():
            client, dst = int(clients[i]), int(owner[i])
            src = int(self.serving[client])
            for node in (src, dst):
                self._deliver_new(node, pending.take(node, i))
            self._hand_over(client, dst, t_s)
        for node in range(len(self.sockets)):
            self._deliver_new(node, pending.take(node, len(arrived)))

    def _owners(self, arrived: np.ndarray) -> np.ndarray:
        owner = self.serving[arrived["client"]].copy()
        ticks = arrived["tick"]
        for tick in np.unique(ticks).tolist():
            at = self.zoned.owner_at(tick)
            if at is not None:
                rows = ticks == tick
                owner[rows] = at[arrived["client"][rows]]
        unseen = owner < 0  # a player's first packets, of ticks no longer kept
        if unseen.any():
            owner[unseen] = self.zoned.last_owner()[arrived["client"][unseen]]
        return owner

    def _changes(self, clients: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """Packets whose owner differs from that of the player's previous packet."""
        order = np.argsort(clients, kind="stable")
        c, o = clients[order], owner[order]
        previous = self.serving[c].copy()
        same = np.zeros(len(c), dtype=bool)
        same[1:] = c[1:] == c[:-1]
        previous[1:][same[1:]] = o[:-1][same[1:]]
        change = np.zeros(len(c), dtype=bool)
        change[order] = (previous != o) & (previous >= 0)
        unseen = ~same & (previous < 0)
        self.serving[c[unseen]] = o[unseen]  # first sight of a player: no handoff
        self.served += np.bincount(o[unseen], minlength=len(self.served))
        return change

    def _deliver(self, messages: np.ndarray, owner: np.ndarray) -> None:
        """Deliver ``messages`` (arrival order) to their ``owner`` nodes' sockets."""
        if len(messages) == 0:
            return
        if (owner == owner[0]).all():
            self._deliver_new(int(owner[0]), messages)
            return
        order = np.argsort(owner, kind="stable")
        ordered = messages[order]
        ends = np.cumsum(np.bincount(owner, minlength=len(self.sockets)))
        start = 0
        for node, end in enumerate(ends.tolist()):
            self._deliver_new(node, ordered[start:end])
            start = end

    def _deliver_new(self, node: int, messages: np.ndarray) -> None:
        if len(messages):
            self.sockets[node].deliver_new(messages)
            self.touched.add(node)

    def _hand_over(self, client: int, dst: int, t_s: float) -> None:
        src = int(self.serving[client])
        forwarded = self.sockets[src].take_client(client)
        size = self.handoff_bytes + FORWARDED_PACKET_BYTES * len(forwarded)
        self.exchange.post("handoff", src, dst, size, t_s, len(forwarded))
        self.sockets[dst].deliver(forwarded)
        if len(forwarded):
            self.touched.add(dst)
        self.builders[dst].last_tick[client] = self.builders[src].last_tick[client]
        self.serving[client] = dst
        self.served[src] -= 1
        self.served[dst] += 1
        if self.exchange.keep:
            self.handoffs.append(Handoff(t_s, client, src, dst, len(forwarded)))
        self.handoffs_in_window += self.exchange.digest.inside(t_s)


class _Pending:
    """The packets of one route call not yet delivered, per node: node ``n``'s are
    ``arrived[positions]`` for its positions (ascending) from its cursor on."""

    def __init__(self, arrived: np.ndarray, owner: np.ndarray, nodes: int) -> None:
        order = np.argsort(owner, kind="stable")
        self.arrived = arrived
        self.positions = order
        ends = np.cumsum(np.bincount(owner, minlength=nodes))
        self.cursor = np.concatenate([[0], ends[:-1]])
        self.end = ends

    def take(self, node: int, before: int) -> np.ndarray:
        """Node ``node``'s pending packets at positions before ``before``, in arrival order."""
        lo, hi = int(self.cursor[node]), int(self.end[node])
        if lo == hi:
            return self.arrived[:0]
        stop = lo + int(np.searchsorted(self.positions[lo:hi], before))
        self.cursor[node] = stop
        return self.arrived[self.positions[lo:stop]]
