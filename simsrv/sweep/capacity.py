"""Server capacity: the most clients a scenario's server keeps up with [R §5, MODEL.md §2-3].

The rule of the area-based parallel QuakeWorld report and of AB04: raise the client count in
steps (8 clients) until the server is overloaded, and report the largest count before that.
A count is **met** when

* replies/s >= ``min_reply_ratio`` (default 0.8) x the packets/s the clients offer
  (``clients x clients.rate_hz``: a client expects a reply to each request), and
* at most ``max_dropped`` (0.2) of the packets that reached the socket were dropped, and
* with ``max_response_ms`` (what players feel, :mod:`simsrv.workload.response_time`): the
  response time's ``quantile`` (0.5, 0.95 or 0.99; default 0.95) is at most that many ms.

Each count is one run of the scenario with ``players.count`` replaced (same seed: the
counts are paired).  Two searches (``search``):

* ``linear`` (the protocol of the papers): ``start``, ``start + step``, ... up to
  ``max_clients``; it stops at the first count that fails.
* ``bisect`` (for large clusters, where a linear search takes hundreds of runs): doubles the
  count from ``start`` until one fails (or ``max_clients`` met), then bisects between the last
  count met and the first that failed until they are ``step`` apart (counts stay multiples of
  ``step`` above the last met).  It assumes a count above a failed one fails too, and reports
  the largest count met with the smallest failed count at most ``step`` above it.

Points already run are kept (the caller gets them even when a later run is interrupted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from simsrv.core.defaults import MAX_DROPPED, MIN_REPLY_RATIO
from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.scenario.schema import Scenario

POINT_COLUMNS = (
    "clients",
    "replies_per_s",
    "offered_per_s",
    "dropped_fraction",
    "response_ms",
    "met",
)
"""Columns of :attr:`Capacity.points`: clients; replies/s; offered packets/s; dropped share of
the packets that reached the socket; the response time's quantile of the rule, ms; whether the
count met the rule."""
RESPONSE_QUANTILES = {0.5: "p50", 0.95: "p95", 0.99: "p99"}
"""The response-time quantiles a rule may use (those of the run's summary)."""


def response_key(quantile: float) -> str:
    """The summary's key of a response-time quantile (:data:`RESPONSE_QUANTILES`)."""
    if quantile not in RESPONSE_QUANTILES:
        allowed = ", ".join(f"{q:g}" for q in RESPONSE_QUANTILES)
        raise InputError(f"--quantile: must be one of {allowed}, got {quantile:g}")
    return RESPONSE_QUANTILES[quantile]


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


SEARCHES = ("linear", "bisect")
"""Capacity searches (module docstring)."""
COUNT_NAMES = ("start", "step", "max_clients")
"""How :func:`check_counts` names the counts by default (the keyword arguments here)."""


def check_counts(
    start: int, step: int, max_clients: int, names: tuple[str, str, str] = COUNT_NAMES
) -> None:
    """The one rule on a search's client counts, for every way of giving them (``simsrv
    capacity --start/--step/--max``, a sweep file's ``[capacity]``, the Python functions):
    each is a whole number >= 1 and ``start <= max_clients`` (a search that starts above its
    largest count measures nothing).  ``names`` are the caller's names of the three, so the
    :class:`InputError` names the field as the user wrote it."""
    for value, name in zip((start, step, max_clients), names, strict=True):
        if value < 1:
            raise InputError(f"{name}: must be a whole number >= 1, got {value}")
    if start > max_clients:
        raise InputError(f"{names[0]}: must be <= {names[2]} ({max_clients}), got {start}")


def find_capacity(
    path: str | None,
    overrides: list[str],
    *,
    start: int = 8,
    step: int = 8,
    max_clients: int = 1024,
    min_reply_ratio: float = MIN_REPLY_RATIO,
    max_response_ms: float | None = None,
    quantile: float = 0.95,
    search: str = "linear",
    on_point: Callable[[dict], None] | None = None,
    result: Capacity | None = None,
) -> Capacity:
    """Search from ``start`` clients (see the module docstring) on the scenario file ``path``
    with ``overrides``.

    ``on_point`` is called with each point as soon as it is measured; ``result`` (optional) is
    filled in place, so a caller keeps the points measured before an interruption.
    """

    def scenario_for(clients: int) -> Scenario:
        return load_scenario(path, [*overrides, f"players.count={clients}"])

    return search_capacity(
        scenario_for,
        start=start,
        step=step,
        max_clients=max_clients,
        min_reply_ratio=min_reply_ratio,
        max_response_ms=max_response_ms,
        quantile=quantile,
        search=search,
        on_point=on_point,
        result=result,
    )


def search_capacity(
    scenario_for: Callable[[int], Scenario],
    *,
    start: int = 8,
    step: int = 8,
    max_clients: int = 1024,
    min_reply_ratio: float = MIN_REPLY_RATIO,
    max_response_ms: float | None = None,
    quantile: float = 0.95,
    search: str = "linear",
    on_point: Callable[[dict], None] | None = None,
    result: Capacity | None = None,
    describe: Callable[[Scenario, dict], dict] | None = None,
) -> Capacity:
    """:func:`find_capacity` on the scenarios ``scenario_for(clients)``;
    ``describe(scenario, summary)`` (optional) adds its fields to each point (e.g. a
    cluster's interconnect traffic)."""
    if search not in SEARCHES:
        raise InputError(f"search: unknown {search!r}; allowed: {', '.join(SEARCHES)}")
    check_counts(start, step, max_clients)
    rule = Rule(min_reply_ratio, max_response_ms, response_key(quantile))
    result = result if result is not None else Capacity()

    def met(clients: int) -> bool:
        point = measure(scenario_for(clients), clients, rule, describe)
        result.points.append(point)
        if on_point is not None:
            on_point(point)
        if point["met"]:
            result.capacity_clients = max(result.capacity_clients, clients)
        return point["met"]

    if search == "linear":
        clients = start
        while clients <= max_clients and met(clients):
            clients += step
    else:
        low, high = 0, None  # largest count met, smallest count failed
        clients = start
        while True:
            if not met(clients):
                high = clients
                break
            low = clients
            if clients >= max_clients:
                break
            clients = min(2 * clients, max_clients)
        while high is not None and high - low > step:
            middle = low + max(1, (high - low) // 2 // step) * step
            if met(middle):
                low = middle
            else:
                high = middle
    result.complete = True
    return result


@dataclass(frozen=True)
class Rule:
    """What a met count needs (module docstring): replies/s of at least ``min_reply_ratio``
    of the offered packets/s, and, when ``max_response_ms`` is set, the response time's
    quantile ``response`` (a summary key: ``p95`` ...) at most that many ms."""

    min_reply_ratio: float = MIN_REPLY_RATIO
    max_response_ms: float | None = None
    response: str = "p95"


def measure(
    scenario: Scenario,
    clients: int,
    rule: Rule,
    describe: Callable[[Scenario, dict], dict] | None = None,
) -> dict:
    """One point of a search: run ``scenario`` (with ``clients`` players) and apply the rule."""
    summary = run(scenario).summary
    offered = clients * scenario.clients.rate_hz
    response = summary["response_time_ms"][rule.response]
    met = (
        summary["replies_per_s"] >= rule.min_reply_ratio * offered
        and summary["dropped_fraction"] <= MAX_DROPPED
        and (rule.max_response_ms is None or response <= rule.max_response_ms)
    )
    return {
        "clients": clients,
        "replies_per_s": summary["replies_per_s"],
        "offered_per_s": offered,
        "dropped_fraction": summary["dropped_fraction"],
        "response_ms": response,
        "met": bool(met),
        **(describe(scenario, summary) if describe is not None else {}),
    }
