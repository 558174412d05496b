"""Response time: how long a player waits for the server's answer to each packet.

Definitions (``docs/model.md``, "Response time").  A packet that arrives at the server (its
network card: ``arrival_s``; with an interrupt CPU it is readable from the socket only when its
softirq has ended) at ``a`` and is read by the frame that starts at ``s`` and ends at ``e``
(the coordinator's end, s) waits ``s - a``, and its *response time* is ``e - a``:
QuakeWorld sends every reply of a frame in its last stage (``SV_SendClientMessages``), so the
answer to the packet leaves the server by the end of the frame that read it.  A client whose
packets a frame reads gets one reply, which answers all of them (each packet is counted, with
its own arrival).  The measured packets are those read by the frames that start in the
measured window (as every per-frame metric).  Packets without an answer are not in the
distributions: those of a client whose reply the rate limit held in that frame (bandwidth
control) are counted as ``unanswered``; packets the socket dropped are never read (the run's
``dropped_fraction``).

The distributions are kept as exact counts in logarithmic bins, DDSketch's mapping (Masson,
Rim & Lee, "DDSketch: a fast and fully-mergeable quantile sketch with relative-error
guarantees", VLDB 2019): bin ``k >= 1`` holds the values in ``(m * g**(k-2), m * g**(k-1)]``
with ``g = (1 + alpha) / (1 - alpha)``, ``m`` = :data:`MIN_MS`, and bin 0 the values below
``m`` (reported as 0).  A quantile is the estimate of the bin holding its rank, ``2 m
g**(k-1) / (1 + g)``, within a relative error ``alpha`` = :data:`RELATIVE_ACCURACY` of the
exact quantile (of the lower, "inverted CDF" definition), capped by the exact maximum; the mean
and the maximum are exact.  Why not the ``ddsketch`` package: it is Python, and each frame
adds its packets inside the compiled frame loop; the counts here are the same sketch with a
fixed range (1 us to ~3 hours, :data:`BINS` bins, ~18 KiB), compiled, and merged by adding
them (sweep workers, cluster nodes).  Memory does not grow with the run's length.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simsrv.core.compiled import compiled, inlined

RELATIVE_ACCURACY = 0.01
"""``alpha``: a quantile's relative error bound."""
GAMMA = (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY)
LOG_GAMMA = math.log(GAMMA)
MIN_MS = 1e-3
"""Values below 1 us count as 0."""
MAX_MS = 1e7
"""Values above ~2.8 hours share the last bin (their maximum stays exact)."""
BINS = math.ceil(math.log(MAX_MS / MIN_MS) / LOG_GAMMA) + 2
"""Bins per distribution."""
RESPONSE, WAIT = 0, 1
"""Rows of :attr:`ResponseTimes.counts`: response times, and waits in the socket."""
SUM_RESPONSE, SUM_WAIT, MAX_RESPONSE, MAX_WAIT, UNANSWERED = range(5)
"""Entries of :attr:`ResponseTimes.stats`: sums and maxima in ms, unanswered packets."""
STATS = 5
QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
"""The quantiles a summary reports."""


@inlined
def bin_of(value_ms):
    """The bin of a value in ms (see the module docstring)."""
    if value_ms < MIN_MS:
        return 0
    k = int(math.ceil(math.log(value_ms / MIN_MS) / LOG_GAMMA)) + 1
    return min(max(k, 1), BINS - 1)


@compiled
def record_packets(arrival_s, clients, start_s, end_s, frame, held, counts, stats):
    """Add the packets a frame read (their arrival times, s, and clients) to the counts: the
    frame ran from ``start_s`` to ``end_s``; ``held[client] == frame`` marks a client whose
    reply the rate limit held in this frame (its packets are unanswered)."""
    for i in range(len(arrival_s)):
        if held[clients[i]] == frame:
            stats[UNANSWERED] += 1.0
            continue
        response = (end_s - arrival_s[i]) * 1e3
        wait = (start_s - arrival_s[i]) * 1e3
        counts[RESPONSE, bin_of(response)] += 1
        counts[WAIT, bin_of(wait)] += 1
        stats[SUM_RESPONSE] += response
        stats[SUM_WAIT] += wait
        stats[MAX_RESPONSE] = max(stats[MAX_RESPONSE], response)
        stats[MAX_WAIT] = max(stats[MAX_WAIT], wait)


def bin_value_ms(k: np.ndarray | int) -> np.ndarray | float:
    """The estimate of bin ``k``, ms (0 for bin 0)."""
    k = np.asarray(k)
    value = MIN_MS * 2.0 * GAMMA ** (k - 1.0) / (1.0 + GAMMA)
    return np.where(k == 0, 0.0, value)


class ResponseTimes:
    """The response times and socket waits of a run's measured packets (see the module
    docstring): :attr:`counts` (2, :data:`BINS`) int64, :attr:`stats` (:data:`STATS`,)
    float64.  The frame loop adds to them in place; :meth:`merge` adds another's."""

    def __init__(self) -> None:
        self.counts = np.zeros((2, BINS), np.int64)
        self.stats = np.zeros(STATS)

    def merge(self, other: ResponseTimes) -> ResponseTimes:
        """Add ``other``'s packets (the same as one sketch over both); returns self."""
        self.counts += other.counts
        self.stats[[SUM_RESPONSE, SUM_WAIT, UNANSWERED]] += other.stats[
            [SUM_RESPONSE, SUM_WAIT, UNANSWERED]
        ]
        for i in (MAX_RESPONSE, MAX_WAIT):
            self.stats[i] = max(self.stats[i], other.stats[i])
        return self

    @classmethod
    def merged(cls, parts: list[ResponseTimes]) -> ResponseTimes:
        """One sketch of every part's packets."""
        total = cls()
        for part in parts:
            total.merge(part)
        return total

    @property
    def answered(self) -> int:
        """Packets with a response time."""
        return int(self.counts[RESPONSE].sum())

    @property
    def unanswered(self) -> int:
        """Packets whose reply the rate limit held."""
        return int(self.stats[UNANSWERED])

    def quantile(self, row: int, q: float) -> float:
        """The ``q``-quantile of row :data:`RESPONSE` or :data:`WAIT`, ms (the lower
        quantile: the value of rank ``ceil(q * n)``), within :data:`RELATIVE_ACCURACY`; NaN
        without packets."""
        n = self.answered
        if n == 0:
            return math.nan
        rank = max(1, math.ceil(q * n))
        k = int(np.searchsorted(np.cumsum(self.counts[row]), rank))
        top = self.stats[MAX_RESPONSE if row == RESPONSE else MAX_WAIT]
        return float(min(bin_value_ms(k), top))

    def distribution(self, row: int) -> dict[str, float]:
        """``mean``, ``p50``, ``p95``, ``p99``, ``max`` of a row, ms (NaN without packets)."""
        n = self.answered
        total = self.stats[SUM_RESPONSE if row == RESPONSE else SUM_WAIT]
        top = self.stats[MAX_RESPONSE if row == RESPONSE else MAX_WAIT]
        result = {"mean": float(total / n) if n else math.nan}
        result.update({name: self.quantile(row, q) for name, q in QUANTILES.items()})
        result["max"] = float(top) if n else math.nan
        return result

    def summary(self) -> dict[str, Any]:
        """The summary's keys: ``response_time_ms`` and ``socket_wait_ms`` (each
        :meth:`distribution`), ``answered_packets`` and ``unanswered_packets``."""
        return {
            "response_time_ms": self.distribution(RESPONSE),
            "socket_wait_ms": self.distribution(WAIT),
            "answered_packets": self.answered,
            "unanswered_packets": self.unanswered,
        }
