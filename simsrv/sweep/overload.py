"""Which grid points overload the server: the ``overloaded`` flag of the summary tables.

A point is overloaded when, averaged over its seeds, the server answers fewer than
:data:`~simsrv.core.defaults.OVERLOAD_REPLY_RATIO` (95 %) of the packets the clients offer
(``replies_per_s < 0.95 * offered_per_s``, both per simulated second) or its socket drops more
than :data:`~simsrv.core.defaults.OVERLOAD_DROPPED` (1 %) of the packets that reached it.  Such a
point measures a saturated server: its frames/s and messages/frame describe a queue that grows,
not a steady state.  Assumption: every packet deserves a reply, so with bandwidth control
(``clients.bandwidth_control``) the replies it chokes count as unanswered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from simsrv.core.defaults import OVERLOAD_DROPPED, OVERLOAD_REPLY_RATIO

NEEDED = ("replies_per_s", "offered_per_s", "dropped_fraction")
"""Columns of a ``runs`` table the flag needs (:mod:`simsrv.sweep.records`)."""


def is_overloaded(replies_per_s: float, offered_per_s: float, dropped_fraction: float) -> bool:
    """True when the replies fall below 95 % of the offered packets/s or more than 1 % of the
    arrived packets are dropped (NaN inputs count as not overloaded)."""
    short = offered_per_s > 0 and replies_per_s < OVERLOAD_REPLY_RATIO * offered_per_s
    dropping = dropped_fraction > OVERLOAD_DROPPED
    return bool(short or dropping)


def point_overloaded(means: Mapping[str, float]) -> bool:
    """:func:`is_overloaded` of a point's mean metrics (``NEEDED`` keys); False if one is NaN."""
    values = [float(means[name]) for name in NEEDED]
    if any(math.isnan(v) for v in values):
        return False
    return is_overloaded(*values)


def overloaded_column(runs: pd.DataFrame) -> bool:
    """Whether ``runs`` has the columns the flag needs."""
    return all(name in runs for name in NEEDED)
