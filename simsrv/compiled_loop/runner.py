"""Running frames in compiled calls, between the frames the Python loop runs.

:func:`simsrv.simulation.simulate` asks :class:`CompiledLoop` to run frames whenever it can:
the machine is idle and the socket holds nothing but packets of the stream's current
backlog block.  One call of the strategy's compiled loop
(:class:`~simsrv.strategies.base.FrameKernel`) then runs frames until the run ends or until a
frame needs something only Python does (the stream generating ticks, the next backlog block, a
per-tick table not loaded, a plan the compiled engine refuses, a store to grow: the reasons of
:mod:`simsrv.compiled_loop.state`); the Python loop runs that one frame and calls again.
Either way every frame is the same, bit for bit: the compiled steps are transcriptions of the
Python ones, applied to the same state (:mod:`simsrv.compiled_loop.kernels`).

A call costs a few tens of microseconds of Python around it (the registers in and out; the
frames are written straight into the run's :class:`~simsrv.frame_table.FrameTable`, after
its stored rows); the
stream needs Python about three times per simulated second, so a call runs hundreds of
frames.  A call whose first plan the engine refuses (a strategy
whose plans it never takes, say) doubles the number of Python frames before the next try, up
to 1,024.
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
MAX_BACKOFF = 1024
"""Python frames at most between two tries, after calls whose first plan the engine refused."""


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
        ints[s.CPUS] = machine.cpus
        floats[s.STOP] = scenario.run.warmup_s + scenario.run.duration_s
        floats[s.MINTIC] = scenario.server.sv_mintic_s
        floats[s.WAKEUP] = wakeup_s
        self.replies = tuple(np.zeros(players, np.int32) for _ in range(3))
        self.charged_us = np.zeros(FRAMES_PER_CALL)
        self.tables: tuple | None = None
        self.backoff = 0
        self.skip = 0
        self.room = 64
        """Operations a frame may have (scratch rows; trace and lock-hold rows beyond
        :data:`STORE_ROOM`): doubled past the largest frame that lacked room."""
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
        strategy without one, a bounded socket, bandwidth control, or a machine whose
        computations run at a speed (SMT, background load)."""
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
        written to ``table``; return the clock and the packets the frames read.  Calls again,
        with more room, when a store is full, after ``on_full(clock)`` (which may take the
        stores' rows: :meth:`simsrv.trace_stream.TraceStream.drain`)."""
        if self.skip:
            self.skip -= 1
            return now, 0
        processed = 0
        while True:
            reason, done, now, read = self._call(now, table)
            processed += read
            if reason != s.ROOM:
                break
            if on_full is not None:
                on_full(now)
            self.room = max(self.room, 2 * int(self.ints[s.NEED]))
        if reason == s.REFUSED and not done:
            self.backoff = min(2 * self.backoff + 1, MAX_BACKOFF)
            self.skip = self.backoff
        elif done:
            self.backoff = 0
        return now, processed

    def _call(self, now: float, table: FrameTable) -> tuple:
        """One compiled call from ``now``: its reason (-1: it could not start), the frames it
        ran, the clock after them and the packets they read."""
        if not self.machine.idle_for_arrays:
            return -1, 0, now, 0
        stream, machine, ints, floats = self.stream, self.machine, self.ints, self.floats
        buffer, arrivals, head, later = stream.first_block()
        read = self.socket.start_in(buffer, head)
        if read is None:  # the socket holds packets from elsewhere (an earlier block)
            return -1, 0, now, 0
        kernel = self.strategy.frame_kernel(buffer["tick"][read:])
        if kernel is None:
            return -1, 0, now, 0
        if self.tables is None:
            self.tables = machine.array_tables(kernel.plan_names)
        waits, threads, activities, locks = self.tables
        trace, holds = machine.trace, machine.lock_holds
        trace.flush()
        holds.flush()
        trace.reserve(STORE_ROOM + self.room)
        holds.reserve(STORE_ROOM + self.room)
        scratch_ints, scratch_times = machine.scratch_rows(self.room)
        plan = kernel.plan_names
        table.reserve(FRAMES_PER_CALL)
        stored = table.stored  # the call writes its frames' rows after these
        ints[s.HEAD], ints[s.READ] = head, read
        ints[s.LATER] = later
        ints[s.FRAME] = table.size
        ints[s.ROW] = ints[s.PROCESSED] = 0
        ints[s.SKIP], ints[s.REFUSALS] = machine.phased_backoff
        ints[s.TRACE_SIZE], ints[s.HOLDS_SIZE] = trace.size, holds.size
        pos_us, ints[s.POS_FRAME], ints[s.POS_THREADS] = machine.position
        ints[s.N_LOCKS], ints[s.LOCK_WAIT] = len(plan.locks), len(plan.activities)
        floats[s.NOW], floats[s.HORIZON] = now, stream.horizon_s
        floats[s.LAST_PHYSICS] = self.builder.last_physics_s
        ints[s.STAMP] = self.builder.stamp
        floats[s.MACHINE_NOW_US], floats[s.POS_US] = machine.now_us, pos_us
        loop = LoopState(
            buffer, arrivals, ints, floats, self.builder.last_tick, self.builder.seen,
            self.builder.latest,
            *self.replies, plan.thread_cpu, plan.barrier_parties, waits, threads, activities,
            locks, scratch_ints, scratch_times, machine.engine_out, trace.ints, trace.times,
            holds.ints, holds.times, table.times[stored:], table.ints[stored:], self.charged_us,
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
        machine.phased_backoff = (int(ints[s.SKIP]), int(ints[s.REFUSALS]))
        position = float(floats[s.POS_US]), int(ints[s.POS_FRAME]), int(ints[s.POS_THREADS])
        machine.position = position
        machine.now_us = float(floats[s.MACHINE_NOW_US])
        trace.size, holds.size = int(ints[s.TRACE_SIZE]), int(ints[s.HOLDS_SIZE])
        table.size += done
        machine.charged_us.extend(self.charged_us[:done].tolist())
        return reason, done, float(floats[s.NOW]), int(ints[s.PROCESSED])
