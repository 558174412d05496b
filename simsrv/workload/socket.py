"""The server's UDP socket receive buffer.

The server reads the socket when a frame starts [T §3.3.2], so between two reads the queue only
grows; a packet that arrives while the buffer holds ``capacity`` packets is dropped (counted).
``capacity = 0`` means unbounded.  Drops are counted (in all, and those arriving in the run's
measured window), not stored, so the queue costs the packets it holds and nothing per drop.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simsrv.workload.messages import EMPTY


class SocketQueue:
    """FIFO of packets waiting in one socket's receive buffer."""

    def __init__(self, capacity: int = 0, window: tuple[float, float] = (0.0, np.inf)) -> None:
        self.capacity = capacity
        self.window = window
        self._chunks: deque[np.ndarray] = deque()
        self._length = 0
        self.dropped = 0
        """Packets dropped so far because the buffer was full."""
        self.dropped_in_window = 0
        """Of those, the ones arriving in ``window`` ``[t0, t1)`` (s)."""

    def __len__(self) -> int:
        return self._length

    def _drop(self, arrival_s: np.ndarray) -> None:
        t0, t1 = self.window
        self.dropped += len(arrival_s)
        self.dropped_in_window += int(np.count_nonzero((arrival_s >= t0) & (arrival_s < t1)))

    def admit(self, arrived: int, arrival_s: np.ndarray | None) -> None:
        """Count ``arrived`` packets into the buffer after the server has stopped (they are
        never read, so they are not stored): those beyond the capacity are dropped.
        ``arrival_s``: their arrival times in arrival order, needed only when the buffer is
        bounded."""
        space = arrived if not self.capacity else max(self.capacity - self._length, 0)
        if arrived > space:
            self._drop(arrival_s[space:])
        self._length += min(arrived, space)

    def first_tick(self) -> int | None:
        """Client tick of the packet at the head of the queue (None when empty)."""
        return int(self._chunks[0]["tick"][0]) if self._chunks else None

    def deliver(self, messages: np.ndarray) -> None:
        """Enqueue packets (in arrival order) that arrived since the last read."""
        if len(messages) == 0:
            return
        if self.capacity:
            space = max(self.capacity - self._length, 0)
            if len(messages) > space:
                self._drop(messages["arrival_s"][space:])
                messages = messages[:space]
            if len(messages) == 0:
                return
        self._chunks.append(messages)
        self._length += len(messages)

    def start_in(self, block: np.ndarray, end: int) -> int | None:
        """Where the queue's packets start in ``block`` when they are exactly ``block[start:
        end]`` (the same memory: packets released from that block and not read), else None;
        ``end`` when the queue is empty."""
        if not self._chunks:
            return end
        if len(self._chunks) > 1:
            return None
        chunk = self._chunks[0]
        size = block.itemsize
        if chunk.dtype != block.dtype or chunk.strides != (size,) or block.strides != (size,):
            return None
        offset = chunk.__array_interface__["data"][0] - block.__array_interface__["data"][0]
        start = offset // size
        if offset % size or start < 0 or start + len(chunk) != end:
            return None
        return start

    def hold(self, packets: np.ndarray) -> None:
        """Make ``packets`` (in arrival order) the queue's content: the packets the compiled
        loop released and did not read (they include those queued before it ran)."""
        self._chunks.clear()
        if len(packets):
            self._chunks.append(packets)
        self._length = len(packets)

    def deliver_and_read(self, messages: np.ndarray, limit: int) -> np.ndarray:
        """:meth:`deliver` then :meth:`read`, without copying when nothing else is queued."""
        if (
            self._length == 0
            and len(messages) <= limit
            and (not self.capacity or len(messages) <= self.capacity)
        ):
            return messages
        self.deliver(messages)
        return self.read(limit)

    def read(self, limit: int) -> np.ndarray:
        """Dequeue up to ``limit`` packets in arrival order."""
        taken: list[np.ndarray] = []
        need = min(limit, self._length)
        while need:
            head = self._chunks[0]
            if len(head) <= need:
                taken.append(self._chunks.popleft())
                need -= len(head)
            else:
                taken.append(head[:need])
                self._chunks[0] = head[need:]
                need = 0
        out = taken[0] if len(taken) == 1 else (np.concatenate(taken) if taken else EMPTY)
        self._length -= len(out)
        return out
