"""``abdelkhalek``: the multithreaded QuakeWorld server of Abdelkhalek & Bilas (AB04).

MODEL.md §3 [P §3, T §2.2, R §2.2].  Static threads, each with its own socket; clients are
assigned to threads round-robin when they connect (client ``c`` to thread ``c mod T``) and never
move.  One frame:

1. World phase on the *master* thread (the thread of the frame's first packet: the first that
   received a request): fixed frame work and world physics when due.  Barrier ``world``.
2. Request phase: every thread drains its own socket (its clients' packets, in arrival order).
   With ``locking = "region"`` each packet first locks areanode nodes
   (:mod:`simsrv.world.areanode`): the node holding the client's box, then, walking up, the first
   node whose region contains the whole action range (the entities the move may modify); the
   two are one lock when the same.  Acquiring costs ``lock_acquire`` per lock plus
   ``lock_per_node`` per node traversed (down from the root to the client's node, then up).
   The locks are mutexes of the simulated machine: a thread that finds one held waits
   (``lock_wait``), so contention emerges from positions and timing.  Barrier ``requests``.
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
    ``region`` (above), ``none`` (no locks: unsafe, a lower bound) or ``region-optimized``:
    our reading of AB04's semantic optimisation.  A packet whose mover has nothing in its
    action range (``|L_a| = 0``) and does not shoot can only modify the mover itself, so it
    locks only the node holding the mover, not the node covering the whole range.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from simsrv.invariants import check_packet_workers
from simsrv.machine.plan import Acquire, Compute, FramePlan, Release, Thread
from simsrv.scenario.validation import StrictModel
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.phases import reply_info_phase
from simsrv.strategies.positions import POSITION_HISTORY_TICKS, PerTick
from simsrv.strategies.threads import BarrierPassages, place_threads, resume_costs
from simsrv.workload.frame import FrameWorkload
from simsrv.world.areanode import AreanodeTree
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS

BARRIERS = ("world", "requests", "replies")


class AbdelkhalekOptions(StrictModel):
    """Options of ``abdelkhalek`` (``[server.options]``)."""

    threads: Annotated[int, Field(ge=0, le=1024)] | Literal["per-client"] = Field(
        0, description="server threads (0 = one per CPU, at most 1024), or 'per-client'"
    )
    locking: Literal["region", "region-optimized", "none"] = Field(
        "region", description="areanode locks per packet ('none': no locks)"
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

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k = self.costs
        messages = frame.messages
        thread_of = messages["client"] % self.threads
        check_packet_workers(frame.index, messages["client"], thread_of, self.threads, True)
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
            for t, cost, (price, acquire, release) in zip(
                thread_of.tolist(), request.tolist(), lock_ops, strict=True
            ):
                ops[t] += (Compute("lock", price), *acquire, Compute("request", cost), *release)
        self.barriers.append(ops, "requests")
        ops[master].append(reply_info_phase(k, self.context.scenario.players.count))
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
        self._record = {"threads": self.threads, "master_thread": master}
        return FramePlan(threads, self.barrier_parties)

    def _player_locks(self, origins: np.ndarray) -> tuple[np.ndarray, ...]:
        """For every player at one tick: its node, the node covering its action range, and
        the nodes walked to lock that (down to its node, then up), (N,) int each."""
        own = self.tree.link(origins + PLAYER_MINS, origins + PLAYER_MAXS)
        reach = np.array([self.half_range, self.half_range, 0.0])
        scope, steps = self.tree.covering(own, origins - reach, origins + reach)
        depth = AreanodeTree.node_depth(own)
        return own, scope, depth + steps, depth

    def _lock_ops(self, messages: np.ndarray) -> list[tuple[float, tuple, tuple]]:
        """Per packet: (acquisition cost us, its Acquire ops, its Release ops)."""
        k = self.costs
        own, scope, walked, depth = self.player_locks.gather(messages)
        if self.options.locking == "region-optimized":
            alone = (messages["range_count"] == 0) & ~messages["shot"]
            scope = np.where(alone, own, scope)
            walked = np.where(alone, depth, walked)
        locks = np.where(scope == own, 1, 2)
        cost = k.lock_acquire * locks + k.lock_per_node * walked
        return [
            (price, *self._ops_for(node, top))
            for node, top, price in zip(own.tolist(), scope.tolist(), cost.tolist(), strict=True)
        ]

    def _ops_for(self, node: int, top: int) -> tuple[tuple, tuple]:
        """The Acquire and Release operations that lock ``node`` and ``top`` (cached)."""
        pair = self._lock_ops_of.get((node, top))
        if pair is None:
            nodes = [("areanode", node)] if node == top else [("areanode", node), ("areanode", top)]
            pair = (tuple(Acquire(n) for n in nodes), tuple(Release(n) for n in reversed(nodes)))
            self._lock_ops_of[(node, top)] = pair
        return pair

    def frame_record(self) -> dict[str, Any]:
        return self._record


STRATEGIES.register("abdelkhalek", StrategyKind("abdelkhalek", AbdelkhalekOptions, Abdelkhalek))
