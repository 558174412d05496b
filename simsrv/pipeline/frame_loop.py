"""The frame loop of one server: packets in, frames planned and executed, records out.

A frame is the same sequence of compiled steps whoever runs it
(:mod:`simsrv.frame_steps.kernels`): :func:`~simsrv.frame_steps.kernels.build` applies the
frame rules to the packets read, the strategy plans the frame, and
:func:`~simsrv.frame_steps.kernels.finish_plan` executes the plan on the machine's compiled
engine and commits the frame (the packets' ticks, physics, the reply channels, the frame's
row).  :class:`FrameLoop` drives those steps for one server; the packets come from one of two
sources:

* **the stream** (a single server with an unbounded socket): the socket is the part of the
  stream's first backlog block released and not read (``buffer[READ:HEAD]``), and
  :func:`~simsrv.frame_steps.kernels.next_frame` releases and reads in compiled code.  A
  strategy with a compiled loop (:class:`~simsrv.strategies.base.FrameKernel`) runs many
  frames per call; any other strategy plans each frame in Python between the compiled steps
  (:meth:`FrameLoop.run_stream`).  The loop returns to Python only for what the stream must do
  (generate the next ticks, join the next backlog block, find the next arrival, hand the
  machine the packets its interrupt CPU will receive: the reasons of
  :mod:`simsrv.frame_steps.state`), or for a frame the strategy's compiled loop cannot plan
  (a tick table not loaded), which its Python ``plan`` plans;
* **a socket** (a bounded socket, which drops packets; a cluster node, whose packets the
  router hands over): the caller reads the packets and :meth:`FrameLoop.socket_frame` runs the
  frame with the same steps.

Either way a frame gives the same records, bit for bit: ``tests/test_compiled_loop.py`` runs
each strategy with a compiled loop both ways (its compiled planner and its Python ``plan``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from simsrv.frame_steps import state as s
from simsrv.frame_steps.kernels import (
    advance_read,
    build,
    commit_frame,
    finish_plan_compiled,
    next_frame,
    read_start,
)
from simsrv.frame_steps.state import LoopState
from simsrv.frame_steps.wakeup import set_wakeup, wakeup_s
from simsrv.machine.cold_start import ColdStart
from simsrv.machine.engine import MachineState
from simsrv.machine.executor import Machine
from simsrv.scenario.schema import Scenario
from simsrv.strategies.base import Strategy
from simsrv.strategies.costs import net_recv_us, request_us, world_us
from simsrv.workload.clients import ClientStream
from simsrv.workload.frame import FrameBuilder, FrameWorkload
from simsrv.workload.frame_table import FrameTable
from simsrv.workload.response_time import ResponseTimes
from simsrv.workload.socket import SocketQueue

FRAMES_PER_CALL = 4096
"""Frames one compiled call runs at most (the rows reserved in the frame table, and in the
buffer of the CPU time each frame charged)."""
STORE_ROOM = 1 << 15
"""Rows of trace and lock holds reserved before each call (a call stops when they are full)."""
PYTHON = -2
"""Not a reason of the compiled steps: plan the next frame in Python."""
FRAME = -3
"""Not a reason of the compiled steps: a frame planned in Python ran."""

_NO_INTS = np.zeros(0, np.int64)
_NO_BOOLS = np.zeros(1, np.bool_)
_NO_TIMES = np.zeros(0)


class FrameLoop:
    """The frame loop of one server (see the module docstring): its registers, the frame
    builder's memory (:class:`~simsrv.workload.frame.FrameBuilder`), its machine, strategy
    and frame table."""

    def __init__(
        self,
        scenario: Scenario,
        builder: FrameBuilder,
        machine: Machine,
        strategy: Strategy,
        table: FrameTable,
        wakeup_s: float = 0.0,
        wakeup_quantiles_s: tuple[float, ...] = (),
        wakeup_seed: int = 0,
        cold_start: ColdStart | None = None,
        held: np.ndarray | None = None,
        first_stamp: int = 0,
    ) -> None:
        """``held``: the per-client array of the frames whose reply the rate limit held, when
        loops share it (never written without bandwidth control); ``first_stamp``: the stamp
        register's start, so that loops sharing their builders' ``seen`` never reuse each
        other's stamps."""
        self.builder, self.machine, self.strategy, self.table = builder, machine, strategy, table
        players = scenario.players.count
        self.ints = np.zeros(s.INT_REGISTERS, np.int64)
        self.floats = np.zeros(s.FLOAT_REGISTERS + len(wakeup_quantiles_s))
        ints, floats = self.ints, self.floats
        ints[s.LIMIT] = scenario.max_messages_per_frame
        ints[s.CPP] = scenario.clients.commands_per_packet
        ints[s.GAPLESS] = builder.gapless
        ints[s.STAMP] = first_stamp
        server = scenario.server
        ints[s.HEADER_BYTES], ints[s.ENTITY_BYTES] = (
            server.reply_header_bytes,
            server.reply_bytes_per_entity,
        )
        ints[s.MAX_ENTITIES], ints[s.MAX_BYTES] = server.reply_max_entities, server.reply_max_bytes
        bandwidth = builder.bandwidth
        ints[s.BANDWIDTH] = bandwidth is not None
        floats[s.RATE] = bandwidth.rate if bandwidth is not None else 1.0
        self.cleartime = bandwidth.cleartime_s if bandwidth is not None else np.zeros(1)
        floats[s.STOP] = scenario.run.warmup_s + scenario.run.duration_s
        floats[s.MINTIC] = server.sv_mintic_s
        floats[s.FRAME_PERIOD] = server.frame_period_s
        set_wakeup(ints, floats, wakeup_s, wakeup_quantiles_s, wakeup_seed)
        floats[s.MEASURE_FROM] = scenario.run.warmup_s
        floats[s.LAST_PHYSICS] = -np.inf  # physics runs in the first frame
        self._set_read_clock(server.read_until_empty, cold_start, scenario.machine.background)
        self.replies = tuple(np.zeros(max(players, 1), np.int32) for _ in range(3))
        self.reply_clear = np.zeros(max(players, 1))
        self.held = np.full(max(players, 1), -1, np.int64) if held is None else held
        self.response = ResponseTimes()
        """The measured packets' response times (:mod:`simsrv.workload.response_time`)."""
        self.charged_us = np.zeros(FRAMES_PER_CALL)
        self.out = np.zeros(2)
        self.kernel_tables: tuple | None = None
        self._stand_in: MachineState | None = None
        self.reports_extra = type(strategy).frame_record is not Strategy.frame_record
        self.frames = 0
        """Frames the strategy's compiled loop ran (a diagnostic)."""
        self.calls: dict[str, int] = dict.fromkeys(s.REASONS, 0)
        """Compiled calls of the strategy's loop that returned for each reason (a
        diagnostic)."""

    def _set_read_clock(
        self, until_empty: bool, cold_start: ColdStart | None, background: list[float]
    ) -> None:
        """The read-until-empty rule's registers: the read clock's costs from the strategy's
        cost vector (the cost model's functions), the cold start, the reading CPU's speed."""
        ints, floats, k = self.ints, self.floats, self.strategy.cost_vector
        ints[s.READ_ALL] = until_empty
        floats[s.READ_FIXED_US] = k["frame_overhead"][0]
        floats[s.READ_WORLD_US] = world_us(k, self.builder.entities)
        floats[s.READ_PACKET_US] = net_recv_us(k, 1) + request_us(k, 1, 1, 0)
        floats[s.READ_RANGE_US] = k["request_per_range_entity"][0]
        floats[s.READ_SPEED] = 1.0 - (background[0] if background else 0.0)
        if cold_start is None:
            floats[s.COLD_WAKE_US], floats[s.COLD_REFILL_US], floats[s.COLD_DECAY_US] = 0, 0, 1
        else:
            floats[s.COLD_WAKE_US] = cold_start.wake_us
            floats[s.COLD_REFILL_US] = cold_start.refill_us
            floats[s.COLD_DECAY_US] = cold_start.decay_us

    # -- the state of one compiled call ---------------------------------------------------

    def _state(self, buffer: np.ndarray, arrivals: np.ndarray, tables: tuple | None) -> LoopState:
        """The loop's state over ``buffer`` with the frame table's free rows (``ROW`` 0: its
        first free row) and ``tables`` (a strategy loop's plan names; None: none)."""
        table = self.table
        stored = table.stored
        builder = self.builder
        if tables is None:
            tables = (_NO_INTS, _NO_INTS, _NO_BOOLS, _NO_BOOLS, _NO_INTS, _NO_INTS, _NO_INTS)
        self.ints[s.ROW] = 0
        self.ints[s.FRAME] = table.size
        self.ints[s.ENTITIES] = builder.entities
        return LoopState(
            buffer, arrivals, self.ints, self.floats, builder.last_tick, builder.seen,
            builder.latest, *self.replies, self.cleartime, self.reply_clear, self.held,
            self._machine_state(), *tables, self.out, self.response.counts, self.response.stats,
            table.times[stored:], table.ints[stored:], self.charged_us,
        )  # fmt: skip

    def _machine_state(self) -> MachineState:
        """The machine's state record; a stand-in for the simpy reference, which executes
        plans itself (the compiled steps then never execute one)."""
        if self.machine.runs_arrays_compiled:
            return self.machine.state
        if self._stand_in is None:
            self._stand_in = Machine(1).state
        return self._stand_in

    def _committed(self, frames: int) -> None:
        """After a call: its ``frames`` are in the table and their CPU time on the machine."""
        self.table.size += frames
        if frames == 1:
            self.machine.charged_us.append(float(self.charged_us[0]))
        elif frames:
            self.machine.charged_us.extend(self.charged_us[:frames].tolist())

    # -- one frame planned in Python --------------------------------------------------------

    def view(self, loop: LoopState) -> FrameWorkload:
        """The frame just built, as the strategies' :class:`FrameWorkload`."""
        ints = self.ints
        replies = int(ints[s.REPLIES])
        clients, visible, pvs = (array[:replies].copy() for array in self.replies)
        return FrameWorkload(
            int(ints[s.FRAME]),
            float(self.floats[s.NOW]),
            loop.buffer[ints[s.B_FROM] : ints[s.B_TO]],
            clients,
            visible,
            pvs,
            int(ints[s.CHOKED]),
            bool(ints[s.PHYSICS]),
            self.builder.entities,
            int(ints[s.COMMANDS]),
            int(ints[s.RANGE]),
            int(ints[s.VISIBLE]),
            int(ints[s.PVS]),
        )

    def _plan_and_finish(
        self, loop: LoopState, before_execute: Callable[[Any], Any] | None = None
    ) -> None:
        """Plan the frame built in ``loop`` with the strategy's ``plan``, execute and commit
        it, and record the strategy's values.  ``before_execute``: changes the plan first
        (a cluster node's interconnect work)."""
        plan = self.strategy.plan(self.view(loop))
        if before_execute is not None:
            plan = before_execute(plan)
        machine = self.machine
        if not machine.runs_arrays_compiled:  # the simpy reference executes plans itself
            end = machine.execute(plan, int(self.ints[s.FRAME]), float(self.floats[s.NOW]))
            commit_frame(loop, end)
            self.table.size += 1
            self._record_extra()
            return
        arrays, arguments = machine.arguments(plan)
        while not finish_plan_compiled(loop, *arguments):
            if self.ints[s.REASON] == s.PLAN_ERROR:
                raise machine.plan_error(int(self.out[0]), int(self.ints[s.FRAME]), arrays)
            if self.ints[s.REASON] == s.INTERRUPTS:
                machine.more_interrupts()
            else:
                machine.make_room()
            loop = loop._replace(machine=machine.state)
        self._committed(1)
        self._record_extra()

    def _record_extra(self) -> None:
        """The strategy's values of the frame just recorded."""
        if self.reports_extra:
            self.table.record_extra(self.table.stored - 1, self.strategy.frame_record())

    # -- the socket source ------------------------------------------------------------------

    def socket_frame(
        self,
        now: float,
        packets: np.ndarray,
        queued: int,
        before_execute: Callable[[Any], Any] | None = None,
    ) -> float:
        """Run one frame from ``now`` (s) on ``packets`` read from a socket that still holds
        ``queued``; returns its end, s."""
        self.table.reserve(1)
        self.floats[s.NOW] = now
        loop = self._state(packets, _NO_TIMES, None)
        ints = self.ints
        ints[s.B_FROM], ints[s.B_TO], ints[s.CUT] = 0, len(packets), len(packets) + queued
        build(loop, now)
        self._plan_and_finish(loop, before_execute)
        return float(self.floats[s.NOW])

    # -- the stream source ------------------------------------------------------------------

    def run_stream(
        self,
        stream: ClientStream,
        socket: SocketQueue,
        now: float,
        drain: Callable[[float], None],
        on_new_ticks: Callable[[int | None], None],
    ) -> tuple[float, int]:
        """Run frames from ``now`` (s, the socket empty) until the run's end, on the packets
        of ``stream``; return the clock and the packets read; ``socket`` then holds the
        packets released and not read.  ``drain(clock)`` after each call takes the records
        that settled; ``on_new_ticks(first)`` after the stream made new ticks (``first``: the
        tick of the socket's first packet, None when empty)."""
        ints, floats = self.ints, self.floats
        floats[s.NOW] = now
        _, _, head, _ = stream.first_block()
        ints[s.HEAD] = ints[s.READ] = head
        ints[s.PROCESSED] = 0
        kernel = self.strategy.has_frame_kernel and self.machine.runs_arrays_compiled
        while True:
            reason = self._kernel_call(stream) if kernel else PYTHON
            if reason in (PYTHON, s.RING, s.VIOLATION):
                reason = self._stream_frame(stream)
            stream.release_to(int(ints[s.HEAD]))
            drain(float(floats[s.NOW]))
            if reason == FRAME:
                continue
            if reason == s.STOPPED:
                break
            if reason == s.NEW_CHUNK:
                stream.generate_until(float(floats[s.NEED]))
                read = int(ints[s.READ])
                buffer = stream.first_block()[0]
                on_new_ticks(int(buffer["tick"][read]) if read < ints[s.HEAD] else None)
            elif reason == s.NEXT_BLOCK and ints[s.READ] == ints[s.HEAD]:
                ints[s.HEAD] -= ints[s.READ]
                stream.join_next_block(int(ints[s.READ]))
                ints[s.READ] = 0
            elif reason == s.NEXT_BLOCK:  # the socket holds packets: read it until empty
                if not self._socket_frames(stream, socket, drain, on_new_ticks):
                    return float(floats[s.NOW]), self.processed
            elif reason == s.NO_ARRIVAL:
                floats[s.NOW] = stream.next_arrival_s() + wakeup_s(self.ints, floats)
                ints[s.HEAD] = ints[s.READ] = stream.first_block()[2]
            elif reason == s.ROOM:
                self.machine.make_room()
            elif reason == s.INTERRUPTS:
                self.machine.more_interrupts()
            elif reason == s.PLAN_ERROR:
                raise self.machine.plan_error(int(self.out[0]), int(ints[s.FRAME]), None)
        socket.hold(self.queued(stream))
        return float(floats[s.NOW]), self.processed

    def run_socket(
        self,
        stream: ClientStream,
        socket: SocketQueue,
        now: float,
        drain: Callable[[float], None],
        on_new_ticks: Callable[[int | None], None],
        until_empty: bool = False,
    ) -> float:
        """Frames on ``socket``: at each frame's start the packets arrived by then are released
        from ``stream`` into it (a bounded socket drops what does not fit), up to
        ``max_messages_per_frame`` read and run (:meth:`socket_frame`); an empty socket sleeps
        until the next arrival plus the wake-up latency (with a fixed frame period, until the
        period's next start, where a frame runs even on an empty socket).  Until the run's
        end, or with ``until_empty`` until the socket is empty; returns the clock.  ``drain`` and
        ``on_new_ticks`` as :meth:`run_stream`'s."""
        floats, limit, made = self.floats, int(self.ints[s.LIMIT]), stream.next_tick
        periodic = floats[s.FRAME_PERIOD] > 0.0
        while now < floats[s.STOP] and (len(socket) or not until_empty):
            if periodic and now < floats[s.NEXT_START]:  # asleep until the period's next start
                now = float(floats[s.NEXT_START])
                continue
            arrived = stream.release_until(now)
            if len(socket) == 0 and len(arrived) == 0 and not periodic:  # a packet wakes it
                now = stream.next_arrival_s() + wakeup_s(self.ints, floats)
                continue
            batch = socket.deliver_and_read(arrived, limit)  # a full socket is not empty
            if self.ints[s.READ_ALL] and len(batch) < limit and not len(socket):
                batch = self._read_until_empty(stream, socket, now, batch, limit)
            now = self.socket_frame(now, batch, len(socket))
            drain(now)
            if stream.next_tick != made:  # new ticks
                made = stream.next_tick
                on_new_ticks(socket.first_tick())
        floats[s.NOW] = now
        return now

    def _read_until_empty(
        self, stream: ClientStream, socket: SocketQueue, now: float, batch: np.ndarray, limit: int
    ) -> np.ndarray:
        """``batch`` (the socket read empty at ``now``, s) and the packets that arrive while
        the frame reads them, one after the other, up to ``limit``
        (:func:`~simsrv.frame_steps.kernels.next_frame`'s rule on the stream)."""
        floats, parts, count = self.floats, [batch], len(batch)
        t = advance_read(floats, read_start(floats, now), batch["range_count"])
        while count < limit:
            arrival = stream.next_arrival_s()
            if arrival > t:
                break
            joined = socket.deliver_and_read(stream.release_until(arrival), limit - count)
            t = advance_read(floats, t, joined["range_count"])
            parts.append(joined)
            count += len(joined)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _socket_frames(
        self,
        stream: ClientStream,
        socket: SocketQueue,
        drain: Callable[[float], None],
        on_new_ticks: Callable[[int | None], None],
    ) -> bool:
        """:meth:`run_socket` while the socket holds packets, when the stream moves on to its
        next backlog block (the socket then is no range of one block: joining the two would
        copy an overloaded server's whole backlog at every block).  True when the socket is
        empty again (the stream source goes on), False when the run ended first."""
        socket.hold(self.queued(stream))
        self.run_socket(stream, socket, float(self.floats[s.NOW]), drain, on_new_ticks, True)
        self.ints[s.HEAD] = self.ints[s.READ] = stream.first_block()[2]
        return not len(socket)

    @property
    def processed(self) -> int:
        """Packets the frames of this loop read (since :meth:`run_stream` started)."""
        return int(self.ints[s.PROCESSED])

    def queued(self, stream: ClientStream) -> np.ndarray:
        """The packets released from ``stream`` and not read (the socket's content)."""
        return stream.first_block()[0][self.ints[s.READ] : self.ints[s.HEAD]]

    def _stream_frame(self, stream: ClientStream) -> int:
        """Build the next frame from the stream and plan it in Python: :data:`FRAME`, or the
        reason it could not be built."""
        self.table.reserve(1)
        buffer, arrivals, _, later = stream.first_block()
        self._stream_registers(stream, later)
        loop = self._state(buffer, arrivals, None)
        if not next_frame(loop):
            return int(self.ints[s.REASON])
        self._plan_and_finish(loop)
        return FRAME

    def _stream_registers(self, stream: ClientStream, later: bool) -> None:
        self.ints[s.LATER] = later
        self.floats[s.HORIZON] = stream.horizon_s

    def _kernel_call(self, stream: ClientStream) -> int:
        """One call of the strategy's compiled loop: the reason it returned (:data:`PYTHON`
        when it cannot start: the strategy has no loop for these packets)."""
        buffer, arrivals, _, later = stream.first_block()
        kernel = self.strategy.frame_kernel(buffer["tick"][self.ints[s.READ] :])
        if kernel is None:
            return PYTHON
        machine, table = self.machine, self.table
        if self.kernel_tables is None:
            plan = kernel.plan_names
            spawned = np.zeros(max(len(plan.thread_cpu), 1), np.bool_)
            waits, threads, activities, locks = machine.tables(plan)
            self.kernel_tables = (
                plan.thread_cpu, plan.barrier_parties, spawned, waits, threads, activities, locks
            )  # fmt: skip
        machine.trace.reserve(STORE_ROOM)
        machine.lock_holds.reserve(STORE_ROOM)
        table.reserve(FRAMES_PER_CALL)
        self._stream_registers(stream, later)
        stored = table.stored
        loop = self._state(buffer, arrivals, self.kernel_tables)
        reason = int(kernel.run(loop, *kernel.args, table.extra[stored:]))
        self.calls[s.REASONS[reason]] += 1
        done = int(self.ints[s.ROW])
        self.frames += done
        self._committed(done)
        return reason
