"""The server's UDP socket receive buffer.

The server reads the socket when a frame starts [T §3.3.2], so between two reads the queue only
grows; a packet that arrives while the buffer holds ``capacity`` packets is dropped (counted).
``capacity = 0`` means unbounded.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simsrv.workload.messages import EMPTY


class SocketQueue:
    """FIFO of packets waiting in one socket's receive buffer."""

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity
        self._chunks: deque[np.ndarray] = deque()
        self._length = 0
        self.dropped_arrival_s: list[np.ndarray] = []

    def __len__(self) -> int:
        return self._length

    @property
    def dropped(self) -> int:
        """Packets dropped so far because the buffer was full."""
        return sum(len(d) for d in self.dropped_arrival_s)

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
                self.dropped_arrival_s.append(messages["arrival_s"][space:])
                messages = messages[:space]
            if len(messages) == 0:
                return
        self._chunks.append(messages)
        self._length += len(messages)

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
