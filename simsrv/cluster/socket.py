"""A node's socket: the server socket queue plus what a cluster needs of it."""

from __future__ import annotations

import numpy as np

from simsrv.workload.messages import EMPTY
from simsrv.workload.socket import SocketQueue


class NodeSocket(SocketQueue):
    """:class:`SocketQueue` that records the arrival times of the packets delivered to it
    (not of those forwarded from another node, already counted there) and can hand one
    client's queued packets over."""

    def __init__(self, capacity: int = 0) -> None:
        super().__init__(capacity)
        self.arrivals_s: list[np.ndarray] = []

    def deliver_new(self, messages: np.ndarray) -> None:
        """Deliver packets arriving from clients (their arrival times are recorded)."""
        if len(messages):
            self.arrivals_s.append(messages["arrival_s"])
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

    def arrival_times_s(self) -> np.ndarray:
        """Arrival times of every packet delivered from clients, s."""
        return np.concatenate(self.arrivals_s) if self.arrivals_s else np.zeros(0)
