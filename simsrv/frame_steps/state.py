"""The state the compiled frame loop reads and writes, as one named tuple of arrays.

The compiled loop (:mod:`simsrv.frame_steps.kernels`) runs the same frames as the Python
loop of :func:`simsrv.pipeline.simulation.simulate`, on the same state: the stream's first backlog
block, the socket, the frame builder's memory, the machine's state record.  The Python
objects keep owning that state; :class:`~simsrv.pipeline.frame_loop.CompiledLoop` copies the
stream's, socket's and builder's few scalars into :attr:`LoopState.ints` and
:attr:`LoopState.floats` (the *registers* below) when a compiled call starts, passes the arrays
themselves (so writes land in place), and copies the scalars back when it returns.  The
machine is passed whole (:class:`~simsrv.machine.engine.MachineState`): nothing of it is
copied.

Registers of ``ints`` (int64) and ``floats`` (float64) are named by the constants of this
module; times are seconds unless the name says ``_US`` (microseconds).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.machine.engine import MachineState

# -- ints registers -------------------------------------------------------------------------
HEAD = 0
"""Stream: first packet of ``buffer`` not released yet."""
READ = 1
"""Socket: first packet of ``buffer`` released and not read (the socket holds
``buffer[READ:HEAD]``)."""
LATER = 2
"""Stream: 1 when more backlog blocks follow ``buffer`` (the loop stops at its end)."""
FRAME = 3
"""Index of the next frame."""
ROW = 4
"""Frames written to the frame columns by this call."""
PROCESSED = 5
"""Packets read by this call's frames."""
STAMP = 6
"""Builder: the last stamp written in ``seen`` (:mod:`simsrv.workload.frame_kernels`)."""
LIMIT, CPP, GAPLESS = 7, 8, 9
"""Constants: packets read per frame at most, commands per packet at most, 1 when no packet
can go missing (commands are not counted)."""
REASON = 10
"""Why the call returned (:data:`STOPPED` ... :data:`ROOM`)."""
# the frame being built (written by ``next_frame``, read by the strategy and ``finish_frame``)
CUT, B_FROM, B_TO, UNIQUE, PHYSICS, COMMANDS, RANGE, REPLIES, VISIBLE, PVS = range(11, 21)
"""The stream's release cut, the packets read ``buffer[B_FROM:B_TO]``, whether their senders
are all different, whether physics runs, user commands, action-range entities, replies, their
visible entities and PVS rooms."""
CHOKED = 21
"""The frame's replies held by the rate limit (bandwidth control)."""
BANDWIDTH, HEADER_BYTES, ENTITY_BYTES, MAX_ENTITIES, MAX_BYTES = range(22, 27)
"""Constants of the reply rate limit: 1 when it is on, and the reply size's rule
(``server.reply_*``: header bytes, bytes per entity, entities at most, bytes at most)."""
ENTITIES = 27
"""Entities world physics simulates (the frame's ``entities``)."""
WAKES, WAKE_SEED, WAKE_POINTS = 28, 29, 30
"""The wake-up latency's draws (:mod:`simsrv.frame_steps.wakeup`): wake-ups drawn so far, the
draws' seed, and the quantiles of its distribution that follow the float registers (0: the
constant ``floats[WAKEUP]``)."""
READ_ALL = 31
"""1: the frame reads until the socket is empty (``server.read_until_empty``): a packet that
arrives while the frame is reading joins it (:func:`~simsrv.frame_steps.kernels.next_frame`)."""
INT_REGISTERS = 32

# -- floats registers -----------------------------------------------------------------------
NOW = 0
"""The loop's clock: when the next frame may start, s."""
HORIZON = 1
"""Stream: every packet arriving before it has been generated, s."""
STOP = 2
"""The run's end (warm-up + duration), s."""
LAST_PHYSICS = 3
"""Builder: when world physics last ran, s."""
MINTIC = 4
"""``sv_mintic``, s."""
WAKEUP = 5
"""The platform's constant wake-up latency: an idle server's frame starts this long after the
packet that wakes it, s (with a distribution, ``ints[WAKE_POINTS]`` > 0, its quantiles in s
follow the registers: ``floats[FLOAT_REGISTERS:]``)."""
RATE = 6
"""The clients' rate limit, bytes/s (bandwidth control)."""
MEASURE_FROM = 7
"""The measured window's start (warm-up), s: the packets of frames starting from it to
``STOP`` are measured (:mod:`simsrv.workload.response_time`)."""
NEED = 8
"""The time the stream must have generated every packet arriving by, s (with the reason
:data:`NEW_CHUNK`)."""
LAST_END = 9
"""When the last frame ended, s (0 before the first: the machine is idle from time 0)."""
COLD_WAKE_US, COLD_REFILL_US, COLD_DECAY_US = 10, 11, 12
"""The platform's cold start (:mod:`simsrv.machine.cold_start`; 0, 0, 1: none), for the read
clock."""
READ_FIXED_US, READ_WORLD_US, READ_PACKET_US, READ_RANGE_US = 13, 14, 15, 16
"""The read clock's costs at full speed, us (the cost model's, :mod:`simsrv.strategies.costs`):
a frame's fixed work, world physics, a packet's receive call and execution with one user
command, and per entity in its action range."""
READ_SPEED = 17
"""The reading CPU's speed (its share left by background load), for the read clock."""
FRAME_PERIOD = 18
"""The server's fixed frame period, s (0: a frame starts when a packet waits, QuakeWorld's
``select`` loop; > 0: frames start every period whether packets wait or not, a frame that
overran starting at once: QuakeTM's ``SV_Frame``)."""
NEXT_START = 19
"""With a fixed period, when the next frame starts, s (the last start plus the period, or
the last frame's end if it overran)."""
FLOAT_REGISTERS = 20

# -- reasons a call returns (every one but STOPPED: run one frame in Python, then call again) -
STOPPED = 0
"""The run's end is reached."""
NEW_CHUNK = 1
"""The stream must generate more ticks (the world advances)."""
NEXT_BLOCK = 2
"""The release reaches the end of ``buffer`` while more blocks follow."""
NO_ARRIVAL = 3
"""Nothing is queued and the next arrival is beyond ``buffer`` or the horizon."""
RING = 4
"""A packet's tick is not in the strategy's per-tick tables."""
ROOM = 5
"""A store (the machine's, or the frame rows) needs more room."""
VIOLATION = 6
"""The strategy's invariant kernel found a violation: Python raises it."""
PLAN_ERROR = 7
"""The machine found the plan inconsistent (its code in ``out[0]``): Python raises it."""
INTERRUPTS = 8
"""The machine's interrupt schedule does not reach far enough for the frame: the stream
generates its next ticks (whose packets the network card will receive)."""
REASONS = (
    "stopped",
    "new_chunk",
    "next_block",
    "no_arrival",
    "ring",
    "room",
    "violation",
    "plan_error",
    "interrupts",
)

# -- frame columns ----------------------------------------------------------------------------
F_MESSAGES, F_COMMANDS, F_REPLIES, F_CHOKED, F_PHYSICS, F_QUEUED = range(6)
"""Columns of ``frame_ints`` (the integer columns of
:data:`simsrv.workload.frame_table.FRAME_COLUMNS`)."""


class LoopState(NamedTuple):
    """Everything one compiled call reads and writes (see the module docstring).

    Attributes
    ----------
    buffer, arrivals:
        The stream's first backlog block (packets in arrival order) and their arrival times, s.
    ints, floats:
        The registers.
    last_tick, seen, latest:
        The frame builder's arrays per client: the tick of its last processed packet, and
        the scratch of :mod:`~simsrv.workload.frame_kernels` (stamps, newest packets).
    reply_clients, reply_visible, reply_pvs:
        The frame's replied clients, their visible entities and PVS rooms (the first
        ``ints[REPLIES]``).
    cleartime, reply_clear, held:
        Bandwidth control: per client the time its channel is clear, s (QuakeWorld's
        ``cleartime``); per reply of the frame, its client's new ``cleartime`` once sent; per
        client the last frame whose reply to it the rate limit held.
    machine:
        The machine's state (:class:`~simsrv.machine.engine.MachineState`): the frames
        execute on it in place.
    thread_cpu, barrier_parties, spawned, is_wait, thread_codes, activity_codes, lock_codes:
        The strategy's plan names as the machine's tables (:meth:`Machine.tables`).
    out:
        The engine's two results (end, charged CPU time).
    response_counts, response_stats:
        The measured packets' response times and socket waits
        (:class:`~simsrv.workload.response_time.ResponseTimes`), added to in place.
    frame_times, frame_ints, charged_us:
        Per frame of this call: start and end (s); the integer columns ``F_*``; CPU time its
        plan charged, us.
    """

    buffer: np.ndarray
    arrivals: np.ndarray
    ints: np.ndarray
    floats: np.ndarray
    last_tick: np.ndarray
    seen: np.ndarray
    latest: np.ndarray
    reply_clients: np.ndarray
    reply_visible: np.ndarray
    reply_pvs: np.ndarray
    cleartime: np.ndarray
    reply_clear: np.ndarray
    held: np.ndarray
    machine: MachineState
    thread_cpu: np.ndarray
    barrier_parties: np.ndarray
    spawned: np.ndarray
    is_wait: np.ndarray
    thread_codes: np.ndarray
    activity_codes: np.ndarray
    lock_codes: np.ndarray
    out: np.ndarray
    response_counts: np.ndarray
    response_stats: np.ndarray
    frame_times: np.ndarray
    frame_ints: np.ndarray
    charged_us: np.ndarray
