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

from simsrv.compiled import compiled
from simsrv.machine.plan_arrays import (
    ACQUIRE,
    BARRIER,
    COMPUTE,
    RELEASE,
    PlanArrays,
    counting_columns,
    filling_columns,
)
from simsrv.machine.plan_arrays import emit as _emit
from simsrv.scenario.validation import StrictModel
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.positions import POSITION_HISTORY_TICKS, PerTick
from simsrv.strategies.region_locks import LockScope, path_locks, walked_nodes
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
        self.resume_us = resume_costs(self.cpu_of, context.cpus, self.costs)
        self.thread_names = tuple(f"thread{t}" for t in range(self.threads))
        self.barrier_parties = np.full(len(BARRIERS), self.threads, np.int64)
        self.tree = AreanodeTree.build(world.map.extent_min, world.map.extent_max)
        self.half_range = context.scenario.players.action_range / 2
        self.player_locks = PerTick(world, self._player_locks)
        self.client_ids = range(world.players)
        self.lock_names = (
            *(("areanode", n) for n in range(self.tree.nodes)),
            *(("client", client) for client in self.client_ids),
            GAMESTATE,
        )
        """Lock id -> name: the areanodes, then the client records, then the game state."""
        self._record: dict[str, Any] = {}
        self.memory_bytes, self.memory_reserved_bytes = thread_memory_bytes(
            self.threads, options.stack_pages
        )

    def plan(self, frame: FrameWorkload) -> PlanArrays:
        k = self.costs
        messages = frame.messages
        threads = self.threads
        thread_of = messages["client"] % threads
        master = int(thread_of[0]) if len(messages) else 0
        request = c.request_us(k, 1, messages["commands"], messages["range_count"])
        options = self.options
        locking = options.locking != "none"
        share = options.gamestate_share if locking else 0.0
        if locking:
            start, top, walked = self._lock_arrays(messages)
        else:
            start = top = walked = np.zeros(len(messages), np.int64)
        if share > 0.0:
            before, under = request - request * share, request * share
        else:
            before, under = request, request
        per_thread_messages = np.bincount(thread_of, minlength=threads)
        reply_thread = frame.reply_clients % threads
        replies = np.bincount(reply_thread, minlength=threads)
        visible = np.bincount(reply_thread, frame.reply_visible, minlength=threads)
        pvs = np.bincount(reply_thread, frame.reply_pvs_rooms, minlength=threads)
        head = np.array(
            [
                k.frame_overhead,
                c.world_us(k, frame.entities) if frame.physics else 0.0,
                k.barrier,
                c.reply_info_us(k, self.connected_clients),
                k.lock_acquire,
                k.lock_per_node,
            ]
        )
        flags = np.array(
            [
                threads,
                master,
                locking,
                options.lock_scope == "leaf-to-root",
                options.client_locks,
                share > 0.0,
                self.tree.nodes,
                self.tree.nodes + len(self.client_ids),
            ],
            dtype=np.int64,
        )
        columns = _build_plan(
            flags,
            head,
            self.resume_us,
            per_thread_messages,
            c.net_recv_us(k, per_thread_messages),
            c.reply_us(k, replies, visible, pvs),
            c.net_send_us(k, replies),
            replies,
            thread_of.astype(np.int64),
            walked.astype(np.int64),
            before,
            under,
            start.astype(np.int64),
            top.astype(np.int64),
            messages["client"].astype(np.int64),
        )
        self._record = {
            "threads": threads,
            "master_thread": master,
            "memory_bytes": self.memory_bytes,
            "memory_reserved_bytes": self.memory_reserved_bytes,
        }
        return PlanArrays(
            *columns,
            thread_cpu=self.cpu_of,
            thread_names=self.thread_names,
            activities=ACTIVITIES,
            barrier_names=BARRIERS,
            barrier_parties=self.barrier_parties,
            locks=self.lock_names,
        )

    def _player_locks(self, origins: np.ndarray) -> tuple[np.ndarray, ...]:
        """For every player at one tick, (N,) int each: where its lock walk starts and the node
        covering its action range, the same for its own box (the optimised region), and the
        nodes the walk visits for each."""
        box_min, box_max = origins + PLAYER_MINS, origins + PLAYER_MAXS
        reach = np.array([self.half_range, self.half_range, 0.0])
        if self.options.lock_scope == "leaf-to-root":
            start, scope = path_locks(self.tree, origins, origins - reach, origins + reach)
            own = self.tree.covering(start, box_min, box_max)[0]
            own_start = start
        else:
            own = own_start = self.tree.link(box_min, box_max)
            start = own
            scope = self.tree.covering(own, origins - reach, origins + reach)[0]
        return (
            start,
            scope,
            walked_nodes(start, scope),
            own_start,
            own,
            walked_nodes(own_start, own),
        )

    def _lock_arrays(self, messages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per packet, (N,) int each: the first and the last node of its areanode lock path
        and the nodes its acquiring walk visits."""
        start, scope, walked, own_start, own, own_walked = self.player_locks.gather(messages)
        if self.options.locking == "region-optimized":
            alone = (messages["range_count"] == 0) & ~messages["shot"]
            start = np.where(alone, own_start, start)
            scope = np.where(alone, own, scope)
            walked = np.where(alone, own_walked, walked)
        return start, scope, walked

    def frame_record(self) -> dict[str, Any]:
        return self._record


@compiled
def _build_plan(
    flags, head, resume, received, net_recv, reply, net_send, replies, thread_of, walked,
    before, under, start, top, client,
):  # fmt: skip
    """The frame's plan columns (thread, kind, cost, arg, activity) in the order of the module
    docstring: per thread, the world phase (the master), barrier ``world``, receiving, each of
    its packets (lock walk cost, areanode path bottom-up, client record, the request with the
    game-state lock around its last share, releases in reverse), barrier ``requests``, the
    replies, barrier ``replies``.  ``flags``: threads, master, locking, leaf-to-root,
    client locks, game-state lock, first client lock id, game-state lock id; ``head``: frame,
    world, barrier, reply-info, per-lock and per-walked-node costs, us; ``walked``: nodes each
    packet's lock walk visits.  A first pass counts each thread's operations,
    the second writes them."""
    threads = flags[0]
    count, thread, kind, cost, arg, activity = counting_columns(threads)
    _ops(False, count, thread, kind, cost, arg, activity, flags, head, resume, received,
         net_recv, reply, net_send, replies, thread_of, walked, before, under, start, top,
         client)  # fmt: skip
    at, thread, kind, cost, arg, activity = filling_columns(count)
    _ops(True, at, thread, kind, cost, arg, activity, flags, head, resume, received,
         net_recv, reply, net_send, replies, thread_of, walked, before, under, start, top,
         client)  # fmt: skip
    return thread, kind, cost, arg, activity


@compiled
def _ops(
    fill, at, thread, kind, cost, arg, activity, flags, head, resume, received, net_recv,
    reply, net_send, replies, thread_of, walked, before, under, start, top, client,
):  # fmt: skip
    threads, master = flags[0], flags[1]
    locking, leaf_to_root, client_locks, gamestate = flags[2], flags[3], flags[4], flags[5]
    client_base, gamestate_id = flags[6], flags[7]
    out = (fill, at, thread, kind, cost, arg, activity)
    _emit(*out, master, COMPUTE, head[0], -1, FRAME)
    _emit(*out, master, COMPUTE, head[1], -1, WORLD)
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
                price = head[4] * locks + head[5] * walked[m]  # as numpy: float64 products
                _emit(*out, t, COMPUTE, price, -1, LOCK)
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
            _emit(*out, master, COMPUTE, head[3], -1, REPLY_INFO)
            for t in range(threads):
                if replies[t]:
                    _emit(*out, t, COMPUTE, reply[t], -1, REPLY)
                    _emit(*out, t, COMPUTE, net_send[t], -1, NET_SEND)
        for t in range(threads):
            _emit(*out, t, COMPUTE, head[2], -1, BARRIER_COST)
            _emit(*out, t, BARRIER, 0.0, barrier, BARRIER_WAIT)
            if resume[t] > 0:
                _emit(*out, t, COMPUTE, resume[t], -1, SWITCH)
        if barrier == 0:
            for t in range(threads):
                if received[t]:
                    _emit(*out, t, COMPUTE, net_recv[t], -1, NET_RECV)


STRATEGIES.register("abdelkhalek", StrategyKind("abdelkhalek", AbdelkhalekOptions, Abdelkhalek))
