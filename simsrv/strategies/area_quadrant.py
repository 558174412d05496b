"""``area-quadrant``: spatial partitioning of the map over threads (the area-based report [R]).

MODEL.md §4 [R §3].  ``T`` static threads (thread ``t`` on a CPU as in
:mod:`simsrv.strategies.threads`); thread 0 is the report's "thread 1".  The *area level* is
the areanode depth ``L = ceil(log2 T)`` (4 threads: the 4 quarters at depth 2; 8 threads: the 8
nodes at depth 3); area ``j`` of that level (left to right in node order) belongs to thread
``j mod T``.  A packet goes to the queue of its sender's areanode node (``SV_LinkEdict`` of the
player's box at the packet's tick, :mod:`simsrv.world.areanode`).  One frame:

Stage 1 (thread 0): fixed frame work and world physics when due.

Stage 2, option ``stage2``:

``basic``
    thread 0 receives every packet and sorts it into a queue (``queue_per_message`` plus a
    tree walk of ``L`` nodes at ``lock_per_node`` each); barrier; every thread drains the
    queues of its areas (players linked at depth >= ``L``); barrier; thread 0 drains the
    *boundary* queue (players linked above the area level) alone; barrier.
``optimized``
    as ``basic``, but one queue per node at every level above the areas (4 threads: 4
    quarters, 2 halves, 1 root = the report's 7 queues), drained level by level from the areas
    up, the nodes of one level in parallel (node ``j`` of a level by thread ``j mod T``), a
    barrier after each level.
``sequential``
    thread 0 receives and executes every packet, as the sequential server (the report's
    "stage 3 only" variant); no sorting, no locks; a barrier ends the stage when stage 3 is
    parallel.

Locks (option ``locking``).  The report keeps locks on the central game state because the
engine cannot know what the game code a packet runs will touch [R §6].  What we model: before
executing a packet, its thread locks every area-level node whose region meets the packet's
action range (the box of half-side ``action_range / 2`` around the sender: every entity the
packet may modify), in node order (so no deadlock), and releases them after.  A packet deep
inside an area takes only its own area's lock, which no other thread wants unless a packet
near the border reaches into the area: contention is low and grows with the players near
borders, as measured [R §5.2].  Cost: ``lock_acquire`` per lock plus the tree walk of ``L``
nodes (``lock_per_node``).  Any two packets executing at the same time on different threads
therefore never share an entity of their action ranges.  ``locking = "none"`` takes no locks.

Stage 3, option ``stage3``:

part 1 (thread 0): the score and broadcast messages of every connected client
(``reply_info_per_client`` each) while the other threads wait at the *internal* barrier; part 2:
the replies (reply building and sending) divided among threads, then the *end* barrier.

``cyclic``
    client slots divided cyclically: the client in slot ``c`` (clients connect in order, so
    client ``c`` has slot ``c``) is replied by thread ``c mod T`` [R §3.3];
``active``
    the frame's replied clients, in slot order, dealt round-robin to the threads (the report's
    proposed fix [R §5.3, §6]);
``sequential``
    thread 0 writes every reply; no stage-3 barriers.

Every barrier costs ``barrier`` per thread; stage-2 waits are recorded as ``barrier_wait``,
stage 3's as ``internal_barrier_wait`` and ``end_barrier_wait``.  With ``threads = 1`` the
server is the sequential server: no sorting, locks or barriers (the report's "1 thread").
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import Field

from simsrv.core.compiled import borrowing, compiled, inlined
from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty
from simsrv.frame_steps.kernels import finish_frame, frame_messages, next_frame
from simsrv.frame_steps.state import (
    COMMANDS,
    PHYSICS,
    PVS,
    RANGE,
    REASON,
    REPLIES,
    RING,
    ROW,
    VIOLATION,
    VISIBLE,
)
from simsrv.machine.invariant_kernels import packet_workers_kernel
from simsrv.machine.invariants import report_partition
from simsrv.machine.plan_arrays import (
    ACQUIRE,
    BARRIER,
    COMPUTE,
    COUNT,
    FILL,
    RELEASE,
    PlanArrays,
    counting_columns,
    emit,
    filling_columns,
)
from simsrv.platforms.network_path import xmit_us
from simsrv.strategies import costs as c
from simsrv.strategies.base import (
    STRATEGIES,
    FrameKernel,
    Strategy,
    StrategyContext,
    StrategyKind,
)
from simsrv.strategies.positions import (
    POSITION_HISTORY_TICKS,
    PerTick,
    ring_arguments,
    slot_of,
)
from simsrv.strategies.quadrant_tables import STAGE2_CODES, area_tables
from simsrv.strategies.sends import DEVICE_LOCK, emit_sends
from simsrv.strategies.threads import place_threads, resume_costs
from simsrv.workload.frame import FrameWorkload
from simsrv.world.areanode import AREA_DEPTH, AreanodeTree
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS

RECORD_NAMES = ("threads", "boundary_messages", "reply_spread")
"""The frame record's columns (:meth:`AreaQuadrant.frame_record`)."""


class AreaQuadrantOptions(StrictModel):
    """Options of ``area-quadrant`` (``[server.options]``)."""

    threads: int = Field(0, ge=0, le=1024, description="server threads (0 = one per CPU)")
    stage2: Literal["basic", "optimized", "sequential"] = Field(
        "optimized", description="request stage: area queues, + per-level queues, or serial"
    )
    stage3: Literal["cyclic", "active", "sequential"] = Field(
        "cyclic", description="reply stage: slots cyclically, active clients evenly, or serial"
    )
    locking: Literal["area", "none"] = Field(
        "area", description="lock the area nodes a packet's action range meets ('none': unsafe)"
    )


def area_depth(threads: int) -> int:
    """The areanode depth of the areas: the first level with at least ``threads`` nodes."""
    return math.ceil(math.log2(threads)) if threads > 1 else 0


class RequestSchedule(NamedTuple):
    """Where and when each packet of a frame executes in stage 2.

    ``step``: (N,) processing step (0 = the area level, then one step per level above);
    ``thread``: (N,) thread that executes it; ``steps``: number of steps (each ends with a
    barrier).
    """

    step: np.ndarray
    thread: np.ndarray
    steps: int


def request_schedule(own: np.ndarray, threads: int, stage2: str) -> RequestSchedule:
    """The stage-2 schedule of packets whose senders are linked to areanode nodes ``own``."""
    n = len(own)
    if threads == 1 or stage2 == "sequential":
        zeros = np.zeros(n, dtype=np.int64)
        return RequestSchedule(zeros, zeros.copy(), 1)
    depth_l = area_depth(threads)
    depth = AreanodeTree.node_depth(own)
    if stage2 == "basic":
        at_area = depth >= depth_l
        area = AreanodeTree.ancestor(np.where(at_area, own, 2**depth_l - 1), depth_l)
        thread = np.where(at_area, (area - (2**depth_l - 1)) % threads, 0)
        return RequestSchedule(np.where(at_area, 0, 1), thread, 2)
    level = np.minimum(depth, depth_l)
    node = ((own + 1) >> (depth - level)) - 1
    index = node - (2**level - 1)
    return RequestSchedule(depth_l - level, index % threads, depth_l + 1)


class AreaQuadrant(Strategy):
    """Area-based request processing, cyclic (or active-client) replies, barriers between."""

    options: AreaQuadrantOptions
    has_frame_kernel = True
    frame_record_names = RECORD_NAMES

    def __init__(self, options: AreaQuadrantOptions, context: StrategyContext) -> None:
        super().__init__(options, context)
        world = context.world
        world.keep_neighbours(POSITION_HISTORY_TICKS)
        self.threads = options.threads or context.cpus
        self.parallel = self.threads > 1
        self.depth = area_depth(self.threads)
        self.cpu_of = place_threads(self.threads, context.cpus, context.platform.smt_per_core)
        self.cpu_of = self.cpu_of.astype(np.int64)
        self.resume_us = resume_costs(self.cpu_of, context.cpus, self.cost_vector)
        self.tree = AreanodeTree.build(
            world.map.extent_min, world.map.extent_max, max(AREA_DEPTH, self.depth)
        )
        self.areas = AreanodeTree.level(self.depth)
        self.half_range = context.scenario.players.action_range / 2
        self.stage2 = options.stage2 if self.parallel else "sequential"
        self.stage3 = options.stage3 if self.parallel else "sequential"
        self.locking = self.parallel and self.stage2 != "sequential" and options.locking != "none"
        self.player_areas = (
            PerTick(world, self._player_areas) if self.stage2 != "sequential" else None
        )
        self.steps = request_schedule(empty(0, np.int64), self.threads, self.stage2).steps
        self.thread_names = tuple(f"thread{t}" for t in range(self.threads))
        self.barrier_names = _barrier_names(self.stage2, self.stage3, self.steps)
        self.barrier_parties = np.full(len(self.barrier_names), self.threads, np.int64)
        self.lock_names = (*(("area", int(a)) for a in self.areas), DEVICE_LOCK)
        """Lock id -> name: lock ``j`` is area ``areas[j]`` (ids in node order), then the
        network device's transmit lock."""
        self.xmit_us = xmit_us(context.platform)
        """A reply's time under the device's transmit lock, us (0: no such lock)."""
        self.plan_names = (
            self.cpu_of,
            self.thread_names,
            ACTIVITIES,
            self.barrier_names,
            self.barrier_parties,
            self.lock_names,
        )
        """Every plan's fields after its operation columns (:class:`PlanArrays` order)."""
        self.flags = np.array(
            [
                self.threads,
                self.stage2 != "sequential",
                self.stage3 != "sequential",
                self.locking,
                self.steps,
                len(self.areas),
                self.stage3 == "active",
                self.depth,
            ],
            np.int64,
        )
        self._record: dict[str, Any] = {}

    # -- planning ---------------------------------------------------------------------------

    def plan(self, frame: FrameWorkload) -> PlanArrays:
        messages = frame.messages
        ring = self.player_areas
        if ring is not None and not ring.tables:
            ring.load(messages["tick"])
        while True:
            ticks, tables = (ring.ticks, ring.tables) if ring and ring.tables else _NO_RING
            *columns, boundary, spread, complete, code, a, b, d = _plan(
                self.flags, self.cost_vector, self.xmit_us, self.resume_us, bool(frame.physics),
                frame.entities, self.connected_clients, frame.commands, frame.range_entities,
                frame.visible_entities, frame.pvs_rooms, ticks, *tables, messages,
                frame.reply_clients, frame.reply_visible, frame.reply_pvs_rooms,
            )  # fmt: skip
            if complete:
                break
            ring.load(messages["tick"])  # a packet's tick is not in the ring yet
        report_partition(frame.index, code, a, b, d)
        self._record = dict(zip(RECORD_NAMES, (self.threads, boundary, spread), strict=True))
        return PlanArrays(*columns, *self.plan_names)

    def frame_kernel(self, ticks: np.ndarray) -> FrameKernel | None:
        if self.connected is not None:  # a cluster node: its connected clients vary
            return None
        ring_ticks, tables = ring_arguments(self.player_areas, ticks, _NO_RING)
        entities, connected = self.context.world.entity_count, self.connected_clients
        args = (
            self.flags, self.cost_vector, self.xmit_us, self.resume_us, entities, connected,
            ring_ticks, *tables,
        )  # fmt: skip
        names = PlanArrays.names_only(*self.plan_names)
        return FrameKernel(_frames, args, names)

    def _player_areas(self, origins: np.ndarray) -> tuple[np.ndarray, ...]:
        """For every player at one tick: the step and the thread of its packets (the
        :func:`request_schedule` of the node it is linked to), (N,) int each; the areas its
        action range meets, packed bits (N, ceil(areas / 8)) uint8 (area ``j``: bit
        ``7 - j % 8`` of byte ``j // 8``); and how many they are, (N,) int
        (:func:`~simsrv.strategies.quadrant_tables.area_tables`, one compiled call)."""
        tree = self.tree
        return area_tables(
            tree.axis, tree.dist, tree.lo, tree.hi, tree.depth, origins, PLAYER_MINS,
            PLAYER_MAXS, self.half_range, self.areas, self.threads, STAGE2_CODES[self.stage2],
            self.depth,
        )  # fmt: skip

    def frame_record(self) -> dict[str, Any]:
        return self._record


ACTIVITIES = (
    "frame",
    "world",
    "net_recv",
    "request",
    "sort",
    "lock",
    "barrier",
    "barrier_wait",
    "context_switch",
    "reply_info",
    "reply",
    "net_send",
    "internal_barrier_wait",
    "end_barrier_wait",
)
"""The plan's activities; the codes below index it."""
FRAME, WORLD, NET_RECV, REQUEST, SORT, LOCK, BARRIER_COST, BARRIER_WAIT, SWITCH = range(9)
REPLY_INFO, REPLY, NET_SEND, INTERNAL_WAIT, END_WAIT = range(9, 14)
_NO_RING = (
    np.full(1, -1, np.int64),
    (
        np.zeros((1, 1), np.int64),
        np.zeros((1, 1), np.int64),
        np.zeros((1, 1, 1), np.uint8),
        np.zeros((1, 1), np.int64),
    ),
)
"""The ring arguments of a plan without a parallel stage 2 (never read)."""


@compiled
def _plan(
    flags, k, xmit, resume, physics, entities, connected, commands, range_entities, visible, pvs,
    ring_ticks, ring_step, ring_thread, ring_packed, ring_held, messages, clients,
    reply_visible, reply_pvs,
):  # fmt: skip
    """The frame's plan (:func:`_build_plan`'s results), True and the result of the
    ``entity_partition`` kernel on the packets' threads; or empty results and False when a
    packet's tick is not in the ring (load it and call again).  ``k``: the platform's cost
    vector (:func:`~simsrv.strategies.costs.cost_vector`); ``xmit``: a reply's time under the
    device's transmit lock, us (0: none; :mod:`~simsrv.strategies.sends`); then the frame's
    counts: whether world physics runs, the entities it simulates, the connected clients, the
    user commands and action-range entities of its packets, the visible entities and PVS rooms
    of its replies.
    With a parallel stage 2 each packet's step, thread, areas and their count come from the
    ring (:class:`PerTick` of :meth:`AreaQuadrant._player_areas`) at its tick, for its
    sender."""
    m = len(messages) if flags[1] else 0
    step, thread_of, held = empty(m, np.int64), empty(m, np.int64), empty(m, np.int64)
    width = ring_packed.shape[2] if m else 0
    packed = empty((m, width), np.uint8)
    senders, ticks = messages["client"], messages["tick"]
    slot = -1
    for i in range(m):
        slot = slot_of(ring_ticks, ticks[i], slot)
        if slot < 0:
            none = empty(0, np.int64)
            return (none, none.astype(np.int8), empty(0), none, none, 0, 0, False, 0, 0, 0, 0)
        sender = senders[i]
        step[i] = ring_step[slot, sender]
        thread_of[i] = ring_thread[slot, sender]
        held[i] = ring_held[slot, sender]
        for b in range(width):
            packed[i, b] = ring_packed[slot, sender, b]
    code, a, b, d = packet_workers_kernel(thread_of, flags[0])
    frame = c.frame_costs(
        k, physics, entities, len(messages), commands, range_entities, connected, len(clients),
        visible, pvs, 0.0,
    )  # fmt: skip
    thread, kind, cost, arg, activity, boundary, spread = _build_plan(
        flags, k, xmit, frame, resume, step, thread_of, held, packed, messages["commands"],
        messages["range_count"], clients, reply_visible, reply_pvs,
    )  # fmt: skip
    return thread, kind, cost, arg, activity, boundary, spread, True, code, a, b, d


@compiled
def _frames(
    loop, flags, k, xmit, resume, entities, connected, ring_ticks, ring_step, ring_thread,
    ring_packed, ring_held, records,
):  # fmt: skip
    """The compiled frame loop (:class:`~simsrv.strategies.base.FrameKernel`): frames as
    :meth:`AreaQuadrant.plan` plans them, until a step stops (a partition violation stops it
    too: the Python frame reports it); the reason.  ``entities``: the world's (world
    physics); ``connected``: the connected clients."""
    ints, machine = loop.ints, loop.machine  # taken once (reference counts)
    while next_frame(loop):
        replies = ints[REPLIES]
        thread, kind, cost, arg, activity, boundary, spread, complete, code, a, b, d = _plan(
            flags, k, xmit, resume, ints[PHYSICS] != 0, entities, connected, ints[COMMANDS],
            ints[RANGE], ints[VISIBLE], ints[PVS], ring_ticks, ring_step, ring_thread,
            ring_packed, ring_held, frame_messages(loop), loop.reply_clients[:replies],
            loop.reply_visible[:replies], loop.reply_pvs[:replies],
        )  # fmt: skip
        if not complete:
            return RING
        if code:
            return VIOLATION
        if not finish_frame(loop, machine, thread, kind, cost, arg, activity):
            break
        row = ints[ROW] - 1  # the frame's row in the call's frame columns
        records[row, 0], records[row, 1], records[row, 2] = flags[0], boundary, spread
    return ints[REASON]


def _barrier_names(stage2: str, stage3: str, steps: int) -> tuple[str, ...]:
    """The frame's barriers, in the order every thread passes them."""
    names: list[str] = []
    if stage2 != "sequential":
        names += ["sorted", *(f"level{step}" for step in range(steps))]
    if stage3 != "sequential":
        if stage2 == "sequential":
            names.append("requests")  # the end of stage 2, which the others waited through
        names += ["internal", "end"]
    return tuple(names)


@compiled
def _build_plan(
    flags, k, xmit, frame, resume, step, thread_of, held, packed, commands, range_count, clients,
    reply_visible, reply_pvs,
):  # fmt: skip
    """The frame's plan columns (thread, kind, cost, arg, activity) in the order of the module
    docstring, then the packets executed above the area level and the spread of replies per
    thread.  ``flags``: threads, parallel stage 2, parallel stage 3, locking, request steps,
    areas, active-client replies, the area depth; ``k``: the cost vector
    (:func:`~simsrv.strategies.costs.cost_vector`); ``xmit``: a reply's time under the
    device's transmit lock, us (the lock's id is the number of areas); ``frame``: the frame's
    :class:`~simsrv.strategies.costs.FrameCosts` (what thread 0 charges when a stage is
    serial).  Per packet (arrival order): its step, thread, areas (count and packed bits),
    commands and range entities; per replied client: its slot, visible entities and PVS
    rooms.  Each packet's request and lock costs and each thread's reply costs are the
    functions of :mod:`costs <simsrv.strategies.costs>` of its counts.  Packets run by step,
    then in arrival order; a first pass counts each thread's operations, the second writes
    them."""
    threads, parallel3, active, depth = flags[0], flags[2], flags[6], flags[7]
    m = len(step)
    order = empty(m, np.int64)  # a stable sort by step
    starts = np.zeros(flags[4] + 1, np.int64)
    for i in range(m):
        starts[step[i] + 1] += 1
    for s in range(flags[4]):
        starts[s + 1] += starts[s]
    for i in range(m):
        order[starts[step[i]]] = i
        starts[step[i]] += 1
    request, price = empty(m), empty(m)
    boundary = 0
    for i in range(m):
        request[i] = c.request_us(k, 1, commands[i], range_count[i])
        price[i] = c.lock_us(k, held[i], depth)
        boundary += step[i] > 0
    replies = np.zeros(threads, np.int64)
    reply, net_send = np.zeros(threads), np.zeros(threads)
    spread = 0
    if parallel3:
        n = len(clients)
        reply_thread = empty(n, np.int64)
        if active:
            slots = np.argsort(clients, kind="mergesort")
            for j in range(n):
                reply_thread[slots[j]] = j % threads
        else:
            for j in range(n):
                reply_thread[j] = clients[j] % threads
        visible, pvs = np.zeros(threads), np.zeros(threads)
        for j in range(n):
            t = reply_thread[j]
            replies[t] += 1
            visible[t] += reply_visible[j]
            pvs[t] += reply_pvs[j]
        for t in range(threads):
            reply[t] = c.reply_us(k, replies[t], visible[t], pvs[t])
            net_send[t] = c.net_send_us(k, replies[t])
        spread = replies.max() - replies.min()
    sort = c.sort_us(k, len(commands), depth)  # every packet, when stage 2 is parallel
    count, thread, kind, cost, arg, activity = counting_columns(threads)
    _ops(COUNT, count, thread, kind, cost, arg, activity, flags, k, xmit, frame, sort, resume,
         order, step, thread_of, request, price, packed, replies, reply, net_send)  # fmt: skip
    at, thread, kind, cost, arg, activity = filling_columns(count)
    _ops(FILL, at, thread, kind, cost, arg, activity, flags, k, xmit, frame, sort, resume,
         order, step, thread_of, request, price, packed, replies, reply, net_send)  # fmt: skip
    return thread, kind, cost, arg, activity, boundary, spread


@inlined
def _passage(out, threads, barrier_us, resume, barrier, wait):
    """Every thread passes barrier ``barrier``: its cost, the wait (recorded as activity
    ``wait``), then, when the thread shares its CPU, the cost of resuming
    (:func:`~simsrv.strategies.threads.resume_costs`)."""
    for t in range(threads):
        emit(*out, t, COMPUTE, barrier_us, -1, BARRIER_COST)
        emit(*out, t, BARRIER, 0.0, barrier, wait)
        if resume[t] > 0:
            emit(*out, t, COMPUTE, resume[t], -1, SWITCH)


@borrowing
def _ops(
    fill, at, thread, kind, cost, arg, activity, flags, k, xmit, frame, sort, resume, order,
    step, thread_of, request, price, packed, replies, reply, net_send,
):  # fmt: skip
    """Emit the frame's operations (:func:`~simsrv.machine.plan_arrays.emit`) in the order of
    the module docstring (see :func:`_build_plan`); ``k``: the cost vector; ``xmit``: a
    reply's time under the device's transmit lock (:func:`~simsrv.strategies.sends.emit_sends`,
    lock id ``areas``), us; ``frame``: the frame's :class:`~simsrv.strategies.costs.FrameCosts`;
    ``sort``: sorting its packets into the queues, us.  A serial stage 3 sends from thread 0
    alone (one computation: no other sender)."""
    threads, parallel2, parallel3, locking = flags[0], flags[1], flags[2], flags[3]
    steps, areas = flags[4], flags[5]
    barrier_us = k[0].barrier
    out = (fill, at, thread, kind, cost, arg, activity)
    emit(*out, 0, COMPUTE, frame.frame, -1, FRAME)
    emit(*out, 0, COMPUTE, frame.world, -1, WORLD)
    emit(*out, 0, COMPUTE, frame.net_recv, -1, NET_RECV)
    barrier = 0
    if not parallel2:
        emit(*out, 0, COMPUTE, frame.request, -1, REQUEST)
    else:
        emit(*out, 0, COMPUTE, sort, -1, SORT)
        _passage(out, threads, barrier_us, resume, barrier, BARRIER_WAIT)
        barrier += 1
        m, position = len(step), 0
        for level in range(steps):
            while position < m and step[order[position]] == level:
                i = order[position]
                t = thread_of[i]
                if locking:
                    emit(*out, t, COMPUTE, price[i], -1, LOCK)
                    for j in range(areas):  # the areas it meets, in node order
                        if (packed[i, j >> 3] >> (7 - (j & 7))) & 1:
                            emit(*out, t, ACQUIRE, 0.0, j, -1)
                    emit(*out, t, COMPUTE, request[i], -1, REQUEST)
                    for j in range(areas - 1, -1, -1):  # released in reverse
                        if (packed[i, j >> 3] >> (7 - (j & 7))) & 1:
                            emit(*out, t, RELEASE, 0.0, j, -1)
                else:
                    emit(*out, t, COMPUTE, request[i], -1, REQUEST)
                position += 1
            _passage(out, threads, barrier_us, resume, barrier, BARRIER_WAIT)
            barrier += 1
    if not parallel3:
        emit(*out, 0, COMPUTE, frame.reply_info, -1, REPLY_INFO)
        emit(*out, 0, COMPUTE, frame.reply, -1, REPLY)
        emit(*out, 0, COMPUTE, frame.net_send, -1, NET_SEND)
        return
    if not parallel2:
        _passage(out, threads, barrier_us, resume, barrier, BARRIER_WAIT)
        barrier += 1
    emit(*out, 0, COMPUTE, frame.reply_info, -1, REPLY_INFO)
    _passage(out, threads, barrier_us, resume, barrier, INTERNAL_WAIT)
    barrier += 1
    for t in range(threads):
        if replies[t]:
            emit(*out, t, COMPUTE, reply[t], -1, REPLY)
            emit_sends(*out, t, replies[t], net_send[t], k[0].net_send_per_reply, xmit,
                       flags[5], NET_SEND)  # fmt: skip
    _passage(out, threads, barrier_us, resume, barrier, END_WAIT)


STRATEGIES.register(
    "area-quadrant", StrategyKind("area-quadrant", AreaQuadrantOptions, AreaQuadrant)
)
