"""Metrics of a cluster run (``simsrv run --json`` with ``[cluster]``), measured window only.

* Per node (``nodes``, one object per node): its single-server summary's ``frames_per_s``,
  ``replies_per_s``, ``messages_per_frame`` (client packets read per frame),
  ``messages_per_s``, ``parallel_fraction``, ``cpu_utilization``, ``dropped_fraction``,
  ``response_time_ms`` (its packets, from their arrival at the node to the end of the frame
  that read them, without the border latency below);
  ``clients`` (mean players in its zone over the window's ticks);
  ``interconnect_messages_per_frame`` (messages it posted as mirrors plus messages it
  received, per frame) and ``mirrored_per_frame`` (entity states it sent per frame).
* ``interconnect``: messages posted in the window: ``bytes_per_s``, ``messages_per_s``;
  ``handoffs_per_s``; ``mirrored_share`` (entity states sent to neighbours / entities the
  nodes simulated, both summed over the window's frames); ``added_reply_latency_ms`` (mean
  post-to-received time of the window's mirror messages that were received, ms: how old a
  mirrored entity's state is when a neighbour's reply can use it; 0 without mirrors);
  ``cross_border_actions_per_s`` (actions sent to another node for its entity, by the request
  messages posted in the window; 0 without ``remote_actions``) and ``action_round_trip_ms``
  (mean request-posted to reply-received time of those whose reply was received, ms: the
  latency the round trip adds to the shooter's reply that reports the outcome).
* ``zoning``: ``max_over_mean_clients`` (per tick of the window, the most players in one zone
  over the mean per zone, averaged over the ticks: 1 is perfect balance, ``nodes`` all in one
  zone), ``rebalances_per_s`` (border moves) and ``migrated_per_s`` (players whose owner a
  border move changed; each is handed over, so they are part of ``handoffs_per_s``).
* Top level, aggregated over nodes: one node: exactly its summary; several: ``frames``,
  ``messages_per_s``, ``replies_per_s``, ``choked_per_s`` summed; ``messages_per_frame`` =
  packets / frames over all nodes; ``dropped_fraction`` from the summed counts;
  ``cpu_utilization`` every node's CPUs, node 0 first; ``response_time_ms`` and
  ``socket_wait_ms`` over every node's packets (the nodes' sketches merged), the packet counts
  summed; every other number (``frames_per_s``, ``parallel_fraction``, fractions, moments,
  ...) the mean over nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsrv.pipeline.cluster.simulation import ClusterOutput
from simsrv.pipeline.summary import summarize
from simsrv.scenario.schema import Scenario

SUMMED = ("frames", "messages_per_s", "replies_per_s", "choked_per_s")
NODE_KEYS = (
    "frames_per_s",
    "replies_per_s",
    "messages_per_frame",
    "messages_per_s",
    "parallel_fraction",
    "dropped_fraction",
    "cpu_utilization",
    "response_time_ms",
)


def summarize_cluster(scenario: Scenario, out: ClusterOutput) -> dict[str, Any]:
    """The top-level metrics plus ``nodes`` and ``interconnect`` (module docstring)."""
    summaries = [summarize(scenario, node) for node in out.nodes]
    result = aggregate(summaries)
    if len(summaries) > 1:  # the whole cluster's packets: one sketch of every node's
        result.update(out.response.summary())
    result["nodes"] = node_metrics(scenario, out, summaries)
    result["interconnect"] = interconnect_metrics(scenario, out)
    result["zoning"] = zoning_metrics(scenario, out)
    return result


def aggregate(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The nodes' summaries as one (module docstring)."""
    if len(summaries) == 1:
        return dict(summaries[0])
    out = _mean(summaries)
    for key in SUMMED:
        out[key] = sum(s[key] for s in summaries)
    frames = out["frames"]
    packets = sum(s["messages_per_frame"] * s["frames"] for s in summaries)
    out["messages_per_frame"] = packets / frames if frames else 0.0
    out["cpu_utilization"] = [u for s in summaries for u in s["cpu_utilization"]]
    return out


def _mean(values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, dict):
        keys = [k for k in first if all(k in v for v in values)]
        return {k: _mean([v[k] for v in values]) for k in keys}
    if isinstance(first, list):
        return [_mean(list(v)) for v in zip(*values, strict=False)]
    if isinstance(first, int | float) and not isinstance(first, bool):
        return float(np.mean(values))
    return first


def node_metrics(
    scenario: Scenario, out: ClusterOutput, summaries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One object per node (module docstring)."""
    t0, rate = scenario.run.warmup_s, scenario.clients.rate_hz
    ticks = np.arange(len(out.owned_per_tick)) / rate
    window = (ticks >= t0) & (ticks < t0 + scenario.run.duration_s)
    result = []
    for i, (measured, summary) in enumerate(zip(out.measured, summaries, strict=True)):
        n = summary["frames"]
        metrics = {key: summary[key] for key in NODE_KEYS}
        owned = out.owned_per_tick[window, i]
        metrics["clients"] = float(owned.mean()) if len(owned) else 0.0
        metrics["interconnect_messages_per_frame"] = float(measured["exchanged"]) / n if n else 0.0
        metrics["mirrored_per_frame"] = float(measured["mirrored"]) / n if n else 0.0
        result.append(metrics)
    return result


def interconnect_metrics(scenario: Scenario, out: ClusterOutput) -> dict[str, float]:
    """The interconnect's traffic and cost in the measured window (module docstring), from
    the exchange's digest (:class:`simsrv.pipeline.cluster.exchange.ExchangeDigest`)."""
    span = scenario.run.duration_s
    digest = out.exchange.digest
    simulated = sum(m["entities"] for m in out.measured)
    sent = sum(m["mirrored"] for m in out.measured)
    mirrors, trips = digest.mirrors_received, digest.round_trips
    latency_us = digest.mirror_latency_us.value() / mirrors if mirrors else 0.0
    round_trip_us = digest.round_trip_us.value() / trips if trips else 0.0
    return {
        "bytes_per_s": digest.message_bytes / span,
        "messages_per_s": digest.messages / span,
        "handoffs_per_s": out.handoffs_in_window / span,
        "mirrored_share": sent / simulated if simulated else 0.0,
        "added_reply_latency_ms": latency_us / 1e3,
        "cross_border_actions_per_s": digest.action_items / span,
        "action_round_trip_ms": round_trip_us / 1e3,
    }


def zoning_metrics(scenario: Scenario, out: ClusterOutput) -> dict[str, float]:
    """The balance of the zones and the border moves in the measured window."""
    t0, span = scenario.run.warmup_s, scenario.run.duration_s
    ticks = np.arange(len(out.owned_per_tick)) / scenario.clients.rate_hz
    owned = out.owned_per_tick[(ticks >= t0) & (ticks < t0 + span)]
    mean = owned.mean(axis=1) if len(owned) else np.zeros(0)
    ratio = owned.max(axis=1)[mean > 0] / mean[mean > 0] if len(owned) else mean
    moves = [r for r in out.rebalances if t0 <= r.t_s < t0 + span]
    return {
        "max_over_mean_clients": float(ratio.mean()) if len(ratio) else 0.0,
        "rebalances_per_s": len(moves) / span,
        "migrated_per_s": sum(r.migrated for r in moves) / span,
    }
