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

from simsrv.machine.plan import Acquire, Compute, FramePlan, Release, Thread
from simsrv.scenario.validation import StrictModel
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.phases import reply_info_phase
from simsrv.strategies.positions import POSITION_HISTORY_TICKS, PerTick
from simsrv.strategies.region_locks import LockScope, path_locks, path_nodes, walked_nodes
from simsrv.strategies.threads import (
    BarrierPassages,
    place_threads,
    resume_costs,
    thread_memory_bytes,
)
from simsrv.workload.frame import FrameWorkload
from simsrv.world.areanode import AreanodeTree
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS

BARRIERS = ("world", "requests", "replies")
GAMESTATE = "gamestate"
GAMESTATE_ENTER = (Acquire(GAMESTATE),)
GAMESTATE_EXIT = Release(GAMESTATE)


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
        resume = resume_costs(self.cpu_of, context.cpus, self.costs)
        self.barriers = BarrierPassages(self.costs.barrier, resume)
        self.barrier_parties = dict.fromkeys(BARRIERS, self.threads)
        self.tree = AreanodeTree.build(world.map.extent_min, world.map.extent_max)
        self.half_range = context.scenario.players.action_range / 2
        self.player_locks = PerTick(world, self._player_locks)
        self._lock_ops_of: dict[tuple[int, int], tuple[tuple, tuple]] = {}
        self._record: dict[str, Any] = {}
        self.memory_bytes, self.memory_reserved_bytes = thread_memory_bytes(
            self.threads, options.stack_pages
        )

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k = self.costs
        messages = frame.messages
        thread_of = messages["client"] % self.threads
        master = int(thread_of[0]) if len(messages) else 0
        lock_ops = None if self.options.locking == "none" else self._lock_ops(messages)
        request = c.request_us(k, 1, messages["commands"], messages["range_count"])
        reply_thread = frame.reply_clients % self.threads
        ops: list[list] = [[] for _ in range(self.threads)]
        ops[master] += [
            Compute("frame", k.frame_overhead),
            Compute("world", c.world_us(k, frame.entities) if frame.physics else 0.0),
        ]
        self.barriers.append(ops, "world")
        per_thread_messages = np.bincount(thread_of, minlength=self.threads)
        for t in np.flatnonzero(per_thread_messages):
            ops[t].append(Compute("net_recv", c.net_recv_us(k, int(per_thread_messages[t]))))
        if lock_ops is None:
            for t, cost in zip(thread_of.tolist(), request.tolist(), strict=True):
                ops[t].append(Compute("request", cost))
        else:
            share = self.options.gamestate_share
            clients = messages["client"].tolist()
            for t, client, cost, (price, acquire, release) in zip(
                thread_of.tolist(), clients, request.tolist(), lock_ops, strict=True
            ):
                if self.options.client_locks:
                    record = ("client", client)
                    acquire, release = (*acquire, Acquire(record)), (Release(record), *release)
                if share > 0.0:
                    body = (
                        Compute("request", cost - cost * share),
                        *GAMESTATE_ENTER,
                        Compute("request", cost * share),
                        GAMESTATE_EXIT,
                    )
                else:
                    body = (Compute("request", cost),)
                ops[t] += (Compute("lock", price), *acquire, *body, *release)
        self.barriers.append(ops, "requests")
        ops[master].append(reply_info_phase(k, self.connected_clients))
        replies = np.bincount(reply_thread, minlength=self.threads)
        visible = np.bincount(reply_thread, frame.reply_visible, minlength=self.threads)
        pvs = np.bincount(reply_thread, frame.reply_pvs_rooms, minlength=self.threads)
        for t in np.flatnonzero(replies):
            ops[t] += [
                Compute("reply", c.reply_us(k, replies[t], visible[t], pvs[t])),
                Compute("net_send", c.net_send_us(k, replies[t])),
            ]
        self.barriers.append(ops, "replies")
        threads = tuple(
            Thread(f"thread{t}", int(self.cpu_of[t]), tuple(ops[t])) for t in range(self.threads)
        )
        self._record = {
            "threads": self.threads,
            "master_thread": master,
            "memory_bytes": self.memory_bytes,
            "memory_reserved_bytes": self.memory_reserved_bytes,
        }
        return FramePlan(threads, self.barrier_parties)

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

    def _lock_ops(self, messages: np.ndarray) -> list[tuple[float, tuple, tuple]]:
        """Per packet: (acquisition cost us, its Acquire ops, its Release ops) for its areanode
        locks; the client-record and game-state locks' costs are included."""
        k = self.costs
        start, scope, walked, own_start, own, own_walked = self.player_locks.gather(messages)
        if self.options.locking == "region-optimized":
            alone = (messages["range_count"] == 0) & ~messages["shot"]
            start = np.where(alone, own_start, start)
            scope = np.where(alone, own, scope)
            walked = np.where(alone, own_walked, walked)
        pairs = [self._ops_for(a, b) for a, b in zip(start.tolist(), scope.tolist(), strict=True)]
        extra = int(self.options.client_locks) + int(self.options.gamestate_share > 0.0)
        locks = np.array([len(acquire) for acquire, _ in pairs], dtype=np.int64) + extra
        cost = k.lock_acquire * locks + k.lock_per_node * walked
        return [(price, *pair) for price, pair in zip(cost.tolist(), pairs, strict=True)]

    def _ops_for(self, start: int, top: int) -> tuple[tuple, tuple]:
        """The Acquire and Release operations of the areanode locks from ``start`` to ``top``
        (cached): the whole path (``leaf-to-root``) or its two ends (``two-nodes``)."""
        pair = self._lock_ops_of.get((start, top))
        if pair is None:
            if self.options.lock_scope == "leaf-to-root":
                path = path_nodes(start, top)
            else:
                path = (start,) if start == top else (start, top)
            nodes = [("areanode", n) for n in path]
            pair = (tuple(Acquire(n) for n in nodes), tuple(Release(n) for n in reversed(nodes)))
            self._lock_ops_of[(start, top)] = pair
        return pair

    def frame_record(self) -> dict[str, Any]:
        return self._record


STRATEGIES.register("abdelkhalek", StrategyKind("abdelkhalek", AbdelkhalekOptions, Abdelkhalek))
