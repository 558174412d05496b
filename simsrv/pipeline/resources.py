"""What a run will need, estimated before anything is allocated.

A few fields, all inside their own bounds, multiply into allocations that no machine holds:
``players.behaviour`` of a replay (``routes x route_s x record_hz`` recorded ticks), the
``rows x cols`` of a room grid (its room-to-room visibility is a square matrix), a cluster of
many nodes (every tick weighs each player against each node's zone).  :func:`needs` lists
those allocations from the scenario alone, each with the field that sizes it;
:func:`check_memory` refuses a run whose largest need exceeds the memory available, in one
line naming the field, the estimate and the limit, before the run allocates it.

Neighbour lists (players in each other's action range) are not estimated here: their size
depends on where the players stand, so :mod:`simsrv.world.proximity` counts them per tick and
stops at a fixed budget.

The estimates are upper bounds of the peak of one allocation and its temporaries, within a
factor of about two; they do not add up the many small arrays of a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from simsrv.core.errors import InputError
from simsrv.scenario.schema import Scenario
from simsrv.world.maps import MAP_KINDS
from simsrv.world.mobility import MOBILITY_MODELS

CLUSTER_BYTES_PER_PLAYER_NODE = 64
"""Peak bytes per (player, node) pair of a cluster tick: the zonings' ``near`` test builds a
(players, nodes) matrix of gaps (2 float64), their two bounds (2 x 2 float64), the distance
(float64) and the answer (bool)."""

CLUSTER_BYTES_PER_NODE_PAIR = 2048
"""Bytes per (node, node) pair: the mirror-count matrix and the interconnect's messages in
flight between the nodes (Python objects).  Measured: the peak resident memory of a 0.05 s
run with 4,096 players grows by ~2.4 KB per node pair from 128 to 256 nodes (289 -> 364 MB);
4,096 nodes (16.8 million pairs) passed 5.6 GB before it was stopped."""


@dataclass(frozen=True)
class Need:
    """One large allocation of a run: ``bytes`` sized by the scenario field ``field``."""

    field: str
    bytes: int
    what: str


def needs(scenario: Scenario) -> list[Need]:
    """The run's large allocations, largest first (see the module docstring)."""
    out: list[Need] = []
    map_kind = MAP_KINDS.get(scenario.map.kind, "map.kind")
    if map_kind.memory_bytes is not None:
        size, field, what = map_kind.memory_bytes(scenario.map.params)
        out.append(Need(f"map.{field}", size, what))
    mobility = MOBILITY_MODELS.get(scenario.players.mobility, "players.mobility")
    if mobility.memory_bytes is not None:
        size, field, what = mobility.memory_bytes(scenario.players.behaviour)
        out.append(Need(f"players.behaviour.{field}", size, what))
    cluster = scenario.cluster
    if cluster is not None and cluster.nodes > 1:
        per_tick = (
            scenario.players.count * cluster.nodes * CLUSTER_BYTES_PER_PLAYER_NODE
            + cluster.nodes**2 * CLUSTER_BYTES_PER_NODE_PAIR
        )
        what = (
            f"{cluster.nodes:,} nodes exchange with each other and each tick weighs "
            f"{scenario.players.count:,} players against every zone"
        )
        out.append(Need("cluster.nodes", per_tick, what))
    return sorted(out, key=lambda need: need.bytes, reverse=True)


def available_memory_bytes() -> int | None:
    """Memory this process may still allocate, bytes: ``MemAvailable`` of ``/proc/meminfo``
    (Linux), else the physical memory; None when neither is known."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(scenario: Scenario, limit_bytes: int | None = None) -> None:
    """Raise :class:`InputError` if one of the run's large allocations (:func:`needs`) is over
    ``limit_bytes`` (default: :func:`available_memory_bytes`; nothing is checked when that is
    unknown)."""
    limit = available_memory_bytes() if limit_bytes is None else limit_bytes
    if limit is None:
        return
    for need in needs(scenario):
        if need.bytes > limit:
            raise InputError(
                f"{need.field}: the run would need about {_gib(need.bytes)} ({need.what}); "
                f"{_gib(limit)} of memory is available: make {need.field} smaller"
            )


def _gib(size: float) -> str:
    return f"{size / 2**30:,.1f} GiB"
