"""``abdelkhalek``: the multithreaded QuakeWorld server of Abdelkhalek & Bilas (AB04).

MODEL.md §3 [P §3, T §2.2, R §2.2].  Static threads, each with its own socket; clients are
assigned to threads round-robin when they connect (client ``c`` to thread ``c mod T``) and never
move.  One frame:

1. World phase on the *master* thread (the thread of the frame's first packet: the first that
   received a request): fixed frame work and world physics when due.  Barrier ``world``.
2. Request phase: every thread drains its own socket (its clients' packets, in arrival order).
   With ``locking = "region"`` each packet takes, in this order:

   * the areanode locks of its region (:mod:`simsrv.strategies.region_locks`): with
     ``lock_scope = "leaf-to-root"`` every node from the leaf holding the sender up to the
     first node whose region contains the whole action range [P §3.2];
   * with ``client_locks``, the lock of the sender's client record [R §2.2: "locks on client
     data are needed to ensure data consistency.  In addition to locks on client data, the
     area in which a particular client is located needed to be locked"];
   * with ``gamestate_share`` > 0, the lock of the central game state around that share of
     the packet's execution, at its end: QuakeC-interpreted actions touch a central
     game-state structure, so they are locked conservatively [R §6]; the interpreter itself
     is not reentrant (``QW/server/pr_exec.c`` keeps its stack, depth and ``self`` in
     process globals).

   Acquiring costs ``lock_acquire`` per lock plus ``lock_per_node`` per node the walk visits
   (down from the root to the leaf, then up).  The locks are mutexes of the simulated
   machine: a thread that finds one held waits (``lock_wait``), so contention emerges from
   positions and timing.  Barrier ``requests``.
3. Reply phase: the master writes the score and broadcast messages of every connected client
   (``reply_info_per_client``), then every thread replies to its own clients that sent
   packets; no locks.
   Barrier ``replies``; the frame ends.

Every barrier costs ``barrier`` per thread.  Options (``[server.options]``):

``threads``
    Number of threads (0 = one per CPU; may exceed the CPUs, e.g. 8 threads on 4
    hyper-threaded CPUs), or ``"per-client"``: one thread per client (AB04's other variant).
    Threads are spread over physical cores first (thread ``t`` on core ``t mod cores``).
    A thread that shares its CPU with other threads of the server pays a context switch plus
    ``thread_cache_refill`` (its cold stack and state: the per-thread memory cost of MODEL.md
    §6 [M]) every time it resumes after a barrier.
``locking``
    ``region`` (above), ``none`` (no locks at all: unsafe, a lower bound) or
    ``region-optimized``: our reading of AB04's semantic optimisation.  A packet whose mover
    has nothing in its action range (``|L_a| = 0``) and does not shoot can only modify the
    mover itself, so its region is the mover's own box, not the whole action range.
``lock_scope``
    ``leaf-to-root`` (above, [P §3.2]) or ``two-nodes``: only the node the sender is linked
    to and the node covering the range (the earlier reading, for the ablation).
``client_locks``
    Lock the sender's client record (on by default, [R §2.2]).
``stack_pages``
    Resident pages of each thread's stack: the run reports ``memory_bytes`` (threads x pages x
    4 kB) and ``memory_reserved_bytes`` (threads x 2 MiB of virtual stack) [M], the memory
    side of a thread per client against one thread per CPU.
``gamestate_share``
    Share of each packet's execution done under the game-state lock (0 = no such lock).
    Default 0.25: the QuakeC interpreter's share of ``SV_RunCmd`` in id's own profile of the
    server (``QW/server/profile.txt``: ``PR_ExecuteProgram`` and callees 3,860 ms over 108,369
    calls, of which the ~91,000 ``PlayerPreThink``/``PlayerPostThink`` calls of
    ``SV_RunCmd``'s 45,555 commands take 3,250-3,580 ms, against ``SV_RunCmd``'s 13,855 ms:
    23-26 %).  docs/abdelkhalek.md has the sensitivity of AB04's figures to it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty
from simsrv.frame_steps.kernels import finish_frame, frame_messages, next_frame
from simsrv.frame_steps.state import PHYSICS, REASON, REPLIES, RING, ROW
from simsrv.machine.plan_arrays import (
    ACQUIRE,
    BARRIER,
    COMPUTE,
    COUNT,
    FILL,
    RELEASE,
    PlanArrays,
)
from simsrv.machine.plan_arrays import emit as _emit
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
from simsrv.strategies.region_locks import LockScope, lock_tables
from simsrv.strategies.sends import DEVICE_LOCK, emit_sends
from simsrv.strategies.threads import place_threads, resume_costs, thread_memory_bytes
from simsrv.workload.frame import FrameWorkload
from simsrv.world.areanode import AreanodeTree
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS

BARRIERS = ("world", "requests", "replies")
GAMESTATE = "gamestate"
ACTIVITIES = (
    "frame",
    "world",
    "barrier",
    "barrier_wait",
    "context_switch",
    "net_recv",
    "lock",
    "request",
    "reply_info",
    "reply",
    "net_send",
)
"""The plan's activities; the codes below index it."""
FRAME, WORLD, BARRIER_COST, BARRIER_WAIT, SWITCH, NET_RECV = range(6)
LOCK, REQUEST, REPLY_INFO, REPLY, NET_SEND = range(6, 11)


RECORD_NAMES = ("threads", "master_thread", "memory_bytes", "memory_reserved_bytes")
"""The frame record's columns (:meth:`Abdelkhalek.frame_record`)."""


class AbdelkhalekOptions(StrictModel):
    """Options of ``abdelkhalek`` (``[server.options]``)."""

    threads: Annotated[int, Field(ge=0, le=1024)] | Literal["per-client"] = Field(
        0, description="server threads (0 = one per CPU, at most 1024), or 'per-client'"
    )
    locking: Literal["region", "region-optimized", "none"] = Field(
        "region", description="areanode locks per packet ('none': no locks)"
    )
    lock_scope: LockScope = Field(
        "leaf-to-root",
        description="areanode locks of a packet: every node from the sender's leaf up to the "
        "node covering its region ('leaf-to-root', P §3.2), or that node and the sender's "
        "linked node ('two-nodes')",
    )
    client_locks: bool = Field(True, description="lock the sender's client record (R §2.2)")
    stack_pages: int = Field(
        1,
        ge=1,
        le=512,
        description="resident 4 kB pages of each thread's stack (M: at least one; the metric "
        "memory_bytes)",
    )
    gamestate_share: float = Field(
        0.25,
        ge=0.0,
        le=1.0,
        description="share of a packet's execution under the central game-state lock (R §6; "
        "0 = no such lock; 0.25 = QuakeC's share of SV_RunCmd in id's profile)",
    )


class Abdelkhalek(Strategy):
    """Static threads with per-thread sockets, phase barriers and areanode region locks."""

    options: AbdelkhalekOptions
    has_frame_kernel = True
    frame_record_names = RECORD_NAMES

    def __init__(self, options: AbdelkhalekOptions, context: StrategyContext) -> None:
        super().__init__(options, context)
        world = context.world
        world.keep_neighbours(POSITION_HISTORY_TICKS)
        if options.threads == "per-client":
            self.threads = world.players
        else:
            self.threads = options.threads or context.cpus
        self.cpu_of = place_threads(self.threads, context.cpus, context.platform.smt_per_core)
        self.cpu_of = self.cpu_of.astype(np.int64)
        self.resume_us = resume_costs(self.cpu_of, context.cpus, self.cost_vector)
        self.thread_names = tuple(f"thread{t}" for t in range(self.threads))
        self.barrier_parties = np.full(len(BARRIERS), self.threads, np.int64)
        self.tree = AreanodeTree.build(world.map.extent_min, world.map.extent_max)
        self.half_range = context.scenario.players.action_range / 2
        locking = options.locking != "none"
        self.player_locks = PerTick(world, self._player_locks) if locking else None
        self.client_ids = range(world.players)
        self.lock_names = (
            *(("areanode", n) for n in range(self.tree.nodes)),
            *(("client", client) for client in self.client_ids),
            GAMESTATE,
            DEVICE_LOCK,
        )
        """Lock id -> name: the areanodes, then the client records, then the game state, then
        the network device's transmit lock."""
        self.plan_names = (
            self.cpu_of,
            self.thread_names,
            ACTIVITIES,
            BARRIERS,
            self.barrier_parties,
            self.lock_names,
        )
        """Every plan's fields after its operation columns (:class:`PlanArrays` order)."""
        self._record: dict[str, Any] = {}
        self.memory_bytes, self.memory_reserved_bytes = thread_memory_bytes(
            self.threads, options.stack_pages
        )
        self.share = options.gamestate_share if locking else 0.0
        """The share of a packet's execution under the game-state lock (0: no such lock)."""
        self.flags = np.array(
            [
                self.threads,
                locking,
                options.lock_scope == "leaf-to-root",
                options.client_locks,
                self.share > 0.0,
                self.tree.nodes,
                self.tree.nodes + len(self.client_ids),
                options.locking == "region-optimized",
                self.tree.nodes + len(self.client_ids) + 1,
            ],
            dtype=np.int64,
        )
        self.xmit_us = xmit_us(context.platform)
        """A reply's time under the device's transmit lock, us (0: no such lock)."""

    def plan(self, frame: FrameWorkload) -> PlanArrays:
        messages, ring = frame.messages, self.player_locks
        if ring is not None and not ring.tables:
            ring.load(messages["tick"])
        while True:
            ticks, tables = (ring.ticks, ring.tables) if ring and ring.tables else _NO_RING
            *columns, master, complete = _plan(
                self.flags, self.cost_vector, self.share, self.xmit_us, self.resume_us,
                bool(frame.physics),
                frame.entities, self.connected_clients, ticks, *tables, messages,
                frame.reply_clients, frame.reply_visible, frame.reply_pvs_rooms,
            )  # fmt: skip
            if complete:
                break
            ring.load(messages["tick"])  # a packet's tick is not in the ring yet
        values = (self.threads, master, self.memory_bytes, self.memory_reserved_bytes)
        self._record = dict(zip(RECORD_NAMES, values, strict=True))
        return PlanArrays(*columns, *self.plan_names)

    def frame_kernel(self, ticks: np.ndarray) -> FrameKernel | None:
        if self.connected is not None:  # a cluster node: its connected clients vary
            return None
        ring_ticks, tables = ring_arguments(self.player_locks, ticks, _NO_RING)
        constants = np.array(
            [
                self.context.world.entity_count,
                self.connected_clients,
                self.threads,
                self.memory_bytes,
                self.memory_reserved_bytes,
            ],
            np.int64,
        )
        args = (
            self.flags, self.cost_vector, self.share, self.xmit_us, self.resume_us, constants,
            ring_ticks, *tables,
        )  # fmt: skip
        names = PlanArrays.names_only(*self.plan_names)
        return FrameKernel(_frames, args, names)

    def _player_locks(self, origins: np.ndarray) -> tuple[np.ndarray, ...]:
        """For every player at one tick, (N,) int64 each: where its lock walk starts and the
        node covering its action range, the same for its own box (the optimised region), and
        the nodes the walk visits for each (:func:`~simsrv.strategies.region_locks.lock_tables`,
        one compiled call: the integers of :func:`path_locks`, ``AreanodeTree.link`` and
        ``covering`` and :func:`walked_nodes`)."""
        tree = self.tree
        return lock_tables(
            tree.axis, tree.dist, tree.lo, tree.hi, tree.depth, origins, PLAYER_MINS,
            PLAYER_MAXS, self.half_range, self.options.lock_scope == "leaf-to-root",
        )  # fmt: skip

    def frame_record(self) -> dict[str, Any]:
        return self._record


_NO_RING = (np.full(1, -1, np.int64), tuple(np.zeros((1, 1), np.int64) for _ in range(6)))
"""The ring arguments of a plan without locks (never read)."""
ENTITIES, CONNECTED, THREADS, MEMORY, MEMORY_RESERVED = range(5)
"""The compiled loop's ``constants`` (:meth:`Abdelkhalek.frame_kernel`): the world's entities,
the connected clients, then the frame record's constant columns."""


@compiled
def _plan(
    flags, k, share, xmit, resume, physics, entities, connected, ring_ticks, ring_start, ring_scope,
    ring_walked, ring_own_start, ring_own, ring_own_walked, messages, reply_clients,
    reply_visible, reply_pvs,
):  # fmt: skip
    """The frame's plan columns (thread, kind, cost, arg, activity), its master thread and
    True; or empty columns and False when a packet's tick is not in the ring (load it and
    call again).  ``flags``: threads, locking, leaf-to-root, client locks, game-state lock,
    first client lock id, game-state lock id, region-optimized, device lock id; ``k``: the
    platform's cost vector (:func:`~simsrv.strategies.costs.cost_vector`); ``share``: the
    share of a packet's execution under the game-state lock; ``xmit``: a reply's time under
    the device's transmit lock, us (0: none; :mod:`~simsrv.strategies.sends`); ``resume``:
    each thread's cost of resuming after a barrier, us; whether world physics runs, the
    entities it simulates, the connected clients; the ring (:class:`PerTick` of
    :meth:`Abdelkhalek._player_locks`); the packets (read order); the replied clients with
    their visible entities and PVS rooms.  Every cost is a function of :mod:`costs
    <simsrv.strategies.costs>` (``request_us`` and ``lock_us`` per packet; ``net_recv_us``,
    ``reply_us``, ``net_send_us`` of each thread's counts, summed in the same order as
    ``np.bincount``)."""
    threads, locking, optimized = flags[0], flags[1], flags[7]
    m = len(messages)
    clients, ticks = messages["client"], messages["tick"]
    commands, range_count, shot = messages["commands"], messages["range_count"], messages["shot"]
    thread_of = empty(m, np.int64)
    start, top, walked = np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64)
    before, under = empty(m), empty(m)
    received = np.zeros(threads, np.int64)
    slot = -1
    for i in range(m):
        t = clients[i] % threads
        thread_of[i] = t
        received[t] += 1
        request = c.request_us(k, 1, commands[i], range_count[i])
        if share > 0.0:
            before[i], under[i] = request - request * share, request * share
        else:
            before[i], under[i] = request, request
        if locking:
            slot = slot_of(ring_ticks, ticks[i], slot)
            if slot < 0:
                none = empty(0, np.int64)
                return none, none.astype(np.int8), empty(0), none, none, 0, False
            client = clients[i]
            if optimized and range_count[i] == 0 and not shot[i]:  # only the mover itself
                start[i] = ring_own_start[slot, client]
                top[i] = ring_own[slot, client]
                walked[i] = ring_own_walked[slot, client]
            else:
                start[i] = ring_start[slot, client]
                top[i] = ring_scope[slot, client]
                walked[i] = ring_walked[slot, client]
    master = thread_of[0] if m else 0
    replies = np.zeros(threads, np.int64)
    visible, pvs = np.zeros(threads), np.zeros(threads)
    for j in range(len(reply_clients)):
        t = reply_clients[j] % threads
        replies[t] += 1
        visible[t] += reply_visible[j]
        pvs[t] += reply_pvs[j]
    net_recv, reply, net_send = empty(threads), empty(threads), empty(threads)
    for t in range(threads):
        net_recv[t] = c.net_recv_us(k, received[t])
        reply[t] = c.reply_us(k, replies[t], visible[t], pvs[t])
        net_send[t] = c.net_send_us(k, replies[t])
    world = c.world_us(k, entities) if physics else 0.0
    reply_info = c.reply_info_us(k, connected)
    count, none = np.zeros(threads, np.int64), empty(0, np.int64)
    _ops(COUNT, count, none, none.astype(np.int8), empty(0), none, none, flags, master,
         k, xmit, world, reply_info, resume, received, net_recv, reply, net_send, replies,
         thread_of, walked, before, under, start, top, clients)  # fmt: skip
    total = count.sum()
    at = np.zeros(threads, np.int64)
    for t in range(1, threads):
        at[t] = at[t - 1] + count[t - 1]
    thread, kind = empty(total, np.int64), empty(total, np.int8)
    cost, arg, activity = np.zeros(total), np.full(total, -1, np.int64), empty(total, np.int64)
    _ops(FILL, at, thread, kind, cost, arg, activity, flags, master, k, xmit, world,
         reply_info, resume, received, net_recv, reply, net_send, replies, thread_of, walked,
         before, under, start, top, clients)  # fmt: skip
    return thread, kind, cost, arg, activity, master, True


@compiled
def _frames(
    loop, flags, k, share, xmit, resume, constants, ring_ticks, ring_start, ring_scope, ring_walked,
    ring_own_start, ring_own, ring_own_walked, records,
):  # fmt: skip
    """The compiled frame loop (:class:`~simsrv.strategies.base.FrameKernel`): frames as
    :meth:`Abdelkhalek.plan` plans them, until a step stops; the reason.  ``constants``:
    indexed by :data:`ENTITIES` ... :data:`MEMORY_RESERVED`."""
    ints, machine = loop.ints, loop.machine  # taken once (reference counts)
    while next_frame(loop):
        replies = ints[REPLIES]
        thread, kind, cost, arg, activity, master, complete = _plan(
            flags, k, share, xmit, resume, ints[PHYSICS] != 0, constants[ENTITIES],
            constants[CONNECTED], ring_ticks, ring_start, ring_scope, ring_walked,
            ring_own_start, ring_own, ring_own_walked, frame_messages(loop),
            loop.reply_clients[:replies], loop.reply_visible[:replies],
            loop.reply_pvs[:replies],
        )  # fmt: skip
        if not complete:
            return RING
        if not finish_frame(loop, machine, thread, kind, cost, arg, activity):
            break
        row = ints[ROW] - 1  # the frame's row in the call's frame columns
        records[row, 0], records[row, 1] = constants[THREADS], master
        records[row, 2], records[row, 3] = constants[MEMORY], constants[MEMORY_RESERVED]
    return ints[REASON]


@borrowing
def _ops(
    fill, at, thread, kind, cost, arg, activity, flags, master, k, xmit, world, reply_info,
    resume,
    received, net_recv, reply, net_send, replies, thread_of, walked, before, under, start, top,
    client,
):  # fmt: skip
    """Emit the frame's operations (:func:`~simsrv.machine.plan_arrays.emit`), per thread in
    the order of the module docstring: the world phase (the master), barrier ``world``,
    receiving, each of its packets (lock walk cost, areanode path bottom-up, client record,
    the request with the game-state lock around its last share, releases in reverse),
    barrier ``requests``, the replies, barrier ``replies``.  ``k``: the cost vector
    (:func:`~simsrv.strategies.costs.cost_vector`); ``xmit``: a reply's time under the
    device's transmit lock (:func:`~simsrv.strategies.sends.emit_sends`); ``world``,
    ``reply_info``: the frame's world physics and scores and broadcasts, us."""
    threads = flags[0]
    locking, leaf_to_root, client_locks, gamestate = flags[1], flags[2], flags[3], flags[4]
    client_base, gamestate_id = flags[5], flags[6]
    out = (fill, at, thread, kind, cost, arg, activity)
    _emit(*out, master, COMPUTE, k[0].frame_overhead, -1, FRAME)
    _emit(*out, master, COMPUTE, world, -1, WORLD)
    for barrier in range(3):
        if barrier == 1:
            for m in range(len(thread_of)):
                t = thread_of[m]
                if not locking:
                    _emit(*out, t, COMPUTE, before[m], -1, REQUEST)
                    continue
                locks = client_locks + gamestate + 1  # the path's length, the other locks
                node = start[m]
                while node != top[m]:
                    node = (node - 1) // 2 if leaf_to_root else top[m]
                    locks += 1
                _emit(*out, t, COMPUTE, c.lock_us(k, locks, walked[m]), -1, LOCK)
                node = start[m]
                while True:  # the areanode path, bottom-up
                    _emit(*out, t, ACQUIRE, 0.0, node, -1)
                    if node == top[m]:
                        break
                    node = (node - 1) // 2 if leaf_to_root else top[m]
                if client_locks:
                    _emit(*out, t, ACQUIRE, 0.0, client_base + client[m], -1)
                _emit(*out, t, COMPUTE, before[m], -1, REQUEST)
                if gamestate:
                    _emit(*out, t, ACQUIRE, 0.0, gamestate_id, -1)
                    _emit(*out, t, COMPUTE, under[m], -1, REQUEST)
                    _emit(*out, t, RELEASE, 0.0, gamestate_id, -1)
                if client_locks:
                    _emit(*out, t, RELEASE, 0.0, client_base + client[m], -1)
                node = top[m]
                while True:  # the path top-down
                    _emit(*out, t, RELEASE, 0.0, node, -1)
                    if node == start[m]:
                        break
                    if leaf_to_root:
                        below = start[m]  # the child of ``node`` on the path
                        while (below - 1) // 2 != node:
                            below = (below - 1) // 2
                        node = below
                    else:
                        node = start[m]
        elif barrier == 2:
            _emit(*out, master, COMPUTE, reply_info, -1, REPLY_INFO)
            for t in range(threads):
                if replies[t]:
                    _emit(*out, t, COMPUTE, reply[t], -1, REPLY)
                    emit_sends(*out, t, replies[t], net_send[t], k[0].net_send_per_reply, xmit,
                               flags[8], NET_SEND)  # fmt: skip
        for t in range(threads):
            _emit(*out, t, COMPUTE, k[0].barrier, -1, BARRIER_COST)
            _emit(*out, t, BARRIER, 0.0, barrier, BARRIER_WAIT)
            if resume[t] > 0:
                _emit(*out, t, COMPUTE, resume[t], -1, SWITCH)
        if barrier == 0:
            for t in range(threads):
                if received[t]:
                    _emit(*out, t, COMPUTE, net_recv[t], -1, NET_RECV)


STRATEGIES.register("abdelkhalek", StrategyKind("abdelkhalek", AbdelkhalekOptions, Abdelkhalek))
