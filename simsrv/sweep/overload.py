"""Which grid points overload the server: the ``overloaded`` flag of the summary tables.

A point is overloaded when, averaged over its seeds, the server answers fewer than
:data:`~simsrv.core.defaults.OVERLOAD_REPLY_RATIO` (95 %) of the packets the clients offer
(``replies_per_s < 0.95 * offered_per_s``, both per simulated second), or its socket drops more
than :data:`~simsrv.core.defaults.OVERLOAD_DROPPED` (1 %) of the packets that reached it, or the
95th percentile of its response time exceeds
:data:`~simsrv.core.defaults.OVERLOAD_RESPONSE_FRAMES` client frames (``response_p95_ms >
client_period_ms``: a player sends its next packet before the answer to this one leaves; a
table without these columns, e.g. a store written before they existed, is judged without this
rule).  Such a point measures a saturated server: its packets queue a frame or more, its
frames/s and messages/frame describe a queue, not a server keeping up.  Assumption: every
packet deserves a reply, so with bandwidth control
(``clients.bandwidth_control``) the replies it chokes count as unanswered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from simsrv.core.defaults import OVERLOAD_DROPPED, OVERLOAD_REPLY_RATIO, OVERLOAD_RESPONSE_FRAMES

NEEDED = ("replies_per_s", "offered_per_s", "dropped_fraction")
"""Columns of a ``runs`` table the flag needs (:mod:`simsrv.sweep.records`)."""
RESPONSE = ("response_p95_ms", "client_period_ms")
"""Columns of the response-time rule, used where the table has them."""


def is_overloaded(
    replies_per_s: float,
    offered_per_s: float,
    dropped_fraction: float,
    response_p95_ms: float = math.nan,
    client_period_ms: float = math.nan,
) -> bool:
    """True when the replies fall below 95 % of the offered packets/s, more than 1 % of the
    arrived packets are dropped, or the 95th-percentile response time exceeds one client frame
    (NaN inputs count as not overloaded)."""
    short = offered_per_s > 0 and replies_per_s < OVERLOAD_REPLY_RATIO * offered_per_s
    dropping = dropped_fraction > OVERLOAD_DROPPED
    slow = response_p95_ms > OVERLOAD_RESPONSE_FRAMES * client_period_ms
    return bool(short or dropping or slow)


def point_overloaded(means: Mapping[str, float]) -> bool:
    """:func:`is_overloaded` of a point's mean metrics (``NEEDED`` keys, and ``RESPONSE``'s
    where present); False if a needed one is NaN."""
    values = [float(means[name]) for name in NEEDED]
    if any(math.isnan(v) for v in values):
        return False
    response = [float(means[name]) if name in means else math.nan for name in RESPONSE]
    return is_overloaded(*values, *response)


def overloaded_column(runs: pd.DataFrame) -> bool:
    """Whether ``runs`` has the columns the flag needs."""
    return all(name in runs for name in NEEDED)
