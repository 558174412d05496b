"""The cluster run: one world, ``nodes`` servers, each serving the players of its zone.

Synchronisation assumption (docs/cluster.md): the nodes are simulated as one discrete-event
system in simulated time.  The next event is the node whose clock (the start of its next frame,
or its idle wake-up) is smallest (ties: lowest node number); client packets that have arrived
by then are routed to their nodes' sockets (:mod:`.router`) and the interconnect is advanced to
then (:mod:`.exchange`).  A node's frame runs on its own :class:`Machine` exactly as a single
server's (:func:`simsrv.pipeline.simulation.simulate`); it exchanges with the other nodes only at
its frame start: it pays the receive CPU of the messages it got, and posts its border entities'
states to each neighbouring node (one message of ``state_bytes x count`` per neighbour) and
pays their send CPU; with ``remote_actions`` it then answers the action requests it received
and posts its own (:mod:`.actions`).  An idle node (empty socket) waits until the next packet
arrives anywhere, then looks again.  With one node this is the single-server frame loop, step
by step.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from simsrv.frame_steps.wakeup import registers, wakeup_s
from simsrv.interconnect import load_profile
from simsrv.machine.invariants import CHECKS, InvariantViolation, check_conservation
from simsrv.pipeline.cluster.actions import RemoteActions
from simsrv.pipeline.cluster.exchange import Exchange, with_ops
from simsrv.pipeline.cluster.node import Node, SharedClients, build_node
from simsrv.pipeline.cluster.router import Handoff, Router, first_packets
from simsrv.pipeline.cluster.socket import SocketBank
from simsrv.pipeline.cluster.zones import Rebalance, ZonedWorld
from simsrv.pipeline.cluster.zoning import ZONINGS
from simsrv.pipeline.frame_stream import FrameStream
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.simulation import (
    SimulationOutput,
    accounting_time_s,
    build_world,
    gc_paused,
    slowest_speed,
    wakeup_latency,
)
from simsrv.pipeline.trace_stream import TraceStream
from simsrv.platforms.profile import resolve_platform
from simsrv.scenario.schema import Scenario
from simsrv.workload.clients import CHUNK_TICKS, ClientStream
from simsrv.workload.response_time import ResponseTimes


@dataclass
class ClusterOutput:
    """Raw facts of a cluster run: one :class:`SimulationOutput` per node (its frames, trace,
    arrivals and drops; its ``accounting`` is the cluster's), the exchange (its digest of the
    measured window; with ``keep_messages`` every message and delivery), the handoffs in the
    window (with ``keep_messages`` every one in ``handoffs``), the players per zone per tick,
    the border moves, the cross-border actions (``replied``: ``{reply id: request id}``, with
    ``keep_messages``), each node's sums over its measured frames (``measured``,
    :class:`~simsrv.pipeline.cluster.node.Node`) and the cluster-wide ``accounting``; with packet
    recording, ``owner_history`` (every tick's owners)."""

    nodes: list[SimulationOutput]
    exchange: Exchange
    handoffs: list[Handoff]
    handoffs_in_window: int
    owned_per_tick: np.ndarray
    measured: list[dict[str, int]]
    served: list[list[tuple[int, float, np.ndarray]]]
    accounting: dict[str, int]
    end_s: float
    wall_time_s: float
    checks: dict[str, bool]
    rebalances: list[Rebalance]
    replied: dict[int, int]
    owner_history: list[np.ndarray] | None = None

    @cached_property
    def response(self) -> ResponseTimes:
        """Every node's measured packets' response times: the nodes' sketches merged."""
        return ResponseTimes.merged([node.response for node in self.nodes])


def simulate_cluster(
    scenario: Scenario,
    record_packets: bool = False,
    keep_trace: KeepWindow | None = None,
    keep_frames: KeepWindow | None = None,
    keep_messages: bool = False,
) -> ClusterOutput:
    """Run ``scenario`` (with a ``[cluster]`` section) to ``warmup_s + duration_s``;
    ``record_packets`` keeps every frame's packets per node (for tests); ``keep_trace`` and
    ``keep_frames`` the rows of each node's trace and its frames in a window
    (:func:`simsrv.pipeline.simulation.simulate`); ``keep_messages`` every interconnect message,
    delivery and handoff (else only their digest of the measured window)."""
    wall_start = time.perf_counter()
    cluster = scenario.cluster
    assert cluster is not None and cluster.border_width is not None
    rng = run_streams(scenario.run)
    platform = resolve_platform(scenario.machine.platform, scenario.machine.costs)
    world = build_world(scenario, rng)
    zoning = ZONINGS.get(cluster.zoning, "cluster.zoning").build(
        world.map, cluster.nodes, cluster.border_width, cluster=cluster
    )
    rate = scenario.clients.rate_hz
    keep = 4 * CHUNK_TICKS + math.ceil(scenario.clients.latency_s * rate) + 2
    zoned = ZonedWorld(
        world, zoning, rate, keep, shots=cluster.remote_actions, history=record_packets
    )
    window = (scenario.run.warmup_s, scenario.run.warmup_s + scenario.run.duration_s)
    stream = ClientStream(scenario.clients, zoned, rng["clients"], window)  # type: ignore[arg-type]
    stop_s = scenario.run.warmup_s + scenario.run.duration_s
    sent = world.players * (rate * (stop_s + scenario.clients.latency_s) + 2)  # by the stop
    bank = SocketBank(
        cluster.nodes, world.players, scenario.clients.socket_buffer_messages, window, int(sent)
    )
    shared = SharedClients.of(scenario) if cluster.nodes > 1 else None
    nodes = [
        build_node(scenario, i, platform, world, rng["strategy"], bank.socket(i), shared)
        for i in range(cluster.nodes)
    ]
    for node in nodes:
        node.records = TraceStream(
            node.machine, node.table, window, slowest_speed(node.machine), keep_trace
        )
        node.frame_records = FrameStream(node.table, window, keep_frames)
    exchange = Exchange(load_profile(cluster.interconnect), cluster.nodes, window, keep_messages)
    router = Router(
        zoned,
        bank,
        [n.builder for n in nodes],
        exchange,
        cluster.handoff_bytes,
    )
    actions = (
        RemoteActions(zoned, exchange, cluster.action_bytes) if cluster.remote_actions else None
    )
    per_node = cluster.nodes > 1
    fixed_limit = scenario.max_messages_per_frame

    def step(node: Node, now: float) -> bool:
        if len(node.socket) == 0:
            return False
        limit = fixed_limit
        if per_node:
            served = int(router.served[node.index])
            if not scenario.server.max_messages_per_frame:
                limit = max(served, 1)
            node.strategy.connected = served + zoned.mirrored_players_at(node.index, now)
        run_frame(node, now, limit, zoned, exchange, cluster.state_bytes, record_packets, actions)
        return True

    latency_s, quantiles_s, seed = wakeup_latency(platform, rng["wakeup"])
    ints, floats = registers(latency_s, quantiles_s, seed)
    event_loop(nodes, stream, router, stop_s, step, lambda: wakeup_s(ints, floats))
    end_s = max(n.now for n in nodes)
    stream.close()
    counted_s = accounting_time_s(end_s, stop_s, scenario.run.duration_s)
    # the packets arrived by then go to their nodes' sockets (a bounded one drops them as
    # a single server's does); what is left is counted, never generated.  With unbounded
    # sockets only the packets of the measured window (each node counts its arrivals) are
    # routed, and without kept messages only counted per node in any order (no node reads
    # them, and their handoffs, posted after the window, change nothing); the later ones add
    # to the queued total alone, which the count gives
    routed_until = counted_s
    unbounded = not scenario.clients.socket_buffer_messages
    if unbounded:
        routed_until = min(counted_s, math.nextafter(stop_s, -math.inf))
    if unbounded and not keep_messages:  # handoffs at ``counted_s``: after the window
        for clients, ticks, arrival_s in stream.release_unordered(routed_until):
            router.count_unqueued(clients, ticks, arrival_s)
    else:
        serving = router.serving.copy()  # the nodes of one batch, routed in pieces
        for piece in stream.release_in_pieces(routed_until):
            router.route(piece, counted_s, router.owners(piece, serving))
    counts = stream.settle(counted_s)
    accounting = {
        "sent": counts.sent,
        "lost": counts.lost,
        "in_flight": counts.in_flight,
        "dropped": sum(n.socket.dropped for n in nodes),
        "processed": sum(n.processed for n in nodes),
        "queued": sum(len(n.socket) for n in nodes) + bank.unqueued + counts.arrived,
    }
    outputs = [node_output(n, accounting) for n in nodes]
    with gc_paused():
        check_conservation(accounting, sum(o.frame_digest.messages_read for o in outputs))
    return ClusterOutput(
        nodes=outputs,
        exchange=exchange,
        handoffs=router.handoffs,
        handoffs_in_window=router.handoffs_in_window,
        owned_per_tick=np.array(zoned.owned_history).reshape(-1, cluster.nodes),
        measured=[n.measured for n in nodes],
        served=[n.served for n in nodes],
        accounting=accounting,
        end_s=end_s,
        wall_time_s=time.perf_counter() - wall_start,
        checks=dict.fromkeys(CHECKS, True),
        rebalances=zoned.rebalances,
        replied=actions.replied if actions is not None else {},
        owner_history=zoned.owner_history,
    )


def event_loop(
    nodes: list[Node],
    stream: ClientStream,
    router: Router,
    stop_s: float,
    step: Callable[[Node, float], bool],
    wakeup: Callable[[], float] = lambda: 0.0,
) -> None:
    """Run the nodes until every clock reaches ``stop_s`` (module docstring).

    The next node is the one whose clock is smallest (ties: lowest node number); before it
    runs, the packets arrived by then are routed.  ``step(node, now)`` runs its frame and
    returns True, or returns False when its socket is empty: the node is then idle, and an
    idle node's clock is the next packet arrival anywhere.  Busy nodes wait in a heap of
    ``(clock, node)``.  While some node is idle, every packet arrival is an event: the packet
    is routed at its arrival, and an idle node that gets one wakes up (its frame starts after
    the wake-up latency, drawn then).  Those events are taken together
    (:func:`route_arrivals`) up to the next frame start, so a step costs nothing per idle
    node or per packet, and the order of the frames, of the wake-up draws and of the routing
    is that of taking the events one at a time.  At the end an idle node's clock is the next
    arrival.
    """
    busy = [(n.now, n.index) for n in nodes if n.now < stop_s]
    heapq.heapify(busy)
    idle: set[int] = set()
    while True:
        t_busy = busy[0][0] if busy else math.inf
        t_idle = stream.next_arrival_s() if idle else math.inf
        now = min(t_busy, t_idle)
        if now >= stop_s:
            break
        if t_idle < t_busy:  # arrivals while some node is idle, up to the next frame start
            for start, index in route_arrivals(stream, router, idle, t_busy, stop_s, wakeup):
                idle.discard(index)
                heapq.heappush(busy, (start, index))
            continue
        router.touched.clear()
        router.route(stream.release_until(now), now)
        for index in sorted(router.touched & idle):
            idle.discard(index)  # woken by a packet: its frame starts after the wake-up
            heapq.heappush(busy, (now + wakeup(), index))
        while busy and busy[0][0] == now:
            _, index = heapq.heappop(busy)
            node = nodes[index]
            node.now = now
            if step(node, now):
                if node.now < stop_s:
                    heapq.heappush(busy, (node.now, index))
            else:
                idle.add(index)
    if idle:
        wake = stream.next_arrival_s() + wakeup()
        for index in idle:
            nodes[index].now = wake


def route_arrivals(
    stream: ClientStream,
    router: Router,
    idle: set[int],
    t_busy: float,
    stop_s: float,
    wakeup: Callable[[], float],
) -> list[tuple[float, int]]:
    """Route the packets arriving while some node is idle, before the next frame start
    (``t_busy``, or a woken node's), as the events of :func:`event_loop` one at a time would:
    each idle node wakes at its first packet's arrival (in order of arrival, then of node;
    its frame start drawn then), each packet is routed at its arrival, or, once no node is
    idle, at the next frame start.  Returns the woken nodes' ``(frame start, node)``."""
    limit = min(t_busy, stop_s)
    packets, times = stream.pending_until(limit)  # the next arrival at least
    kept = int(np.searchsorted(times, stop_s, side="left"))  # events at the stop are not run
    packets, times = packets[:kept], times[:kept]
    owner = router.owners(packets)
    first = first_packets(owner, router.nodes)  # each node's first packet
    wakes = sorted((float(times[first[node]]), node) for node in idle if first[node] >= 0)
    cut = t_busy  # the next frame start
    woken: list[tuple[float, int]] = []
    last_wake = -math.inf
    for arrival, node in wakes:
        if arrival > cut:
            break
        start = arrival + wakeup()
        woken.append((start, node))
        cut = min(cut, start)
        last_wake = arrival
    bound = min(cut, float(times[-1]))  # the packets seen: the rest are later events
    count = int(np.searchsorted(times, bound, side="right"))
    released = stream.release_until(bound)
    assert len(released) == count, "the stream released what was not pending"
    route_at = times[:count].copy()
    if len(woken) == len(idle):  # no node idle: the packets after wait for the next event
        route_at[route_at > last_wake] = cut
    router.route(released, route_at, owner[:count])
    return woken


def run_frame(
    node: Node,
    now: float,
    limit: int,
    zoned: ZonedWorld,
    exchange: Exchange,
    state_bytes: int,
    record_packets: bool,
    actions: RemoteActions | None = None,
) -> None:
    """One frame of ``node`` starting at ``now`` s (its socket is not empty).

    A node's replies list only entities it has (docs/cluster.md, "What a node sees"): each
    packet's visible entities are capped at the node's entities (its zone's players and map
    entities plus those mirrored onto it) less the client itself."""
    batch = node.socket.read(limit)
    counts_map = node.strategy.context.platform.world_counts_map_entities
    node.builder.entities = entities = zoned.entities_at(node.index, now, counts_map)
    if zoned.zoning.nodes > 1 and len(batch):
        held = zoned.entities_at(node.index, now, True) - 1
        np.minimum(batch["visible_count"], max(held, 0), out=batch["visible_count"])
    counts: list[int] = []

    def with_interconnect(plan: Any) -> Any:  # the frame's interconnect work, run first
        exchange.advance(now)
        counts.append(exchange.posted_count)
        mirrored = 0
        for dst, count in enumerate(zoned.mirror_at(now)[node.index].tolist()):
            if count:
                exchange.post("mirror", node.index, dst, state_bytes * count, now, count)
                mirrored += count
        counts.append(mirrored)
        if actions is not None:
            actions.answer(node.index, now)
            actions.request(node.index, batch, now)
        return with_ops(plan, exchange.take_ops(node.index))

    index = len(node.table)
    end = node.loop.socket_frame(now, batch, len(node.socket), with_interconnect)
    messages, mirrored = counts
    exchanged = exchange.posted_count - messages + exchange.take_received(node.index)
    if exchange.digest.inside(now):  # a measured frame
        measured = node.measured
        measured["mirrored"] += mirrored
        measured["entities"] += entities
        measured["exchanged"] += exchanged
    if record_packets:
        node.served.append((index, now, batch.copy()))
    node.processed += len(batch)
    node.now = end
    try:
        node.records.drain(end)
        node.frame_records.release(node.records.closed_frames)
    except InvariantViolation as violation:  # the machine checks, as the run goes
        violation.trace = node.records.kept_trace()
        raise


def node_output(node: Node, accounting: dict[str, int]) -> SimulationOutput:
    """The node's facts as a single server's, its invariants checked."""
    socket = node.socket
    frame_records = node.frame_records
    with gc_paused():
        try:
            node.strategy.check_invariants()
            trace_metrics = node.records.close()
        except InvariantViolation as violation:
            violation.trace = node.records.kept_trace()
            raise
        digest = frame_records.close()
    trace = node.records.kept_trace()
    return SimulationOutput(
        frames=frame_records.kept_frames(),
        trace=trace,
        arrived=socket.arrived_in_window,
        dropped=socket.dropped_in_window,
        accounting=accounting,
        end_s=node.now,
        wall_time_s=0.0,
        checks=dict.fromkeys(CHECKS, True),
        trace_metrics=trace_metrics,
        frame_digest=digest,
        response=node.loop.response,
    )
