"""``quaketm``: QuakeTM's lock-based OpenMP QuakeWorld server (Gajinov et al., ICS 2009).

The server the testbed measures (``simsrv testbed --server quaketm-VARIANT``, docs/quaketm.md):
id's QuakeWorld 2.40 server whose request stage runs as OpenMP tasks under locks, its frames
at a fixed period (``server.frame_period_s``: 0.1 s stock).  One frame, as the source runs it
(``server/sv_main.c``: ``SV_Frame``, ``SV_ReadPackets``):

1. On the main thread (thread 0): fixed frame work, world physics (``SV_Physics``, every
   frame), the packets read into a list (``recvfrom`` per packet, ``net_recv``, and copying
   it and finding its client, ``read``: ``queue_per_message`` each).
2. The request stage (not in the ``serial`` build): the main thread forks the team of
   ``threads`` threads (barrier ``fork``: the others sleep between frames and are woken, a
   sleeper paying the platform's ``signal_wakeup`` and its CPU's cold start), and every
   thread passes the barrier the region's ``copyin`` makes (``copyin``: no task runs before
   the whole team is awake); one thread makes one task per client with packets (``omp
   single``) and every thread takes tasks until none is left; a task processes its client's
   packets of the frame in order.  The tasks' order is the clients' first packets' order;
   which thread runs which is planned by list scheduling on the tasks' planned work (each
   task to the thread free first): the real runtime hands a task to whichever thread asks
   next, which the plan follows but for lock waits it cannot foresee.  Barrier ``requests``:
   the end of the ``single`` construct, which waits for every task.
3. On the main thread: the replies (``SV_SendClientMessages``), per replied client.

Locks (``server/tm_macros.h``; read in ``sv_user.c`` and ``sv_main.c``):

``global``
    Every packet's whole processing under ``global_lock`` (``LOCK_GLOBAL`` around
    ``Netchan_Process`` and ``SV_ExecuteClientMessage``): the tasks run one at a time.
``coarse``
    ``SV_RunCmd``'s four ``LOCK_COARSE`` sections per user command (the player's think
    functions, ``AddLinksToPmove``, ``PlayerMove``, linking and touching) and
    ``SV_PostRunCmd``'s one per move take ``global_lock``; parsing the packet
    (``Netchan_Process``, the move's deltas and checksum) runs outside it.  ``locked_share``
    of a packet's request work is inside the sections, spread evenly over them.
``fine``
    The same ``LOCK_COARSE`` sections: without ``DO_COARSE`` ``tm_macros.h`` still defines
    ``LOCK_COARSE`` as ``LOCK(global_lock)``, so the fine build holds the global lock there
    too, and takes its areanode, client-message, edict and memory locks inside those
    sections, where no other thread can contend for them; they cost ``lock_acquire`` each
    (``fine_locks_per_packet`` a packet).
``serial``
    No OpenMP tasks, no locks: each packet read and processed in turn on the main thread.

A contended lock hands over to a sleeping waiter (libgomp's futex mutex with a passive wait
policy): the machine charges the waiter ``signal_wakeup`` (and the releaser
``signal_send``); with spinning waiters (``OMP_WAIT_POLICY=active``) the platform sets both
to 0.  Every barrier costs ``barrier`` per thread.  A task's making and taking (8-22 ns,
docs/quaketm.md) is under 0.5 % of its work and is not charged.

Options (``[server.options]``): ``variant``, ``threads`` and the two structural counts of the
source measured on this workload, ``locked_share`` and ``fine_locks_per_packet``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from simsrv.core.strict_model import StrictModel
from simsrv.machine.plan import Acquire, BarrierWait, Compute, FramePlan, Release, Thread
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.threads import place_threads
from simsrv.workload.frame import FrameWorkload

GLOBAL_LOCK = "global"
BARRIERS = ("fork", "copyin", "requests")
"""The request stage's barriers: the fork (the team sleeps between frames), the one the
parallel region's ``copyin(host_frametime, movevars)`` makes every thread pass before any
runs a task, the end of ``omp single`` (every task done)."""
SECTIONS_PER_COMMAND = 4
"""``LOCK_COARSE`` sections of ``SV_RunCmd`` per user command (``sv_user.c``)."""
SECTIONS_PER_MOVE = 1
"""``LOCK_COARSE`` sections of ``SV_PostRunCmd``, once per move (``sv_user.c``)."""


class QuakeTMOptions(StrictModel):
    """Options of ``quaketm`` (``[server.options]``)."""

    variant: Literal["serial", "global", "coarse", "fine"] = Field(
        "fine", description="QuakeTM's build: serial, global, coarse or fine locks"
    )
    threads: Annotated[int, Field(ge=1, le=8)] = Field(
        2, description="OpenMP threads of the request stage (QuakeTM's -threads; 1-8)"
    )
    locked_share: float = Field(
        0.80,
        ge=0.0,
        le=1.0,
        description="coarse and fine: share of a packet's request work inside the "
        "global-lock sections (measured: docs/quaketm.md)",
    )
    fine_locks_per_packet: float = Field(
        29.0,
        ge=0.0,
        le=10_000.0,
        description="fine: uncontended areanode, client and other lock acquisitions per "
        "packet (measured: docs/quaketm.md)",
    )


class QuakeTM(Strategy):
    """QuakeTM's frame: serial world and reading, per-client tasks under locks, serial replies."""

    options: QuakeTMOptions

    def __init__(self, options: QuakeTMOptions, context: StrategyContext) -> None:
        super().__init__(options, context)
        self.threads = 1 if options.variant == "serial" else options.threads
        self.cpu_of = place_threads(self.threads, context.cpus, context.platform.smt_per_core)
        self.names = tuple(f"thread{t}" for t in range(self.threads))

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k = self.cost_vector
        costs = self.costs
        messages = frame.messages
        n = len(messages)
        main: list = [Compute("frame", costs.frame_overhead)]
        if frame.physics:
            main.append(Compute("world", c.world_us(k, frame.entities)))
        if n:
            main.append(Compute("net_recv", c.net_recv_us(k, n)))
            main.append(Compute("read", costs.queue_per_message * n))
        work = c.request_us(k, 1, messages["commands"], messages["range_count"])
        threads = [main] + [[] for _ in range(self.threads - 1)]
        if self.options.variant == "serial":
            main += [Compute("request", w) for w in work]
        elif n:
            self._request_stage(threads, messages, work)
        replies = len(frame.reply_clients)
        main.append(Compute("reply_info", c.reply_info_us(k, self.connected_clients)))
        if replies:
            main.append(
                Compute("reply", c.reply_us(k, replies, frame.visible_entities, frame.pvs_rooms))
            )
            main.append(Compute("net_send", c.net_send_us(k, replies)))
        plan_threads = tuple(
            Thread(name, int(cpu), tuple(ops))
            for name, cpu, ops in zip(self.names, self.cpu_of, threads, strict=True)
        )
        barriers = {} if self.options.variant == "serial" else dict.fromkeys(BARRIERS, self.threads)
        return FramePlan(plan_threads, barriers)

    def _request_stage(self, threads: list[list], messages: np.ndarray, work: np.ndarray) -> None:
        """The fork, each client's task on the thread list scheduling gives it, the end
        barrier (appended to each thread's operations)."""
        costs = self.costs
        team = self.threads
        clients = messages["client"]
        order, first = np.unique(clients, return_index=True)
        order = order[np.argsort(first, kind="stable")]  # clients by their first packet
        tasks = [np.flatnonzero(clients == client) for client in order]
        free = np.zeros(team)
        for ops in threads:
            ops += [
                Compute("barrier", costs.barrier),
                BarrierWait("fork", "fork_wait"),
                BarrierWait("copyin"),
            ]
        for packets in tasks:
            ops, planned = self._task(messages, work, packets)
            t = int(np.argmin(free))
            free[t] += planned
            threads[t] += ops
        for ops in threads:
            ops += [Compute("barrier", costs.barrier), BarrierWait("requests")]

    def _task(
        self, messages: np.ndarray, work: np.ndarray, packets: np.ndarray
    ) -> tuple[list, float]:
        """One client's task: its packets' operations and their planned work, us."""
        options, costs = self.options, self.costs
        ops: list = []
        planned = 0.0
        for i in packets:
            w = float(work[i])
            if options.variant == "global":
                ops += [
                    Compute("lock", costs.lock_acquire),
                    Acquire(GLOBAL_LOCK),
                    Compute("request", w),
                    Release(GLOBAL_LOCK),
                ]
                planned += costs.lock_acquire + w
                continue
            commands = int(messages["commands"][i])
            sections = SECTIONS_PER_COMMAND * commands + SECTIONS_PER_MOVE
            locked = w * options.locked_share
            acquires = sections
            if options.variant == "fine":
                acquires += options.fine_locks_per_packet
            lock_cost = costs.lock_acquire * acquires
            ops += [Compute("request", w - locked), Compute("lock", lock_cost)]
            for _ in range(sections):
                ops += [
                    Acquire(GLOBAL_LOCK),
                    Compute("request_locked", locked / sections),
                    Release(GLOBAL_LOCK),
                ]
            planned += w + lock_cost
        return ops, planned


STRATEGIES.register("quaketm", StrategyKind("quaketm", QuakeTMOptions, QuakeTM))
