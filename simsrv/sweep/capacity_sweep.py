"""Capacity over a sweep: one capacity search (:mod:`simsrv.sweep.capacity`) per point and seed.

A capacity sweep file is a sweep file (:mod:`simsrv.sweep.spec`: ``base``, ``seeds``, ``set``,
``grid``, ``zip``) with a ``[capacity]`` table (:class:`~simsrv.sweep.spec.CapacitySettings`):
each run of the sweep is the search on its scenario, ``players.count`` varied; with
``per_node = true`` the search's ``start``, ``step`` and ``max`` are multiplied by the run's
``cluster.nodes`` (1 without a ``[cluster]`` section), so one file covers 1 to 16 nodes.
``sweeps/cluster-capacity.toml`` is one (capacity against nodes).

Tables (tidy, one row per run / per point):

* :func:`capacity_rows`: the point's varied parameters by dotted name, ``seed_index``,
  ``seed``, ``nodes``, ``capacity_clients`` (largest count met; 0 if none),
  ``capacity_per_node``, ``runs`` (counts tried), ``complete``, ``wall_time_s``;
* the points of every search (:data:`simsrv.sweep.capacity.POINT_COLUMNS` plus the run's columns);
* :func:`capacity_summary`: per point, ``capacity_clients`` and ``capacity_per_node`` mean,
  95 % Student CI half-width (:func:`simsrv.sweep.statistics.ci95_half_width`) and ``n``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from simsrv.pipeline.load import apply_override, build_scenario
from simsrv.scenario.schema import Scenario
from simsrv.sweep.capacity import search_capacity
from simsrv.sweep.local import run_parallel
from simsrv.sweep.spec import CapacitySettings, Sweep, SweepRun
from simsrv.sweep.statistics import ci95_half_width


def nodes_of(scenario: Scenario) -> int:
    """Server nodes of a scenario (1 without a ``[cluster]`` section)."""
    return scenario.cluster.nodes if scenario.cluster is not None else 1


def with_clients(scenario: Scenario, clients: int) -> Scenario:
    """``scenario`` with ``players.count = clients`` (rebuilt and validated)."""
    raw = copy.deepcopy(scenario.to_dict())
    apply_override(raw, f"players.count={clients}")
    return build_scenario(raw)


def cluster_details(scenario: Scenario, summary: dict[str, Any]) -> dict[str, float]:
    """What a capacity point adds for a cluster (``describe`` of
    :func:`~simsrv.sweep.capacity.search_capacity`; zeros and ones for a single server):
    ``interconnect_bytes_per_s``, ``interconnect_messages_per_s``, ``handoffs_per_s``,
    ``mirrored_share``, ``added_reply_latency_ms`` (docs/cluster.md); ``clients_imbalance``
    (the most players a node serves over the mean, 1: even); ``worst_node_reply_ratio``
    (the smallest replies/s over offered packets/s of a node: the node that falls behind
    first); ``exchange_time_share`` (the share of the nodes' time spent sending and receiving
    interconnect messages, mean over nodes)."""
    link = summary.get("interconnect", {})
    nodes = summary.get("nodes", [])
    rate = scenario.clients.rate_hz
    clients = [n["clients"] for n in nodes]
    ratios = [n["replies_per_s"] / (n["clients"] * rate) for n in nodes if n["clients"] > 0]
    breakdown = summary.get("time_breakdown", {})
    return {
        "interconnect_bytes_per_s": float(link.get("bytes_per_s", 0.0)),
        "interconnect_messages_per_s": float(link.get("messages_per_s", 0.0)),
        "handoffs_per_s": float(link.get("handoffs_per_s", 0.0)),
        "mirrored_share": float(link.get("mirrored_share", 0.0)),
        "added_reply_latency_ms": float(link.get("added_reply_latency_ms", 0.0)),
        "clients_imbalance": max(clients) / (sum(clients) / len(clients)) if clients else 1.0,
        "worst_node_reply_ratio": min(ratios) if ratios else float("nan"),
        "exchange_time_share": float(
            sum(v for k, v in breakdown.items() if k.startswith(("mirror_", "handoff_")))
        ),
    }


def search_run(job: tuple[SweepRun, CapacitySettings]) -> tuple[dict[str, Any], list[dict]]:
    """The capacity search of one sweep run: its row and its points (module docstring)."""
    run_, settings = job
    nodes = nodes_of(run_.scenario)
    scale = nodes if settings.per_node else 1
    start = time.perf_counter()
    found = search_capacity(
        lambda clients: with_clients(run_.scenario, clients),
        start=settings.start * scale,
        step=settings.step * scale,
        max_clients=settings.max * scale,
        min_reply_ratio=settings.min_reply_ratio,
        max_response_ms=settings.max_response_ms,
        quantile=settings.quantile,
        search=settings.search,
        describe=cluster_details,
    )
    head = run_.columns()
    row = {
        **head,
        "nodes": nodes,
        "capacity_clients": found.capacity_clients,
        "capacity_per_node": found.capacity_clients / nodes,
        "runs": len(found.points),
        "complete": found.complete,
        "wall_time_s": time.perf_counter() - start,
    }
    return row, [{**head, **point} for point in found.points]


def run_capacity_sweep(
    sweep: Sweep,
    workers: int = 1,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every search of ``sweep`` (which has a ``[capacity]`` table): the rows and the points
    (module docstring), in the sweep's order.  A search that raised is left out and reported
    through ``on_done`` as a row with its ``error``.  Interrupted, it raises
    :class:`CapacitySweepInterrupted` with the searches that had finished."""
    assert sweep.capacity is not None, "the sweep file has no [capacity] table"
    jobs = [(r, sweep.capacity) for r in sweep.runs]
    results: dict[int, tuple[dict[str, Any], list[dict]]] = {}

    def done(index: int, result: tuple[dict[str, Any], list[dict]]) -> None:
        results[index] = result
        if on_done is not None:
            on_done(result[0])

    def failure(index: int, error: BaseException) -> tuple[dict[str, Any], list[dict]]:
        return {**sweep.runs[index].columns(), "error": f"{type(error).__name__}: {error}"}, []

    try:
        run_parallel(jobs, search_run, workers, done, failure)
    except KeyboardInterrupt:
        raise CapacitySweepInterrupted(*search_tables(results), len(jobs)) from None
    return search_tables(results)


class CapacitySweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a capacity sweep: ``rows`` and ``points`` of the searches
    that had finished (tables as :func:`run_capacity_sweep` returns them) out of ``total``."""

    def __init__(self, rows: pd.DataFrame, points: pd.DataFrame, total: int) -> None:
        super().__init__()
        self.rows, self.points, self.total = rows, points, total


def search_tables(
    results: dict[int, tuple[dict[str, Any], list[dict]]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows and the points of finished searches (``{job index: (row, points)}``), in the
    jobs' order; a row with an ``error`` (a search that raised) is left out."""
    ordered = [results[i] for i in sorted(results) if "error" not in results[i][0]]
    rows = pd.DataFrame([r for r, _ in ordered])
    points = pd.DataFrame([p for _, ps in ordered for p in ps])
    return rows, points


def capacity_summary(rows: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Mean, 95 % CI half-width and ``n`` of ``capacity_clients`` and ``capacity_per_node``
    per point (the ``by`` columns), points in their order of appearance."""
    out = []
    for key, group in rows.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        entry = dict(zip(by, key, strict=True))
        for metric in ("capacity_clients", "capacity_per_node"):
            values = group[metric].to_numpy(dtype=float)
            entry[f"{metric}_mean"] = float(values.mean())
            entry[f"{metric}_ci95"] = ci95_half_width(values)
        entry["n"] = len(group)
        out.append(entry)
    return pd.DataFrame(out)
