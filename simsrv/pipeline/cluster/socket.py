"""A node's socket: the server socket queue plus what a cluster needs of it."""

from __future__ import annotations

import numpy as np

from simsrv.workload.messages import EMPTY
from simsrv.workload.socket import SocketQueue


class NodeSocket(SocketQueue):
    """:class:`SocketQueue` that counts the packets delivered to it from clients in the
    measured ``window`` (not those forwarded from another node, already counted there) and can
    hand one client's queued packets over."""

    def __init__(self, capacity: int = 0, window: tuple[float, float] = (0.0, np.inf)) -> None:
        super().__init__(capacity, window)
        self.arrived_in_window = 0

    def deliver_new(self, messages: np.ndarray) -> None:
        """Deliver packets arriving from clients (counted when they arrive in the window)."""
        if len(messages):
            arrival = messages["arrival_s"]
            t0, t1 = self.window
            self.arrived_in_window += int(np.count_nonzero((arrival >= t0) & (arrival < t1)))
        self.deliver(messages)

    def take_client(self, client: int) -> np.ndarray:
        """Remove and return ``client``'s queued packets, in arrival order."""
        taken, kept = [], []
        for chunk in self._chunks:
            mine = chunk["client"] == client
            if mine.any():
                taken.append(chunk[mine])
                if not mine.all():
                    kept.append(chunk[~mine])
            else:
                kept.append(chunk)
        self._chunks.clear()
        self._chunks.extend(kept)
        out = np.concatenate(taken) if taken else EMPTY
        self._length -= len(out)
        return out
