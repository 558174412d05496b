"""The nodes' sockets: every node's socket receive buffer in one bank, compiled.

A cluster's sockets hold every queued packet of a player at one node (the router's rule,
:mod:`.router`), and handing a player over moves its queued packets from one socket to the end
of another.  The bank stores every queued packet of every node in one buffer of slots, each
node's queue as a list of slots in arrival order and each player's queued packets as a list
linked backwards from its last (a node reads its queue in order, so a player's queued packets
are always the last ``count`` of its list, and a read need not touch the list), so that each
operation costs the packets it touches, never a whole queue:

* :meth:`SocketBank.deliver` appends a routed batch (packets in arrival order, each with its
  node) and performs the batch's handoffs at their places in it (before the packet that
  triggered each): a handed-over player's packets are marked dead in the old node's list and
  copied to the end of the new node's;
* :meth:`SocketBank.read` takes a node's first packets, skipping the dead slots;
* :meth:`SocketBank.count_unqueued` counts packets no node will read (those routed once every
  node has stopped), in any order, in their nodes' arrivals in the window and in
  :attr:`~SocketBank.unqueued`, in no node's queue (for when the queues' lengths per node and
  the handoffs no longer matter, only their sum).  The bank can no longer be read then.

A bounded socket (``capacity`` packets) drops, in arrival order, the packets that arrive while
it is full, forwarded packets included; drops are counted (in all, and those arriving in the
measured ``window``).  So each socket reads, in order, exactly what a FIFO queue of chunks would
(:class:`~simsrv.workload.socket.SocketQueue`, from which a handoff takes the player's packets
and appends them to the new node's queue; ``tests/test_cluster_router.py`` checks it against
that reference).

Memory: 45 bytes per slot (the packet) plus 17 (two links, a live flag: :data:`SLOT_BYTES`);
when the slots in use reach the buffer's size it doubles, and its dead slots (read, or moved)
are dropped in place first when they are half of them or more; 16 bytes per player for its
list.  A buffer that grows past :data:`RESERVE_FROM_SLOTS` moves once into arrays of
``reserve`` slots (e.g. every packet the run can deliver): the pages not written yet cost no
memory (the kernel maps a page when it is first written), and it then doubles within them
without copying what it holds.  A smaller buffer is copied when it doubles (a few MB).
"""

from __future__ import annotations

import os

import numpy as np

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.uninitialised import empty
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE

INITIAL_SLOTS = 4096
"""Slots of the buffer before its first growth."""
SLOT_BYTES = MESSAGE_DTYPE.itemsize + 17
"""A slot's bytes: the packet, two links and a live flag."""
MOST_RESERVED_SLOTS = 2**26
"""The most slots reserved (~4 GB of address space, not of memory)."""
RESERVE_FROM_SLOTS = 2**20
"""A buffer growing to this many slots (~62 MB) or more moves into its reserved arrays."""


def most_reserved_slots() -> int:
    """The slots reserved at most: :data:`MOST_RESERVED_SLOTS`, or address space
    for a quarter of this machine's memory if less (a mapping much larger than the memory
    may be refused by the kernel's overcommit rule)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not a POSIX system
        memory = 2**32
    return max(INITIAL_SLOTS, min(MOST_RESERVED_SLOTS, memory // 4 // SLOT_BYTES))


class SocketBank:
    """The socket receive buffers of ``nodes`` nodes serving ``players`` players, each of
    ``capacity`` packets (0: unbounded), counting what arrives in ``window`` ``[t0, t1)`` s;
    ``reserve``: the slots of the arrays a large buffer moves into (at most
    :func:`most_reserved_slots`; e.g. the packets the run can deliver), within which it grows
    without copying."""

    def __init__(
        self,
        nodes: int,
        players: int,
        capacity: int = 0,
        window: tuple[float, float] = (0.0, np.inf),
        reserve: int = INITIAL_SLOTS,
    ) -> None:
        self.capacity = capacity
        self.window = (float(window[0]), float(window[1]))
        self.reserve = min(max(reserve, INITIAL_SLOTS), most_reserved_slots())
        self.buffer = empty(INITIAL_SLOTS, MESSAGE_DTYPE)
        self.node_next = empty(INITIAL_SLOTS, np.int64)
        self.client_previous = empty(INITIAL_SLOTS, np.int64)
        self.live = empty(INITIAL_SLOTS, np.bool_)
        self.size = INITIAL_SLOTS
        """The buffer's size: the slots in use reaching it, the buffer is compacted or grows."""
        self.used = 0
        """Slots written so far (the next packet goes to slot ``used``)."""
        self.counted_only = False
        """Whether packets were counted in without being stored (:meth:`count_unqueued`)."""
        self.unqueued = 0
        """Packets counted in no node's queue (:meth:`count_unqueued`)."""
        self.head = np.full(nodes, -1, dtype=np.int64)
        """Each node's first slot not read yet (-1: empty)."""
        self.tail = np.full(nodes, -1, dtype=np.int64)
        self.length = np.zeros(nodes, dtype=np.int64)
        """Packets queued at each node."""
        self.last = np.full(players, -1, dtype=np.int64)
        """Each player's last queued slot (-1: none since its list last started)."""
        self.count = np.zeros(players, dtype=np.int64)
        """Each player's queued packets (at the node that holds them): the last ``count`` of
        its list."""
        self.dropped = np.zeros(nodes, dtype=np.int64)
        """Packets each node dropped because its buffer was full."""
        self.dropped_in_window = np.zeros(nodes, dtype=np.int64)
        """Of those, the ones arriving in ``window``."""
        self.arrived_in_window = np.zeros(nodes, dtype=np.int64)
        """Packets delivered to each node from clients (not forwarded) arriving in ``window``."""

    def socket(self, node: int) -> NodeSocket:
        """Node ``node``'s socket."""
        return NodeSocket(self, node)

    def deliver(
        self,
        arrived: np.ndarray,
        owner: np.ndarray,
        handoffs: np.ndarray,
        moves_bound: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Append ``arrived`` (arrival order) to the queues of their ``owner`` nodes, and
        before packet ``handoffs[k, 0]`` move player ``handoffs[k, 1]``'s queued packets from
        node ``handoffs[k, 2]`` to node ``handoffs[k, 3]`` (rows in order).  ``moves_bound``:
        at most that many packets are moved in all.  Returns the packets each handoff moved
        and the nodes whose socket got a packet (routed, or moved to it)."""
        n = len(arrived)
        self._make_room(n + moves_bound)
        start = self.used
        self.buffer[start : start + n] = arrived
        forwarded = np.zeros(len(handoffs), dtype=np.int64)
        touched = np.zeros(len(self.head), dtype=np.bool_)
        self.used = _deliver(
            self.buffer,
            self.node_next,
            self.client_previous,
            self.live,
            start,
            n,
            owner,
            handoffs,
            self.head,
            self.tail,
            self.length,
            self.last,
            self.count,
            self.capacity,
            self.window[0],
            self.window[1],
            self.dropped,
            self.dropped_in_window,
            self.arrived_in_window,
            forwarded,
            touched,
        )
        return forwarded, touched

    def count_unqueued(self, owner: np.ndarray, arrival_s: np.ndarray) -> None:
        """Count packets no node will read (going to nodes ``owner``, arriving at
        ``arrival_s`` s; any order) in each node's arrivals in the window and in
        :attr:`unqueued`.  Nothing can be read from the bank afterwards."""
        self.counted_only = True
        t0, t1 = self.window
        inside = (arrival_s >= t0) & (arrival_s < t1)
        self.arrived_in_window += np.bincount(owner[inside], minlength=len(self.head))
        self.unqueued += len(owner)

    def read(self, node: int, limit: int) -> np.ndarray:
        """Dequeue up to ``limit`` of node ``node``'s packets, in its queue's order (a copy)."""
        assert not self.counted_only, "the bank has been counted into: nothing can be read"
        if self.length[node] == 0 or limit <= 0:
            return EMPTY
        slots = _read(
            node,
            min(limit, int(self.length[node])),
            self.buffer["client"],
            self.node_next,
            self.live,
            self.head,
            self.tail,
            self.length,
            self.last,
            self.count,
        )
        return np.take(self.buffer, slots)  # several times faster than indexing records

    def _make_room(self, extra: int) -> None:
        """Room for ``extra`` more slots.  When the buffer is full: if half its slots in use or
        more are dead, drop them in place; then, if the slots in use fill more than half of
        it, double its size (within the arrays allocated, or into new ones: the slots in use
        are copied, the fresh ones are written before they are read).  Each slot is so moved
        a bounded number of times on average."""
        size = self.size
        if self.used + extra <= size:
            return
        if 2 * (self.used - int(self.length.sum())) >= self.used:
            self.used = _compact(
                self.buffer,
                self.node_next,
                self.client_previous,
                self.live,
                self.used,
                self.head,
                self.tail,
                self.last,
                self.count,
            )
            if self.used + extra <= size // 2:
                return
        grown = max(2 * size, 2 * (self.used + extra))
        if self.used + extra <= len(self.buffer):  # within the arrays allocated
            self.size = min(grown, len(self.buffer))
            return
        slots = grown if grown < RESERVE_FROM_SLOTS else max(grown, self.reserve)
        self.size = grown
        kept = self.used
        buffer = empty(slots, MESSAGE_DTYPE)
        buffer[:kept] = self.buffer[:kept]
        node_next = empty(slots, np.int64)
        node_next[:kept] = self.node_next[:kept]
        client_previous = empty(slots, np.int64)
        client_previous[:kept] = self.client_previous[:kept]
        live = empty(slots, np.bool_)
        live[:kept] = self.live[:kept]
        self.buffer, self.node_next, self.client_previous, self.live = (
            buffer,
            node_next,
            client_previous,
            live,
        )


class NodeSocket:
    """One node's socket in a :class:`SocketBank`: its queue's length, reads and counts."""

    def __init__(self, bank: SocketBank, node: int) -> None:
        self.bank = bank
        self.node = node

    def __len__(self) -> int:
        return int(self.bank.length[self.node])

    def read(self, limit: int) -> np.ndarray:
        """Dequeue up to ``limit`` packets in arrival order."""
        return self.bank.read(self.node, limit)

    @property
    def dropped(self) -> int:
        """Packets dropped so far because the buffer was full."""
        return int(self.bank.dropped[self.node])

    @property
    def dropped_in_window(self) -> int:
        """Of those, the ones arriving in the measured window."""
        return int(self.bank.dropped_in_window[self.node])

    @property
    def arrived_in_window(self) -> int:
        """Packets delivered from clients (not forwarded) arriving in the measured window."""
        return int(self.bank.arrived_in_window[self.node])


@borrowing
def _append(node, slot, c, node_next, client_previous, head, tail, length, last, count):
    """Link ``slot`` (player ``c``'s packet) at the end of node ``node``'s queue and of the
    player's list."""  # pragma: no cover - compiled
    node_next[slot] = -1
    if tail[node] >= 0:
        node_next[tail[node]] = slot
    else:
        head[node] = slot
    tail[node] = slot
    length[node] += 1
    client_previous[slot] = last[c]
    last[c] = slot
    count[c] += 1


@compiled
def _deliver(  # pragma: no cover - compiled
    buffer,
    node_next,
    client_previous,
    live,
    start,
    n,
    owner,
    handoffs,
    head,
    tail,
    length,
    last,
    count,
    capacity,
    t0,
    t1,
    dropped,
    dropped_in_window,
    arrived_in_window,
    forwarded,
    touched,
):
    """:meth:`SocketBank.deliver` on the batch in slots ``start .. start + n``; returns the
    slots used (the moved packets' copies follow the batch)."""
    used = start + n
    k = 0
    for i in range(n):
        while k < len(handoffs) and handoffs[k, 0] == i:  # the handoffs before packet i
            c, src, dst = handoffs[k, 1], handoffs[k, 2], handoffs[k, 3]
            moved = count[c]
            queued = empty(moved, np.int64)  # its packets, all at ``src``, in order
            slot = last[c]
            for j in range(moved - 1, -1, -1):
                queued[j] = slot
                slot = client_previous[slot]
            last[c] = -1  # the player's list starts again at ``dst``
            count[c] = 0
            length[src] -= moved
            for j in range(moved):
                slot = queued[j]
                live[slot] = False
                if capacity > 0 and length[dst] >= capacity:
                    dropped[dst] += 1
                    if t0 <= buffer[slot].arrival_s < t1:
                        dropped_in_window[dst] += 1
                else:
                    buffer[used] = buffer[slot]
                    live[used] = True
                    _append(dst, used, c, node_next, client_previous, head, tail, length, last,
                            count)  # fmt: skip
                    used += 1
            forwarded[k] = moved
            if moved:
                touched[dst] = True
            k += 1
        slot = start + i
        o = owner[i]
        touched[o] = True
        inside = t0 <= buffer[slot].arrival_s < t1
        if inside:
            arrived_in_window[o] += 1
        if capacity > 0 and length[o] >= capacity:
            live[slot] = False
            dropped[o] += 1
            if inside:
                dropped_in_window[o] += 1
            continue
        live[slot] = True
        _append(o, slot, buffer[slot].client, node_next, client_previous, head, tail, length,
                last, count)  # fmt: skip
    return used


@compiled
def _read(  # pragma: no cover - compiled
    node, want, clients, node_next, live, head, tail, length, last, count
):
    """The slots of node ``node``'s next ``want`` live packets (``want`` at most its length),
    taken off its queue and their players' lists (each the first of its player's queued
    packets, so the list's links are left as they are)."""
    slots = empty(want, np.int64)
    taken = 0
    slot = head[node]
    while taken < want:
        if live[slot]:
            live[slot] = False
            c = clients[slot]
            count[c] -= 1
            if count[c] == 0:
                last[c] = -1
            slots[taken] = slot
            taken += 1
        slot = node_next[slot]
    length[node] -= taken
    while slot >= 0 and not live[slot]:  # the dead slots after the last one read
        slot = node_next[slot]
    head[node] = slot
    if slot < 0:
        tail[node] = -1
    return slots


@compiled
def _compact(  # pragma: no cover - compiled
    buffer, node_next, client_previous, live, used, head, tail, last, count
):
    """Move the live slots of ``0 .. used`` to the front, in order, in place, and renumber
    the lists (the dead slots leave the nodes' queues, and a player's list starts at its
    first live slot); returns the live slots' count."""
    renumber = empty(used, np.int64)
    kept = 0
    for slot in range(used):
        if live[slot]:
            renumber[slot] = kept
            kept += 1
    new_node_next = np.full(kept, -1, np.int64)
    for node in range(len(head)):
        slot = head[node]
        previous = -1
        new_head = -1
        while slot >= 0:
            if live[slot]:
                new = renumber[slot]
                if previous < 0:
                    new_head = new
                else:
                    new_node_next[previous] = new
                previous = new
            slot = node_next[slot]
        head[node] = new_head
        tail[node] = previous
    for c in range(len(last)):
        last[c] = renumber[last[c]] if count[c] > 0 else -1
    for slot in range(used):  # forward: a slot moves to a place already read
        if live[slot]:
            new = renumber[slot]
            before = client_previous[slot]
            client_previous[new] = renumber[before] if before >= 0 and live[before] else -1
            if new != slot:
                buffer[new] = buffer[slot]
    node_next[:kept] = new_node_next
    live[:kept] = True
    return kept
