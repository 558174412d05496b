"""The frame loop: scenario -> world -> workload -> strategy plan -> machine -> trace.

The server blocks until at least one packet is queued, then runs a frame: it reads up to
``max_messages_per_frame`` packets, the strategy plans the frame, the machine executes the plan,
and the next frame starts when the coordinator finishes (or, if the socket is empty, when the
next packet arrives).  This closes the loop of [T §4.4.3]: longer frames let more packets pile
up, so the next frame has more work.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simsrv.machine.cold_start import ColdStart
from simsrv.machine.engines import ENGINES
from simsrv.machine.invariants import CHECKS, InvariantViolation, check_conservation
from simsrv.machine.plan import US_PER_S
from simsrv.machine.quota import CpuQuota
from simsrv.metrics.frame_digest import FrameDigest
from simsrv.pipeline.frame_loop import FrameLoop
from simsrv.pipeline.frame_stream import FrameStream
from simsrv.pipeline.keep_window import KeepWindow
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.trace_stream import TraceStream
from simsrv.platforms.network_path import (
    interrupt_cpu,
    softirq_us,
    thread_costs_platform,
)
from simsrv.platforms.profile import Platform, resolve_platform
from simsrv.scenario.schema import Scenario
from simsrv.strategies import STRATEGIES, Strategy, StrategyContext
from simsrv.workload.clients import ClientStream
from simsrv.workload.frame import FrameBuilder
from simsrv.workload.frame_table import FrameTable
from simsrv.workload.response_time import ResponseTimes
from simsrv.workload.socket import SocketQueue
from simsrv.world.combat import Combat
from simsrv.world.maps import MAP_KINDS, GameMap
from simsrv.world.mobility import MOBILITY_MODELS
from simsrv.world.proximity import check_crowd
from simsrv.world.world import World


@dataclass
class SimulationOutput:
    """Raw facts of one simulated run.

    Attributes
    ----------
    frames:
        The frames kept (``keep_frames``; None when none was asked for), one row per frame,
        indexed by frame number: ``frame``; ``start_s`` and ``end_s`` (coordinator start and
        end, s) and ``duration_s`` (their difference); ``messages`` packets read; ``commands``
        user commands executed; ``replies`` sent; ``choked`` replies held by the rate limit;
        ``physics`` whether world physics ran; ``queued`` packets left in the socket after the
        read; plus strategy columns.
    trace:
        The machine's interval trace (:mod:`simsrv.machine.trace`): the rows that overlap
        the window asked for (``keep_trace``), or None when none was.
    arrived, dropped:
        Packets that reached the server in the measured window ``[warmup_s, warmup_s +
        duration_s)``, and of those the ones dropped there, by its kernel's receive backlog
        (:mod:`simsrv.platforms.network_path`) or its socket (counted as they come, not
        stored).
    accounting:
        End-of-run message balance: ``sent = lost + in_flight + dropped + processed + queued``,
        counted at :func:`accounting_time_s` (the end of the last frame, at most one measured
        window after the run's end).
    end_s:
        Simulated time at which the run stopped, s.
    checks:
        The invariants checked (:mod:`simsrv.machine.invariants`), name -> True (a violation
        raises).
    trace_metrics:
        The summary's metrics derived from the trace
        (:class:`simsrv.metrics.trace_digest.TraceDigest`).
    frame_digest:
        The frame records digested (:class:`simsrv.metrics.frame_digest.FrameDigest`): the
        summary's per-frame metrics.
    response:
        The measured packets' response times and socket waits
        (:class:`simsrv.workload.response_time.ResponseTimes`).
    softirq_s:
        Time the interrupt CPU spent in the receive softirq within the measured window, s
        (:mod:`simsrv.platforms.network_path`; 0 without an interrupt CPU).
    """

    frames: pd.DataFrame | None
    trace: pd.DataFrame | None
    arrived: int
    dropped: int
    accounting: dict[str, int]
    end_s: float
    wall_time_s: float
    checks: dict[str, bool]
    trace_metrics: dict[str, Any]
    frame_digest: FrameDigest
    response: ResponseTimes
    softirq_s: float = 0.0


def simulate(
    scenario: Scenario,
    keep_trace: KeepWindow | None = None,
    keep_frames: KeepWindow | None = None,
) -> SimulationOutput:
    """Run ``scenario`` to ``warmup_s + duration_s`` simulated seconds.

    The machine's trace and the frame records are digested as the run goes
    (:mod:`simsrv.pipeline.trace_stream`, :mod:`simsrv.pipeline.frame_stream`): memory does not grow
    with the run's length unless ``keep_trace`` or ``keep_frames`` asks for the trace rows or the
    frames
    of a window (:data:`simsrv.pipeline.keep_window.KEEP_ALL`: all of them)."""
    wall_start = time.perf_counter()
    rng = run_streams(scenario.run)
    platform: Platform = resolve_platform(scenario.machine.platform, scenario.machine.costs)
    irq_cpu = interrupt_cpu(platform, scenario.machine.cpus)
    softirq_cost_us = softirq_us(platform)  # a packet's, on irq_cpu
    platform = thread_costs_platform(platform)  # the receive's softirq share runs on irq_cpu
    world = build_world(scenario, rng)
    window = (scenario.run.warmup_s, scenario.run.warmup_s + scenario.run.duration_s)
    stream = ClientStream(scenario.clients, world, rng["clients"], window)
    socket = SocketQueue(scenario.clients.socket_buffer_messages, window)
    builder = FrameBuilder(scenario, world.physics_entities(platform.world_counts_map_entities))
    kind = STRATEGIES.get(scenario.server.strategy, "server.strategy")
    context = StrategyContext(scenario, platform, scenario.machine.cpus, world, rng["strategy"])
    strategy = kind.create(scenario.server.options, context)
    engine = ENGINES.get(scenario.machine.engine, "machine.engine")
    machine = engine(
        scenario.machine.cpus,
        platform.smt_per_core,
        platform.smt_throughput,
        background=tuple(scenario.machine.background),
        signal_send_us=platform.costs.signal_send,
        signal_wakeup_us=platform.costs.signal_wakeup,
        irq_cpu=irq_cpu,
        softirq_us=softirq_cost_us,
        max_backlog=platform.netdev_max_backlog,
        interrupt_source=stream.generate_next,
        quota=CpuQuota.of(scenario.machine),
        cold_start=ColdStart.of(platform),
        lock_barging=platform.lock_release == "barging",
    )
    softirq_time = SoftirqTime(softirq_cost_us * 1e-6, window)
    if irq_cpu is not None:  # the card's interrupts: every packet the clients' stream brings,
        # readable from the socket when its softirq ends

        def interrupts(arrivals_s: np.ndarray, horizon_s: float) -> np.ndarray:
            readable_s = machine.add_interrupts(arrivals_s * US_PER_S, horizon_s * US_PER_S)
            return softirq_time.add(readable_s / US_PER_S)

        stream.on_arrivals = interrupts

    reports_extra = type(strategy).frame_record is not Strategy.frame_record
    stop_s = scenario.run.warmup_s + scenario.run.duration_s
    table = FrameTable(strategy.frame_record_names if reports_extra else None)
    records = TraceStream(machine, table, window, slowest_speed(machine), keep_trace)
    frame_records = FrameStream(table, window, keep_frames)

    def drain(now_s: float) -> None:  # at a frame boundary: the records taken as they settle
        records.drain(now_s)
        frame_records.release(records.closed_frames)

    def forget(first_tick: int | None) -> None:  # the world's history no unread packet carries
        world.forget_before(stream.oldest_unread_tick(first_tick))

    loop = FrameLoop(
        scenario, builder, machine, strategy, table, *wakeup_latency(platform, rng["wakeup"]),
        cold_start=ColdStart.of(platform),
    )  # fmt: skip
    try:
        if not socket.capacity:  # the socket is a range of the stream: compiled release
            now, processed = loop.run_stream(stream, socket, 0.0, drain, forget)
        else:  # a bounded socket drops packets: read in Python, frames as any other
            now = loop.run_socket(stream, socket, 0.0, drain, forget)
            processed = loop.processed

        stream.close()  # the accounting below needs packets, not world states
        counted_s = accounting_time_s(now, stop_s, scenario.run.duration_s)
        counts = stream.settle(counted_s, arrival_times=socket.capacity > 0)
        socket.admit(counts.arrived, counts.arrival_s)
        accounting = {
            "sent": counts.sent,
            "lost": counts.lost,
            "in_flight": counts.in_flight,
            "dropped": socket.dropped + stream.kernel_dropped,
            "processed": processed,
            "queued": len(socket),
        }
        with gc_paused():  # the checks allocate briefly; a full collection would cost more
            trace_metrics = records.close()
            digest = frame_records.close()
            check_conservation(accounting, digest.messages_read)
            strategy.check_invariants()
    except InvariantViolation as violation:
        violation.trace = records.kept_trace()  # what was computed, to inspect the violation
        raise
    return SimulationOutput(
        frames=frame_records.kept_frames(),
        trace=records.kept_trace(),
        arrived=stream.arrived_in_window() + stream.kernel_dropped_in_window,
        dropped=socket.dropped_in_window + stream.kernel_dropped_in_window,
        accounting=accounting,
        end_s=now,
        wall_time_s=time.perf_counter() - wall_start,
        checks=dict.fromkeys(CHECKS, True),
        trace_metrics=trace_metrics,
        frame_digest=digest,
        response=loop.response,
        softirq_s=softirq_time.in_window_s,
    )


class SoftirqTime:
    """The interrupt CPU's softirq time within ``window`` (s): each packet's softirq runs the
    ``cost_s`` before it is readable, and the softirqs never overlap (first come first
    served), so their time in the window is the sum of their intervals clipped to it."""

    def __init__(self, cost_s: float, window: tuple[float, float]) -> None:
        self.cost_s, self.window = cost_s, window
        self.in_window_s = 0.0

    def add(self, readable_s: np.ndarray) -> np.ndarray:
        """Count the softirqs of packets readable at ``readable_s`` (NaN: dropped, none);
        returns ``readable_s``."""
        t0, t1 = self.window
        done = readable_s[~np.isnan(readable_s)]
        inside = np.clip(done, t0, t1) - np.clip(done - self.cost_s, t0, t1)
        self.in_window_s += float(inside.sum())
        return readable_s


def wakeup_latency(platform: Platform, rng: np.random.Generator) -> tuple:
    """The platform's wake-up latency as the frame loop takes it: ``(constant_s,
    quantiles_s, seed)`` (:mod:`simsrv.frame_steps.wakeup`)."""
    quantiles = tuple(q * 1e-6 for q in platform.wakeup_latency_quantiles_us)
    return platform.wakeup_latency_us * 1e-6, quantiles, int(rng.integers(1 << 62))


def slowest_speed(machine: Any) -> float:
    """The slowest speed a computation of ``machine`` may run at (x1): the SMT throughput
    with SMT, times the share of the most loaded CPU left by its background load."""
    speed = min(machine.smt_throughput, 1.0) if machine.smt_per_core > 1 else 1.0
    return speed * (1.0 - max(machine.background, default=0.0))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Garbage collection off inside the block (restored after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def accounting_time_s(end_s: float, stop_s: float, duration_s: float) -> float:
    """Simulated time at which the end-of-run message accounting is taken, s.

    It is the end of the last frame ``end_s``, but at most one measured window (``duration_s``)
    after the run's end ``stop_s``: a frame that ends days later (an absurd cost) must not make
    the accounting generate every client packet up to its end.  Any time at or after the last
    frame's start keeps the balance exact (every processed packet was sent before it).
    """
    return min(end_s, stop_s + duration_s)


def build_map(scenario: Scenario, rng: dict[str, np.random.Generator]) -> GameMap:
    """The scenario's map, drawn from the run's ``map`` stream."""
    kind = MAP_KINDS.get(scenario.map.kind, "map.kind")
    return kind.build(scenario.map.params, rng["map"])


def build_world(scenario: Scenario, rng: dict[str, np.random.Generator]) -> World:
    """The scenario's map and players, drawn from the run's ``map`` and ``players`` streams."""
    game_map = build_map(scenario, rng)
    check_crowd(
        scenario.players.count, game_map.extent_min, game_map.extent_max,
        scenario.players.action_range,
    )  # fmt: skip
    mobility_kind = MOBILITY_MODELS.get(scenario.players.mobility, "players.mobility")
    mobility = mobility_kind.create(
        scenario.players.behaviour,
        game_map,
        scenario.players.count,
        scenario.players.speed,
        rng["players"],
    )
    players = scenario.players
    combat = (
        Combat(
            game_map,
            players.hit_chance,
            rng["combat"],
            select=players.spawn_select,
            wait=players.respawn_wait,
        )
        if players.respawn
        else None
    )
    return World(game_map, mobility, players.action_range, players.visibility_range, combat)
