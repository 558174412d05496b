"""One cluster node: a machine running the scenario's strategy on the clients of its zone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simsrv.machine.cold_start import ColdStart
from simsrv.machine.engines import ENGINES
from simsrv.machine.executor import Machine
from simsrv.machine.quota import CpuQuota
from simsrv.pipeline.cluster.socket import NodeSocket
from simsrv.pipeline.frame_loop import FrameLoop
from simsrv.pipeline.seeding import STREAMS
from simsrv.platforms.profile import Platform
from simsrv.scenario.schema import Scenario
from simsrv.strategies import STRATEGIES, Strategy, StrategyContext
from simsrv.workload.frame import FrameBuilder
from simsrv.workload.frame_table import FrameTable
from simsrv.world.world import World


@dataclass
class Node:
    """A node's server state and its records: ``table``, its frames not taken yet
    (:mod:`simsrv.pipeline.frame_stream`); ``measured``, sums over its frames that start in the
    measured window: ``mirrored`` entity states it sent, ``exchanged`` interconnect messages it
    paid CPU for (posted and received), ``entities`` its world physics simulated (its zone's
    plus mirrored in)."""

    index: int
    machine: Machine
    strategy: Strategy
    builder: FrameBuilder
    socket: NodeSocket
    loop: FrameLoop
    """Runs its frames (:meth:`~simsrv.pipeline.frame_loop.FrameLoop.socket_frame`)."""
    now: float = 0.0
    processed: int = 0
    table: FrameTable = field(default_factory=FrameTable)
    measured: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("mirrored", "exchanged", "entities"), 0)
    )
    served: list[tuple[int, float, np.ndarray]] = field(default_factory=list)
    """With packet recording: ``(frame, start_s, packets read)`` per frame."""
    records: Any = None
    """Its trace taken as the run goes (a :class:`simsrv.pipeline.trace_stream.TraceStream`)."""
    frame_records: Any = None
    """Its frames taken as the run goes (a :class:`simsrv.pipeline.frame_stream.FrameStream`)."""

    @property
    def reports_extra(self) -> bool:
        """The strategy adds per-frame columns."""
        return type(self.strategy).frame_record is not Strategy.frame_record


STAMP_RANGE = 2**40
"""Node ``k``'s duplicate-sender stamps start at ``k * STAMP_RANGE`` (one a frame pass)."""


@dataclass(frozen=True)
class SharedClients:
    """Per-client arrays a cluster's nodes share instead of one each over every player (64
    nodes of a million players wrote ~2 GB otherwise).  Sharing them changes nothing: a
    player's last executed tick (``last_tick``) is written only by the node serving it, and a
    handoff gives the new node the old node's value; the duplicate-sender scratch (``seen``,
    ``latest``) is stamped, each node from its own range (:data:`STAMP_RANGE`); and without
    bandwidth control no reply is ever held (``held`` stays -1; None: each node its own)."""

    last_tick: np.ndarray
    seen: np.ndarray
    latest: np.ndarray
    held: np.ndarray | None

    @classmethod
    def of(cls, scenario: Scenario) -> SharedClients:
        """The shared arrays of ``scenario``'s clients."""
        n = scenario.players.count
        held = None if scenario.clients.bandwidth_control else np.full(max(n, 1), -1, np.int64)
        return cls(np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), held)


def strategy_rng(scenario: Scenario, node: int, first: np.random.Generator):
    """Node 0 uses the run's ``strategy`` stream (a one-node cluster draws as one server);
    node ``k`` a stream spawned from the run's seed after every named stream."""
    if node == 0:
        return first
    sequence = np.random.SeedSequence(scenario.run.seed, spawn_key=(len(STREAMS) + node,))
    return np.random.default_rng(sequence)


def build_node(
    scenario: Scenario,
    index: int,
    platform: Platform,
    world: World,
    rng: np.random.Generator,
    socket: NodeSocket,
    shared: SharedClients | None = None,
) -> Node:
    """Node ``index`` with its own machine (the ``[machine]`` section), strategy and
    ``socket`` (its socket in the cluster's bank); ``shared``: the per-client arrays it
    shares with the other nodes (None: its own)."""
    m = scenario.machine
    kind = STRATEGIES.get(scenario.server.strategy, "server.strategy")
    context = StrategyContext(scenario, platform, m.cpus, world, strategy_rng(scenario, index, rng))
    strategy = kind.create(scenario.server.options, context)
    engine = ENGINES.get(m.engine, "machine.engine")
    machine = engine(
        m.cpus,
        platform.smt_per_core,
        platform.smt_throughput,
        background=tuple(m.background),
        signal_send_us=platform.costs.signal_send,
        signal_wakeup_us=platform.costs.signal_wakeup,
        quota=CpuQuota.of(m),
        cold_start=ColdStart.of(platform),
        lock_barging=platform.lock_release == "barging",
    )
    entities = world.physics_entities(platform.world_counts_map_entities)
    table = FrameTable()
    if shared is None:
        builder = FrameBuilder(scenario, entities)
        loop = FrameLoop(scenario, builder, machine, strategy, table)
    else:
        builder = FrameBuilder(scenario, entities, (shared.last_tick, shared.seen, shared.latest))
        stamp = index * STAMP_RANGE
        loop = FrameLoop(scenario, builder, machine, strategy, table, held=shared.held,
                         first_stamp=stamp)  # fmt: skip
    return Node(index, machine, strategy, builder, socket, loop, table=table)
