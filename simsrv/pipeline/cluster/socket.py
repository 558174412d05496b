"""A node's socket: the server socket queue plus what a cluster needs of it.

The cluster's sockets hold every queued packet of a player at one node (the router's rule,
:mod:`.router`), so handing a player over moves its queued packets from one socket to
another.  To make that cost the packets moved and not the queue, each socket stores its
packets in one buffer in arrival order and links each player's packets in a list
(:class:`QueuedPackets`, shared by the nodes' sockets: a player's list lives in the socket that
holds its packets).  A read takes the buffer's live packets from the head, in order; a handoff
walks the player's list, marks its packets dead in the old buffer and appends them to the new
one.  The packets a socket reads, the order it reads them in and what a bounded socket drops
are those of a FIFO queue of chunks (:class:`~simsrv.workload.socket.SocketQueue`) from which
a handoff removes the player's packets.

Memory: the buffer's packets (48 bytes each) plus 9 bytes per buffer slot (link, live flag);
the buffer grows by doubling and is compacted when its read head passes half of it; 20 bytes
per player for the lists.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE

INITIAL_SLOTS = 1024
"""Slots of a socket's buffer before its first growth."""


class QueuedPackets:
    """Per player: its first and last queued packet (slots in the buffer of the socket that
    holds them, -1 if none) and how many it has queued, for ``players`` players."""

    def __init__(self, players: int) -> None:
        self.first = np.full(players, -1, dtype=np.int64)
        self.last = np.full(players, -1, dtype=np.int64)
        self.count = np.zeros(players, dtype=np.int32)


class NodeSocket:
    """A node's socket receive buffer, its players' lists in ``queued`` (``capacity``
    packets, 0: unbounded; drops counted as :class:`~simsrv.workload.socket.SocketQueue`
    does): packets delivered in arrival order, read FIFO, and one player's queued packets
    taken out (:meth:`take_client`).  Counts the
    packets delivered from clients in the measured ``window`` (not those forwarded from another
    node, already counted there)."""

    def __init__(
        self,
        queued: QueuedPackets,
        capacity: int = 0,
        window: tuple[float, float] = (0.0, np.inf),
    ) -> None:
        self.queued = queued
        self.capacity = capacity
        self.window = window
        self.dropped = 0
        """Packets dropped so far because the buffer was full."""
        self.dropped_in_window = 0
        """Of those, the ones arriving in ``window`` ``[t0, t1)`` (s)."""
        self.arrived_in_window = 0
        self._buffer = np.zeros(INITIAL_SLOTS, dtype=MESSAGE_DTYPE)
        self._next = np.full(INITIAL_SLOTS, -1, dtype=np.int64)
        self._live = np.zeros(INITIAL_SLOTS, dtype=np.bool_)
        self._head = 0  # first slot not read yet
        self._tail = 0  # first free slot
        self._length = 0  # live packets in [head, tail)

    def __len__(self) -> int:
        return self._length

    def deliver_new(self, messages: np.ndarray) -> None:
        """Deliver packets arriving from clients (counted when they arrive in the window)."""
        if len(messages):
            arrival = messages["arrival_s"]
            t0, t1 = self.window
            self.arrived_in_window += int(np.count_nonzero((arrival >= t0) & (arrival < t1)))
        self.deliver(messages)

    def deliver(self, messages: np.ndarray) -> None:
        """Enqueue packets (in arrival order); those beyond the capacity are dropped."""
        if len(messages) == 0:
            return
        if self.capacity:
            space = max(self.capacity - self._length, 0)
            if len(messages) > space:
                arrival = messages["arrival_s"][space:]
                t0, t1 = self.window
                self.dropped += len(arrival)
                self.dropped_in_window += int(np.count_nonzero((arrival >= t0) & (arrival < t1)))
                messages = messages[:space]
            if len(messages) == 0:
                return
        self._make_room(len(messages))
        tail = self._tail
        self._buffer[tail : tail + len(messages)] = messages
        q = self.queued
        _link(self._next, self._live, tail, messages["client"], q.first, q.last, q.count)
        self._tail = tail + len(messages)
        self._length += len(messages)

    def read(self, limit: int) -> np.ndarray:
        """Dequeue up to ``limit`` packets in arrival order (a copy)."""
        if self._length == 0 or limit <= 0:
            return EMPTY
        q = self.queued
        slots, self._head = _read(
            self._buffer["client"],
            self._next,
            self._live,
            self._head,
            self._tail,
            min(limit, self._length),
            q.first,
            q.last,
            q.count,
        )
        self._length -= len(slots)
        if len(slots) and slots[-1] - slots[0] == len(slots) - 1:  # no dead slot between
            return self._buffer[slots[0] : slots[-1] + 1].copy()
        return self._buffer[slots]

    def take_client(self, client: int) -> np.ndarray:
        """Remove and return ``client``'s queued packets, in arrival order."""
        q = self.queued
        if q.count[client] == 0:
            return EMPTY
        slots = _unlink(client, self._next, self._live, q.first, q.last, q.count)
        self._length -= len(slots)
        return self._buffer[slots]

    def _make_room(self, extra: int) -> None:
        """Room for ``extra`` more packets at the tail: compact, then grow by doubling."""
        size = len(self._buffer)
        if self._tail + extra <= size:
            return
        if self._head:
            q = self.queued
            head, tail = self._head, self._tail
            _shift(self._buffer["client"], self._next, self._live, head, tail, q.first, q.last)
            used = tail - head
            self._buffer[:used] = self._buffer[head:tail]
            self._next[:used] = self._next[head:tail]
            self._live[:used] = self._live[head:tail]
            self._head, self._tail = 0, used
            if self._tail + extra <= size and self._tail <= size // 2:
                return
        grown = max(2 * size, self._tail + extra)
        buffer = np.zeros(grown, dtype=MESSAGE_DTYPE)
        buffer[: self._tail] = self._buffer[: self._tail]
        links = np.full(grown, -1, dtype=np.int64)
        links[: self._tail] = self._next[: self._tail]
        live = np.zeros(grown, dtype=np.bool_)
        live[: self._tail] = self._live[: self._tail]
        self._buffer, self._next, self._live = buffer, links, live


@compiled
def _link(links, live, tail, clients, first, last, count):  # pragma: no cover - compiled
    """Append the packets of ``clients`` at slots ``tail, tail + 1, ...`` to their players'
    lists."""
    for k in range(len(clients)):
        slot = tail + k
        c = clients[k]
        live[slot] = True
        links[slot] = -1
        if count[c] == 0:
            first[c] = slot
        else:
            links[last[c]] = slot
        last[c] = slot
        count[c] += 1


@compiled
def _read(clients, links, live, head, tail, want, first, last, count):  # pragma: no cover
    """The slots of the next ``want`` live packets from ``head`` (each its player's first),
    taken off their lists; returns them and the new head."""
    slots = empty(want, np.int64)
    taken = 0
    slot = head
    while taken < want and slot < tail:
        if live[slot]:
            live[slot] = False
            c = clients[slot]
            count[c] -= 1
            if count[c] == 0:
                first[c] = -1
                last[c] = -1
            else:
                first[c] = links[slot]
            slots[taken] = slot
            taken += 1
        slot += 1
    while slot < tail and not live[slot]:  # the head skips the dead slots after the last read
        slot += 1
    return slots[:taken], slot


@compiled
def _unlink(client, links, live, first, last, count):  # pragma: no cover - compiled
    """The slots of ``client``'s queued packets, in order, marked dead; its list emptied."""
    slots = empty(count[client], np.int64)
    slot = first[client]
    for k in range(len(slots)):
        slots[k] = slot
        live[slot] = False
        slot = links[slot]
    first[client] = -1
    last[client] = -1
    count[client] = 0
    return slots


@compiled
def _shift(clients, links, live, head, tail, first, last):  # pragma: no cover - compiled
    """Renumber the live packets' slots ``head..tail`` to start at 0 (their links and their
    players' first and last)."""
    for slot in range(head, tail):
        if live[slot]:
            c = clients[slot]
            if first[c] == slot:
                first[c] = slot - head
            if last[c] == slot:
                last[c] = slot - head
            if links[slot] >= 0:
                links[slot] -= head
