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
    """Per-client ``cleartime`` state for ``n`` clients at ``rate_bytes_per_s`` each; the rule
    is applied by the frame loop's :func:`simsrv.frame_steps.kernels.build`."""

    def __init__(self, n: int, rate_bytes_per_s: float) -> None:
        self.rate = rate_bytes_per_s
        self.cleartime_s = np.zeros(n)
