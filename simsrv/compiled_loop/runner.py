"""Running frames in compiled calls, between the frames the Python loop runs.

:func:`simsrv.simulation.simulate` asks :class:`CompiledLoop` to run frames whenever it can:
the machine is idle and the socket holds nothing but packets of the stream's current
backlog block.  One call of the strategy's compiled loop
(:class:`~simsrv.strategies.base.FrameKernel`) then runs frames until the run ends or until a
frame needs something only Python does (the stream generating ticks, the next backlog block, a
per-tick table not loaded: the reasons of :mod:`simsrv.compiled_loop.state`); the Python loop
runs that one frame and calls again.  Either way every frame is the same, bit for bit: the
compiled steps are transcriptions of the Python ones, applied to the same state
(:mod:`simsrv.compiled_loop.kernels`), and both execute plans with the machine's one compiled
engine.

A call costs a few tens of microseconds of Python around it (the registers in and out; the
frames are written straight into the run's :class:`~simsrv.frame_table.FrameTable`, after
its stored rows); the
stream needs Python about three times per simulated second, so a call runs hundreds of
frames.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simsrv.compiled_loop import state as s
from simsrv.compiled_loop.state import LoopState
from simsrv.frame_table import FrameTable
from simsrv.machine.executor import Machine
from simsrv.scenario.schema import Scenario
from simsrv.strategies.base import Strategy
from simsrv.workload.clients import ClientStream
from simsrv.workload.frame import FrameBuilder
from simsrv.workload.socket import SocketQueue

FRAMES_PER_CALL = 4096
"""Frames one call runs at most (the rows reserved in the frame table, and in the buffer of
the CPU time each frame charged)."""
STORE_ROOM = 1 << 15
"""Rows of trace and lock holds reserved before each call (a call stops when they are full)."""


class CompiledLoop:
    """The compiled frame loop of one run (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        stream: ClientStream,
        socket: SocketQueue,
        builder: FrameBuilder,
        machine: Machine,
        strategy: Strategy,
        wakeup_s: float = 0.0,
    ) -> None:
        self.stream, self.socket, self.builder = stream, socket, builder
        self.machine, self.strategy = machine, strategy
        players = scenario.players.count
        self.ints = np.zeros(s.INT_REGISTERS, np.int64)
        self.floats = np.zeros(s.FLOAT_REGISTERS)
        ints, floats = self.ints, self.floats
        ints[s.LIMIT] = scenario.max_messages_per_frame
        ints[s.CPP] = scenario.clients.commands_per_packet
        ints[s.GAPLESS] = builder.gapless
        floats[s.STOP] = scenario.run.warmup_s + scenario.run.duration_s
        floats[s.MINTIC] = scenario.server.sv_mintic_s
        floats[s.WAKEUP] = wakeup_s
        self.replies = tuple(np.zeros(players, np.int32) for _ in range(3))
        self.charged_us = np.zeros(FRAMES_PER_CALL)
        self.out = np.zeros(2)
        self.tables: tuple | None = None
        self.frames = 0
        """Frames the compiled calls ran (a diagnostic)."""
        self.calls: dict[str, int] = dict.fromkeys(s.REASONS, 0)
        """Calls that returned for each reason (a diagnostic)."""

    @classmethod
    def create(
        cls,
        scenario: Scenario,
        stream: ClientStream,
        socket: SocketQueue,
        builder: FrameBuilder,
        machine: Machine,
        strategy: Strategy,
        wakeup_s: float = 0.0,
    ) -> CompiledLoop | None:
        """The run's compiled loop, or None when the run is outside what it covers: a
        strategy without one, a bounded socket, bandwidth control, or the simpy reference
        machine (which runs every plan itself)."""
        if (
            not strategy.has_frame_kernel
            or socket.capacity
            or builder.bandwidth is not None
            or not machine.runs_arrays_compiled
        ):
            return None
        return cls(scenario, stream, socket, builder, machine, strategy, wakeup_s)

    def run(
        self, now: float, table: FrameTable, on_full: Callable[[float], None] | None = None
    ) -> tuple[float, int]:
        """Run frames from ``now`` (s) when the loop can start (else none), their records
        written to ``table``; return the clock and the packets the frames read.  Calls again
        when a store is full, after ``on_full(clock)`` (which may take the stores' rows:
        :meth:`simsrv.trace_stream.TraceStream.drain`) and after the machine grew what it
        lacked."""
        processed = 0
        while True:
            reason, now, read = self._call(now, table)
            processed += read
            if reason == s.PLAN_ERROR:
                status = int(self.out[0])
                raise self.machine.plan_error(status, int(self.ints[s.FRAME]), None)
            if reason != s.ROOM:
                break
            if on_full is not None:
                on_full(now)
            self.machine.make_room()
        return now, processed

    def _call(self, now: float, table: FrameTable) -> tuple:
        """One compiled call from ``now``: its reason (-1: it could not start), the clock
        after its frames and the packets they read."""
        stream, machine, ints, floats = self.stream, self.machine, self.ints, self.floats
        buffer, arrivals, head, later = stream.first_block()
        read = self.socket.start_in(buffer, head)
        if read is None:  # the socket holds packets from elsewhere (an earlier block)
            return -1, now, 0
        kernel = self.strategy.frame_kernel(buffer["tick"][read:])
        if kernel is None:
            return -1, now, 0
        plan = kernel.plan_names
        if self.tables is None:
            spawned = np.zeros(max(len(plan.thread_cpu), 1), np.bool_)
            self.tables = (*machine.tables(plan), spawned)
        waits, threads, activities, locks, spawned = self.tables
        machine.trace.reserve(STORE_ROOM)
        machine.lock_holds.reserve(STORE_ROOM)
        table.reserve(FRAMES_PER_CALL)
        stored = table.stored  # the call writes its frames' rows after these
        ints[s.HEAD], ints[s.READ] = head, read
        ints[s.LATER] = later
        ints[s.FRAME] = table.size
        ints[s.ROW] = ints[s.PROCESSED] = 0
        floats[s.NOW], floats[s.HORIZON] = now, stream.horizon_s
        floats[s.LAST_PHYSICS] = self.builder.last_physics_s
        ints[s.STAMP] = self.builder.stamp
        loop = LoopState(
            buffer, arrivals, ints, floats, self.builder.last_tick, self.builder.seen,
            self.builder.latest, *self.replies, machine.state, plan.thread_cpu,
            plan.barrier_parties, spawned, waits, threads, activities, locks, self.out,
            table.times[stored:], table.ints[stored:], self.charged_us,
        )  # fmt: skip
        reason = int(kernel.run(loop, *kernel.args, table.extra[stored:]))
        self.calls[s.REASONS[reason]] += 1
        done = int(ints[s.ROW])
        self.frames += done
        # the state back into its owners
        stream.release_to(int(ints[s.HEAD]))
        self.socket.hold(buffer[ints[s.READ] : ints[s.HEAD]])
        self.builder.last_physics_s = float(floats[s.LAST_PHYSICS])
        self.builder.stamp = int(ints[s.STAMP])
        table.size += done
        machine.charged_us.extend(self.charged_us[:done].tolist())
        return reason, float(floats[s.NOW]), int(ints[s.PROCESSED])
