"""QuakeWorld's per-client reply rate limit (bandwidth control), as in ``net_chan.c``.

Each client connection has a ``cleartime``.  A reply may be sent when
``cleartime < now + MAX_BACKUP / rate`` (``Netchan_CanPacket``); sending ``b`` bytes sets
``cleartime = max(cleartime, now) + b / rate`` (``Netchan_Transmit``).  A held reply is a
*choke*.  ``now`` is the frame's start time (QuakeWorld's ``realtime`` is fixed for a frame).
"""

from __future__ import annotations

import numpy as np

MAX_BACKUP_BYTES = 200.0
"""``MAX_BACKUP`` of QuakeWorld's ``net_chan.c``: bytes of backlog a channel may run ahead."""


class BandwidthControl:
    """Per-client ``cleartime`` state for ``n`` clients at ``rate_bytes_per_s`` each."""

    def __init__(self, n: int, rate_bytes_per_s: float) -> None:
        self.rate = rate_bytes_per_s
        self.cleartime_s = np.zeros(n)

    def allow(self, clients: np.ndarray, sizes_bytes: np.ndarray, now_s: float) -> np.ndarray:
        """Which of ``clients`` (unique ids) may get their reply now; charges the ones sent.

        Returns
        -------
        (len(clients),) bool: True = sent, False = choked.
        """
        clear = self.cleartime_s[clients]
        ok = clear < now_s + MAX_BACKUP_BYTES / self.rate
        sent = clients[ok]
        self.cleartime_s[sent] = np.maximum(clear[ok], now_s) + sizes_bytes[ok] / self.rate
        return ok
