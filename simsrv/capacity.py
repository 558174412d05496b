"""Server capacity: the most clients a scenario's server keeps up with [R §5, MODEL.md §2-3].

The rule of the area-based parallel QuakeWorld report and of AB04: raise the client count in
steps (8 clients) until the server is overloaded, and report the largest count before that.
A count is **met** when

* replies/s >= ``min_reply_ratio`` (default 0.8) x the packets/s the clients offer
  (``clients x clients.rate_hz``: a client expects a reply to each request), and
* at most ``max_dropped`` (0.2) of the packets that reached the socket were dropped.

Each count is one run of the scenario with ``players.count`` replaced (same seed: the
counts are paired).  The search stops at the first count that fails; points already run are
kept (the caller gets them even when a later run is interrupted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from simsrv.defaults import MAX_DROPPED, MIN_REPLY_RATIO
from simsrv.result import run
from simsrv.scenario.load import load_scenario

POINT_COLUMNS = ("clients", "replies_per_s", "offered_per_s", "dropped_fraction", "met")
"""Columns of :attr:`Capacity.points`: clients; replies/s; offered packets/s; dropped share of
the packets that reached the socket; whether the count met the rule."""


@dataclass
class Capacity:
    """The result of a capacity search (``capacity_clients`` 0: even the first count failed)."""

    capacity_clients: int = 0
    points: list[dict] = field(default_factory=list)
    complete: bool = False

    def frame(self) -> pd.DataFrame:
        """The points as a tidy DataFrame (:data:`POINT_COLUMNS`)."""
        return pd.DataFrame(self.points, columns=list(POINT_COLUMNS))

    def to_json(self) -> dict:
        """``{"capacity_clients": N, "points": [...], "complete": bool}``."""
        return {
            "capacity_clients": self.capacity_clients,
            "points": self.points,
            "complete": self.complete,
        }


def find_capacity(
    path: str | None,
    overrides: list[str],
    *,
    start: int = 8,
    step: int = 8,
    max_clients: int = 1024,
    min_reply_ratio: float = MIN_REPLY_RATIO,
    on_point: Callable[[dict], None] | None = None,
    result: Capacity | None = None,
) -> Capacity:
    """Search upward from ``start`` clients in steps of ``step`` (see the module docstring).

    ``on_point`` is called with each point as soon as it is measured; ``result`` (optional) is
    filled in place, so a caller keeps the points measured before an interruption.
    """
    result = result if result is not None else Capacity()
    clients = start
    while clients <= max_clients:
        scenario = load_scenario(path, [*overrides, f"players.count={clients}"])
        summary = run(scenario).summary
        offered = clients * scenario.clients.rate_hz
        met = (
            summary["replies_per_s"] >= min_reply_ratio * offered
            and summary["dropped_fraction"] <= MAX_DROPPED
        )
        point = {
            "clients": clients,
            "replies_per_s": summary["replies_per_s"],
            "offered_per_s": offered,
            "dropped_fraction": summary["dropped_fraction"],
            "met": bool(met),
        }
        result.points.append(point)
        if on_point is not None:
            on_point(point)
        if not met:
            break
        result.capacity_clients = clients
        clients += step
    result.complete = True
    return result
