"""``bsp-group``: dynamic load balancing of entity groups, one BSP super-step per frame.

Cordeiro, Goldman & da Silva 2007 [P §4, T §3]; one frame on ``n`` CPUs:

1. Sequential, on the coordinator: frame work, world physics (when due), reading the packets.
2. Scheduling, on the coordinator: the pmove and action list ``L_a`` of every packet (the
   share ``action_list_share`` of its request work, see below), the groups of interacting
   entities (:mod:`simsrv.strategies.grouping.groups`), then a balancer (LPT by default, the
   coordinator starting at load ``coordinator_load``) places them on ``1 + min(n - 1, m)``
   processes for ``m`` groups.
3. Parallel request + reply: each worker runs its groups' packets and replies as an independent
   SPED server; the coordinator runs its own share.
4. Synchronisation: workers write their entities to shared memory and the coordinator copies
   them back after waiting for every worker.

**Action lists are built once, by the coordinator.**  The groups are the connected components
of the action lists ``L_a`` Quake already computes for each command, so their overhead is "not
significant" [P §4.2].  The scheduler runs on the coordinator before any process starts
[P §4.2], so it builds every packet's pmove and ``L_a`` there, and the request processing
reuses them.  That part of a packet's request work (``action_list_share`` of
:func:`simsrv.strategies.costs.request_us`; by default 0.275: in id's profile of the QuakeWorld
server, ``AddEntsToPmove`` takes 3,814 ms of ``SV_RunCmd``'s 13,855 ms including its
children, QW/server/profile.txt) therefore runs sequentially on the coordinator (activity
``action_lists``) and the processes run the rest.  ``grouping`` is what grouping adds beyond
the lists (the graph, union-find).  ``action_list_share = 0`` is the reading where each
process rebuilds its own packets' lists.

The score and broadcast messages of every connected client (``reply_info_per_client``) are
written by the coordinator after scheduling, before any worker starts (so before any reply).

The operating-system process model is three options (see ``docs/strategies.md``):

``spawn``
    ``fork``: a child per worker per frame (``fork`` cost; the child pays copy-on-write faults
    for the pages it writes: ``cow_base_pages`` plus ``cow_pages_per_client`` for each client
    whose packets it executes and answers).  Entity states live in shared memory and cost no
    faults [T §3.3.1]; a served client's ``client_t`` does (``docs/model.md``).  ``clone``:
    the same with ``clone``'s cost.  ``pool``:
    persistent workers woken per frame (a context switch) that copy the whole frame state in
    explicitly (``copy_per_entity`` per entity) instead of copy-on-write, and never exit.
    ``none``: groups are computed but the coordinator runs them all (the thesis's
    "groups without workers" measurement).
``affinity``
    ``pinned``: the child is created stopped, pinned round-robin (worker ``i`` on CPU ``i``,
    coordinator on CPU 0) with ``sched_setaffinity`` and continued with ``SIGCONT``
    (``setaffinity`` cost).  ``os-default``: Linux 2.6's default placement: the child starts on
    the parent's CPU and runs first; the waiting parent is pulled to an idle CPU only if the
    child still runs after the platform's ``migration_delay_us`` (a ``RUN_FIRST`` row:
    :class:`~simsrv.machine.plan.RunFirst`).
``reap``
    ``wait``: the coordinator blocks in ``wait()`` until each worker has exited, including its
    teardown (``exit_teardown``, on the worker's CPU), then pays ``wait`` per worker.
    ``nowait``: workers post a semaphore before exiting (``SA_NOCLDWAIT``, no ``SIGCHLD``); the
    coordinator waits for the posts (``wait`` per worker) and the teardown overlaps the next
    frame's world phase.

The coordinator starts every frame on CPU 0.  Trace thread names: ``coordinator``,
``worker<i>`` and ``worker<i>.exit`` (the teardown, spawned by the worker when it posts).
The plan is built as arrays (:mod:`simsrv.machine.plan_arrays`) in one compiled call,
:func:`_plan`, which charges the frame's work with the cost functions of
:mod:`simsrv.strategies.costs`.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import Field, field_validator

from simsrv.core.compiled import compiled
from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty
from simsrv.machine.invariants import check_partition
from simsrv.machine.plan import SPAWNER_CPU
from simsrv.machine.plan_arrays import (
    COMPUTE,
    COUNT,
    FILL,
    JOIN,
    RUN_FIRST,
    SPAWN,
    PlanArrays,
    counting_columns,
    emit,
    filling_columns,
)
from simsrv.platforms.network_path import xmit_us
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.grouping.balancers import BALANCERS, makespan
from simsrv.strategies.grouping.groups import FrameGroups, frame_groups
from simsrv.strategies.sends import DEVICE_LOCK, emit_sends
from simsrv.workload.frame import FrameWorkload

NEIGHBOUR_HISTORY_TICKS = 2048
"""Ticks of action-range lists the world keeps for grouping (~65 s of packets at 31.25 Hz)."""

COORDINATOR = "coordinator"

ACTION_LIST_SHARE = 0.275
"""``AddEntsToPmove`` / ``SV_RunCmd`` (inclusive) in id's QuakeWorld server profile
(QW/server/profile.txt: 3813.669 / 13855.472 ms): the share of executing a command spent
building the list of entities its move can touch."""


class BspGroupOptions(StrictModel):
    """Options of ``bsp-group`` (``[server.options]``)."""

    balancer: str = Field("lpt", description="how groups are placed on processes")
    spawn: Literal["fork", "clone", "pool", "none"] = Field(
        "clone", description="how workers are created each frame ('none': coordinator only)"
    )
    affinity: Literal["os-default", "pinned"] = Field(
        "pinned", description="where a new worker starts"
    )
    reap: Literal["wait", "nowait"] = Field(
        "nowait", description="wait(): sequential teardown; nowait: semaphore, teardown overlaps"
    )
    coordinator_load: float = Field(
        1.0, ge=0, description="initial balancer load of the coordinator (entities)"
    )
    action_list_share: float = Field(
        ACTION_LIST_SHARE,
        ge=0.0,
        le=1.0,
        description="share of a packet's request work that builds its pmove and action list; "
        "the coordinator builds them while scheduling and the processes reuse them",
    )
    max_workers: int = Field(
        0,
        ge=0,
        le=65536,
        description="cap on workers per frame; 0 = CPUs - 1 (one process per CPU)",
    )

    @field_validator("balancer")
    @classmethod
    def _known_balancer(cls, value: str) -> str:
        if value not in BALANCERS.names():
            raise ValueError(f"unknown balancer {value!r}; allowed: {', '.join(BALANCERS.names())}")
        return value


class ProcessShares(NamedTuple):
    """Per-process totals of one frame; each an array indexed by process (0 = coordinator).

    ``messages`` packets, ``commands`` user commands, ``ranges`` sum of ``|L_a|`` over the
    packets, ``replies`` replies sent, ``visible`` entities in the replied clients' visible
    sets, ``pvs_rooms`` rooms in their PVS rows, ``entities`` entities of the process's
    groups, ``pages`` memory pages it writes (``cow_base_pages`` + ``cow_pages_per_client``
    per distinct client whose packets it executes).
    """

    messages: np.ndarray
    commands: np.ndarray
    ranges: np.ndarray
    replies: np.ndarray
    visible: np.ndarray
    pvs_rooms: np.ndarray
    entities: np.ndarray
    pages: np.ndarray


class BspGroup(Strategy):
    """Groups + balancer + per-frame worker processes."""

    options: BspGroupOptions

    def __init__(self, options: BspGroupOptions, context: StrategyContext) -> None:
        super().__init__(options, context)
        context.world.keep_neighbours(NEIGHBOUR_HISTORY_TICKS)
        self.balance = BALANCERS.get(options.balancer, "server.options.balancer")
        cap = options.max_workers or context.cpus - 1
        self.max_workers = 0 if options.spawn == "none" else min(cap, context.cpus - 1)
        self._record: dict[str, Any] = {}
        self._thread_tables: dict[int, tuple] = {}

    # -- planning ---------------------------------------------------------------------------

    def plan(self, frame: FrameWorkload) -> PlanArrays:
        o = self.options
        messages = frame.messages
        groups = frame_groups(messages["client"], messages["tick"], self.context.world.neighbours)
        workers = min(self.max_workers, groups.count)
        processes = 1 + workers
        initial = [o.coordinator_load] + [0.0] * workers
        weights = groups.sizes.astype(float)
        assignment = (
            self.balance(weights, initial, groups)
            if workers
            else np.zeros(groups.count, dtype=np.int64)
        )
        check_partition(
            frame.index,
            np.ascontiguousarray(messages["client"]),  # one compiled signature
            groups.entities,
            groups.entity_group,
            groups.sizes,
            assignment,
            processes,
        )
        platform = self.context.platform
        share = _shares(
            frame,
            groups,
            assignment,
            processes,
            platform.cow_pages_per_client,
            platform.cow_base_pages,
        )
        self._remember(groups, weights, assignment, initial, workers)

        pool = o.spawn == "pool"
        flags = np.array(
            [
                workers,
                pool,
                o.affinity == "pinned",
                o.reap == "wait" and not pool,
                o.action_list_share != 0,
                o.spawn == "fork",
            ],
            dtype=np.int64,
        )
        columns = _plan(
            flags, self.cost_vector, frame.physics, frame.entities, len(messages), frame.commands,
            frame.range_entities, self.connected_clients, groups.edges, groups.count,
            o.action_list_share, platform.migration_delay_us, xmit_us(platform), *share,
        )  # fmt: skip
        names, cpus, spawned = self._threads(workers)
        return PlanArrays(
            *columns,
            thread_cpu=cpus,
            thread_names=names,
            activities=ACTIVITIES,
            barrier_names=(),
            barrier_parties=NO_BARRIERS,
            locks=(DEVICE_LOCK,),
            thread_spawned=spawned,
        )

    def _threads(self, workers: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray | None]:
        """The names, CPUs and spawned flags of a plan's threads with ``workers`` workers (in
        the order of :func:`_build_plan`), made once per worker count."""
        threads = self._thread_tables.get(workers)
        if threads is None:
            o, cpus = self.options, self.context.cpus
            pool = o.spawn == "pool"
            names, cpu = [COORDINATOR], [0]
            for w in range(1, workers + 1):
                names.append(f"worker{w}")
                cpu.append(w % cpus if o.affinity == "pinned" or pool else SPAWNER_CPU)
                if not pool:
                    names.append(f"worker{w}.exit")
                    cpu.append(SPAWNER_CPU)
            spawned = np.arange(len(names)) > 0 if workers else None
            threads = self._thread_tables[workers] = (
                tuple(names),
                np.array(cpu, dtype=np.int64),
                spawned,
            )
        return threads

    # -- per-frame record -------------------------------------------------------------------

    def _remember(
        self,
        groups: FrameGroups,
        weights: np.ndarray,
        assignment: np.ndarray,
        initial: list[float],
        workers: int,
    ) -> None:
        sizes = groups.sizes.tolist()  # the weights as ints: their sums are exact
        total = float(sum(sizes))
        largest = max(sizes) if sizes else 0
        lower = max(float(largest), (total + sum(initial)) / len(initial)) if total else 0.0
        self._record = {
            "groups": groups.count,
            "group_entities": int(total),
            "largest_group": largest,
            "group_sizes": tuple(sorted(sizes, reverse=True)),
            "workers": workers,
            "balance_makespan": makespan(weights, assignment, initial) if groups.count else 0.0,
            "balance_lower_bound": lower,
        }

    def frame_record(self) -> dict[str, Any]:
        return self._record


def _shares(
    frame: FrameWorkload,
    groups: FrameGroups,
    assignment: np.ndarray,
    processes: int,
    pages_per_client: float,
    base_pages: int,
) -> ProcessShares:
    """What each process handles this frame (see :class:`ProcessShares`)."""
    messages = frame.messages
    if groups.count == 0:
        zeros = np.zeros(processes)
        return ProcessShares(*[zeros] * 7, zeros + base_pages)
    totals = _per_process(
        assignment,
        groups.message_group,
        groups.source[: len(messages)],  # each packet's client as a vertex (self loops first)
        groups.entity_group,
        groups.entities,
        frame.reply_clients,
        np.ascontiguousarray(messages["commands"]),  # contiguous: one compiled signature
        np.ascontiguousarray(messages["range_count"]),
        frame.reply_visible,
        frame.reply_pvs_rooms,
        processes,
    )
    return ProcessShares(*totals[:7], totals[7] * pages_per_client + base_pages)


@compiled
def _per_process(
    assignment, message_group, message_vertex, entity_group, entities, reply_clients, commands,
    range_count, reply_visible, reply_pvs_rooms, processes,
):  # fmt: skip
    """The totals of :class:`ProcessShares` per process, (8, processes) float: packets,
    commands, ``|L_a|``, replies, visible entities, PVS rooms, entities, then distinct
    clients whose packets the process executes (a client's packets all belong to its group,
    so to one process).  Sums in packet, reply and entity order, as ``np.bincount``."""
    totals = np.zeros((8, processes))
    seen = np.zeros(len(entities), np.bool_)
    for i in range(len(message_group)):
        p = assignment[message_group[i]]
        totals[0, p] += 1.0
        totals[1, p] += commands[i]
        totals[2, p] += range_count[i]
        if not seen[message_vertex[i]]:
            seen[message_vertex[i]] = True
            totals[7, p] += 1.0
    vertex = np.searchsorted(entities, reply_clients)
    for r in range(len(reply_clients)):
        p = assignment[entity_group[vertex[r]]]
        totals[3, p] += 1.0
        totals[4, p] += reply_visible[r]
        totals[5, p] += reply_pvs_rooms[r]
    for v in range(len(entity_group)):
        totals[6, assignment[entity_group[v]]] += 1.0
    return totals


ACTIVITIES = (
    "frame",
    "world",
    "net_recv",
    "action_lists",
    "grouping",
    "schedule",
    "reply_info",
    "spawn",
    "request",
    "reply",
    "net_send",
    "wait",
    "copy_back",
    "copy_in",
    "copy_on_write",
    "copy_out",
    "teardown",
)
"""The activities of bsp-group's plans (codes: their positions)."""
FRAME, WORLD, NET_RECV, ACTION_LISTS, GROUPING, SCHEDULE, REPLY_INFO = range(7)
SPAWN_WORK, REQUEST, REPLY, NET_SEND, WAIT, COPY_BACK = range(7, 13)
COPY_IN, COPY_ON_WRITE, COPY_OUT, TEARDOWN = range(13, 17)
NO_BARRIERS = np.zeros(0, dtype=np.int64)


class CoordinatorCosts(NamedTuple):
    """The coordinator's costs of one frame, us (computed by :func:`_plan` from the cost
    functions of :mod:`simsrv.strategies.costs`)."""

    frame: float
    world: float
    net_recv: float
    action_lists: float
    """``action_list_share`` of the frame's request work."""
    grouping: float
    schedule: float
    reply_info: float
    create: float
    """Creating a worker: ``fork``, ``clone`` or (pool) waking it, a ``context_switch``."""
    setaffinity: float
    migration_delay: float
    """The run-first migration delay (the platform's ``migration_delay_us``)."""
    wait: float
    """The coordinator's wait per worker: ``wait`` (pool: ``barrier``)."""
    copy_back: float
    teardown: float


WORK_FIRST, WORK_REQUEST, WORK_REPLY, WORK_NET_SEND, WORK_COPY_OUT = range(5)
"""The rows of :func:`_plan`'s per-process ``work``."""


@compiled
def _plan(
    flags, k, physics, entities, messages, commands, range_entities, connected, edges, groups,
    action_list_share, migration_delay_us, xmit, p_messages, p_commands, p_ranges, p_replies,
    p_visible, p_pvs_rooms, p_entities, p_pages,
):  # fmt: skip
    """The frame's plan columns (thread, kind, cost, arg, activity), charged from the cost
    vector ``k`` (:func:`~simsrv.strategies.costs.cost_vector`).  ``flags``: workers, pool,
    pinned, reap waits for the teardown, action lists charged, fork (else clone); then the
    frame's counts: whether physics runs, its entities, packets, user commands, action-range
    entities, connected clients, the group graph's edges and groups;
    ``action_list_share``; the platform's migration delay, us; a reply's time under the
    device's transmit lock, us (0: none; :mod:`~simsrv.strategies.sends`); then per process (0 =
    coordinator) the :class:`ProcessShares` arrays.  The processes run the rest of their
    packets' request work (``1 - action_list_share``)."""
    pool, fork = flags[1], flags[5]
    request_share = 1.0 - action_list_share
    processes = len(p_messages)
    work = empty((5, processes))
    copied = 0.0  # entities the workers copy out (the coordinator copies them back)
    for p in range(processes):
        work[WORK_FIRST, p] = c.copy_us(k, entities) if pool else c.cow_us(k, p_pages[p])
        work[WORK_REQUEST, p] = request_share * c.request_us(
            k, p_messages[p], p_commands[p], p_ranges[p]
        )
        work[WORK_REPLY, p] = c.reply_us(k, p_replies[p], p_visible[p], p_pvs_rooms[p])
        work[WORK_NET_SEND, p] = c.net_send_us(k, p_replies[p])
        work[WORK_COPY_OUT, p] = c.copy_us(k, p_entities[p])
        if p:
            copied += p_entities[p]
    head = CoordinatorCosts(
        k[0].frame_overhead,
        c.world_us(k, entities) if physics else 0.0,
        c.net_recv_us(k, messages),
        action_list_share * c.request_us(k, messages, commands, range_entities),
        c.grouping_us(k, messages, edges),
        c.schedule_us(k, groups),
        c.reply_info_us(k, connected),
        k[0].context_switch if pool else (k[0].fork if fork else k[0].clone),
        k[0].setaffinity,
        migration_delay_us,
        k[0].barrier if pool else k[0].wait,
        c.copy_us(k, copied),
        k[0].exit_teardown,
    )
    return _build_plan(flags, head, work, p_replies, k[0].net_send_per_reply, xmit)


@compiled
def _build_plan(flags, head, work, replies, per_reply, xmit):
    """The frame's plan columns (thread, kind, cost, arg, activity).  ``flags`` as
    :func:`_plan`'s; ``head``: the :class:`CoordinatorCosts`; ``work``, (5, processes): per
    process (0 = coordinator) its first work (copy-on-write faults or a pool's copy-in),
    request, reply, net_send and copy_out costs, us (rows :data:`WORK_FIRST` ...
    :data:`WORK_COPY_OUT`); ``replies`` per process, each sent for ``per_reply`` us, ``xmit``
    of it under the device's transmit lock (lock id 0;
    :func:`~simsrv.strategies.sends.emit_sends`).  A first pass counts each thread's
    operations, the second writes them."""
    threads = 1 + flags[0] * (1 if flags[1] else 2)
    count, thread, kind, cost, arg, activity = counting_columns(threads)
    _ops(COUNT, count, thread, kind, cost, arg, activity, flags, head, work, replies, per_reply,
         xmit)  # fmt: skip
    at, thread, kind, cost, arg, activity = filling_columns(count)
    _ops(FILL, at, thread, kind, cost, arg, activity, flags, head, work, replies, per_reply,
         xmit)  # fmt: skip
    return thread, kind, cost, arg, activity


@compiled
def _ops(fill, at, thread, kind, cost, arg, activity, flags, head, work, replies, per_reply, xmit):
    """The operations of the module docstring's frame, as rows (see :func:`_build_plan`):
    the coordinator's sequential and scheduling work, a worker's creation (pool: a context
    switch; pinned: fork or clone, ``setaffinity``, the spawn; else the spawn and the child
    running first), its own group work, then per worker a join (of the teardown when the reap
    waits for it) and ``wait``, then ``copy_back``.  Worker ``w`` is thread ``w`` (pool) or
    ``2w - 1``, its teardown ``2w``."""
    workers, pool, pinned, waits_exit, lists = flags[0], flags[1], flags[2], flags[3], flags[4]
    out = (fill, at, thread, kind, cost, arg, activity)
    emit(*out, 0, COMPUTE, head.frame, -1, FRAME)
    emit(*out, 0, COMPUTE, head.world, -1, WORLD)
    emit(*out, 0, COMPUTE, head.net_recv, -1, NET_RECV)
    if lists:
        emit(*out, 0, COMPUTE, head.action_lists, -1, ACTION_LISTS)
    emit(*out, 0, COMPUTE, head.grouping, -1, GROUPING)
    emit(*out, 0, COMPUTE, head.schedule, -1, SCHEDULE)
    emit(*out, 0, COMPUTE, head.reply_info, -1, REPLY_INFO)
    acts = np.array((COPY_IN if pool else COPY_ON_WRITE, REQUEST, REPLY, NET_SEND, COPY_OUT))
    step = 1 if pool else 2
    for w in range(1, workers + 1):
        t = step * w - step + 1
        emit(*out, 0, COMPUTE, head.create, -1, SPAWN_WORK)
        if pinned and not pool:
            emit(*out, 0, COMPUTE, head.setaffinity, -1, SPAWN_WORK)
        emit(*out, 0, SPAWN, 0.0, t, -1)
        if not pinned and not pool:
            emit(*out, 0, RUN_FIRST, head.migration_delay, t, -1)
        for j in range(len(acts)):
            if j == WORK_NET_SEND:
                emit_sends(*out, t, replies[w], work[j, w], per_reply, xmit, 0, NET_SEND)
            else:
                emit(*out, t, COMPUTE, work[j, w], -1, acts[j])
        if not pool:
            emit(*out, t, SPAWN, 0.0, t + 1, -1)
            emit(*out, t + 1, COMPUTE, head.teardown, -1, TEARDOWN)
    for j in range(WORK_REQUEST, WORK_NET_SEND):  # the coordinator's own share
        emit(*out, 0, COMPUTE, work[j, 0], -1, acts[j])
    emit_sends(*out, 0, replies[0], work[WORK_NET_SEND, 0], per_reply, xmit, 0, NET_SEND)
    joined = 1 if waits_exit else 0  # join the teardown (thread t + 1) or the worker
    for w in range(1, workers + 1):
        emit(*out, 0, JOIN, 0.0, step * w - step + 1 + joined, -1)
        emit(*out, 0, COMPUTE, head.wait, -1, WAIT)
    emit(*out, 0, COMPUTE, head.copy_back, -1, COPY_BACK)


STRATEGIES.register("bsp-group", StrategyKind("bsp-group", BspGroupOptions, BspGroup))
