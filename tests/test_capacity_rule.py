"""The capacity rule on what players feel: ``--max-response-ms`` at a quantile stops a search at
the first count whose response time exceeds it (runs replaced by known summaries)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simsrv.core.errors import InputError
from simsrv.sweep import capacity


def _fake_run(scenario):
    """Every packet answered, none dropped; response times grow with the clients: p50 = n/4,
    p95 = n/2, p99 = n ms."""
    n = scenario.players.count
    offered = n * scenario.clients.rate_hz
    response = {"mean": n / 4, "p50": n / 4, "p95": n / 2, "p99": float(n), "max": 2.0 * n}
    return SimpleNamespace(
        summary={"replies_per_s": offered, "dropped_fraction": 0.0, "response_time_ms": response}
    )


@pytest.mark.parametrize(
    ("quantile", "max_ms", "expected"), [(0.95, 20.0, 40), (0.5, 20.0, 80), (0.99, 20.0, 16)]
)
def test_a_search_stops_at_the_first_count_whose_response_quantile_exceeds_the_bound(
    monkeypatch, quantile, max_ms, expected
):
    monkeypatch.setattr(capacity, "run", _fake_run)
    found = capacity.find_capacity(
        None, [], start=8, step=8, max_clients=200, max_response_ms=max_ms, quantile=quantile
    )
    assert found.capacity_clients == expected
    last = found.points[-1]
    assert not last["met"] and last["response_ms"] > max_ms
    assert all(p["met"] and p["response_ms"] <= max_ms for p in found.points[:-1])


def test_without_the_bound_the_response_time_is_reported_but_not_judged(monkeypatch):
    monkeypatch.setattr(capacity, "run", _fake_run)
    found = capacity.find_capacity(None, [], start=8, step=8, max_clients=64)
    assert found.capacity_clients == 64 and found.points[-1]["response_ms"] == 32.0


def test_a_quantile_the_summary_lacks_is_refused():
    with pytest.raises(InputError, match="--quantile: must be one of 0.5, 0.95, 0.99"):
        capacity.find_capacity(None, [], max_response_ms=5.0, quantile=0.9)
