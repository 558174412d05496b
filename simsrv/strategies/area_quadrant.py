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

from simsrv.invariants import check_packet_workers
from simsrv.machine.plan import Acquire, Compute, FramePlan, Release, Thread
from simsrv.scenario.validation import StrictModel
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.phases import input_phase, reply_info_phase, reply_phase
from simsrv.strategies.positions import POSITION_HISTORY_TICKS, PerTick
from simsrv.strategies.threads import BarrierPassages, place_threads, resume_costs
from simsrv.workload.frame import FrameWorkload
from simsrv.world.areanode import AREA_DEPTH, AreanodeTree
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS


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

    def __init__(self, options: AreaQuadrantOptions, context: StrategyContext) -> None:
        super().__init__(options, context)
        world = context.world
        world.keep_neighbours(POSITION_HISTORY_TICKS)
        self.threads = options.threads or context.cpus
        self.parallel = self.threads > 1
        self.depth = area_depth(self.threads)
        self.cpu_of = place_threads(self.threads, context.cpus, context.platform.smt_per_core)
        resume = resume_costs(self.cpu_of, context.cpus, self.costs)
        self.barriers = BarrierPassages(self.costs.barrier, resume)
        self.tree = AreanodeTree.build(
            world.map.extent_min, world.map.extent_max, max(AREA_DEPTH, self.depth)
        )
        self.areas = AreanodeTree.level(self.depth)
        self.half_range = context.scenario.players.action_range / 2
        self.stage2 = options.stage2 if self.parallel else "sequential"
        self.stage3 = options.stage3 if self.parallel else "sequential"
        self.locking = self.parallel and self.stage2 != "sequential" and options.locking != "none"
        self.player_areas = PerTick(world, self._player_areas)
        self._lock_ops_of: dict[bytes, tuple[float, tuple, tuple]] = {}
        self._record: dict[str, Any] = {}

    # -- planning ---------------------------------------------------------------------------

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k = self.costs
        messages = frame.messages
        m = len(messages)
        ops: list[list] = [[] for _ in range(self.threads)]
        ops[0] += [*input_phase(k, frame)]
        barriers: list[str] = []
        if self.stage2 == "sequential":
            ops[0].append(
                Compute("request", c.request_us(k, m, frame.commands, frame.range_entities))
            )
            boundary = 0
        else:
            boundary = self._parallel_requests(frame.index, messages, ops, barriers)
        spread = self._replies(frame, ops, barriers)
        plan_threads = tuple(
            Thread(f"thread{t}", int(self.cpu_of[t]), tuple(ops[t])) for t in range(self.threads)
        )
        self._record = {
            "threads": self.threads,
            "boundary_messages": boundary,
            "reply_spread": spread,
        }
        return FramePlan(plan_threads, dict.fromkeys(barriers, self.threads))

    def _parallel_requests(
        self, index: int, messages: np.ndarray, ops: list[list], barriers: list
    ) -> int:
        """Sorting on thread 0, then the steps of the request schedule; returns the packets
        executed above the area level."""
        k = self.costs
        m = len(messages)
        own, packed = self.player_areas.gather(messages)
        schedule = request_schedule(own, self.threads, self.stage2)
        check_packet_workers(index, schedule.thread, self.threads)
        sort = (k.queue_per_message + k.lock_per_node * self.depth) * m
        ops[0].append(Compute("sort", sort))
        self._barrier(ops, "sorted", barriers)
        request = c.request_us(k, 1, messages["commands"], messages["range_count"])
        order = np.lexsort((np.arange(m), schedule.step))  # by step, then arrival
        steps = schedule.step[order].tolist()
        threads = schedule.thread[order].tolist()
        costs = request[order].tolist()
        locks = [self._ops_for(row.tobytes()) for row in packed[order]] if self.locking else None
        position = 0
        for step in range(schedule.steps):
            while position < m and steps[position] == step:
                t, cost = threads[position], costs[position]
                if locks is None:
                    ops[t].append(Compute("request", cost))
                else:
                    price, acquire, release = locks[position]
                    ops[t] += (Compute("lock", price), *acquire, Compute("request", cost), *release)
                position += 1
            self._barrier(ops, f"level{step}", barriers)
        return int(np.count_nonzero(schedule.step > 0))

    def _player_areas(self, origins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For every player at one tick: the node it is linked to, (N,) int, and the areas its
        action range meets, packed bits (N, ceil(areas / 8)) uint8."""
        own = self.tree.link(origins + PLAYER_MINS, origins + PLAYER_MAXS)
        reach = np.array([self.half_range, self.half_range, 0.0])
        meets = self.tree.overlaps(self.areas, origins - reach, origins + reach)
        return own, np.packbits(meets, axis=1)

    def _ops_for(self, packed: bytes) -> tuple[float, tuple, tuple]:
        """A packet's lock cost, us, and its Acquire and Release operations: the areas it
        meets, in node order (cached by area set)."""
        entry = self._lock_ops_of.get(packed)
        if entry is None:
            bits = np.unpackbits(np.frombuffer(packed, np.uint8), count=len(self.areas))
            held = [("area", int(a)) for a in self.areas[bits.astype(bool)]]
            k = self.costs
            price = k.lock_acquire * len(held) + k.lock_per_node * self.depth
            acquire = tuple(Acquire(lock) for lock in held)
            entry = (price, acquire, tuple(Release(lock) for lock in reversed(held)))
            self._lock_ops_of[packed] = entry
        return entry

    def _replies(self, frame: FrameWorkload, ops: list[list], barriers: list) -> int:
        """Stage 3; returns the spread (max - min) of replies per thread."""
        k = self.costs
        part1 = reply_info_phase(k, self.connected_clients)
        clients = frame.reply_clients
        if self.stage3 == "sequential":
            ops[0] += [
                part1,
                *reply_phase(k, len(clients), frame.visible_entities, frame.pvs_rooms),
            ]
            return 0
        if self.stage2 == "sequential":  # the end of stage 2, which the others waited through
            self._barrier(ops, "requests", barriers)
        ops[0].append(part1)
        self._barrier(ops, "internal", barriers, "internal_barrier_wait")
        if self.stage3 == "cyclic":
            thread_of = clients % self.threads
        else:
            thread_of = np.empty(len(clients), dtype=np.int64)
            thread_of[np.argsort(clients, kind="stable")] = np.arange(len(clients)) % self.threads
        replies = np.bincount(thread_of, minlength=self.threads)
        visible = np.bincount(thread_of, frame.reply_visible, minlength=self.threads)
        pvs = np.bincount(thread_of, frame.reply_pvs_rooms, minlength=self.threads)
        for t in np.flatnonzero(replies).tolist():
            ops[t] += reply_phase(k, replies[t], visible[t], pvs[t])
        self._barrier(ops, "end", barriers, "end_barrier_wait")
        return int(replies.max() - replies.min())

    def _barrier(
        self, ops: list[list], name: str, barriers: list, activity: str = "barrier_wait"
    ) -> None:
        barriers.append(name)
        self.barriers.append(ops, name, activity)

    def frame_record(self) -> dict[str, Any]:
        return self._record


STRATEGIES.register(
    "area-quadrant", StrategyKind("area-quadrant", AreaQuadrantOptions, AreaQuadrant)
)
