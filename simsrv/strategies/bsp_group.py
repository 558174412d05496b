"""``bsp-group``: dynamic load balancing of entity groups, one BSP super-step per frame.

Cordeiro, Goldman & da Silva 2007 [P §4, T §3]; one frame on ``n`` CPUs:

1. Sequential, on the coordinator: frame work, world physics (when due), reading the packets.
2. Scheduling, on the coordinator: the pmove and action list ``L_a`` of every packet (the
   share ``action_list_share`` of its request work, see below), the groups of interacting
   entities (:mod:`simsrv.scheduling.groups`), then a balancer (LPT by default, the
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
    child still runs after the platform's ``migration_delay_us`` (:class:`RunFirst`).
``reap``
    ``wait``: the coordinator blocks in ``wait()`` until each worker has exited, including its
    teardown (``exit_teardown``, on the worker's CPU), then pays ``wait`` per worker.
    ``nowait``: workers post a semaphore before exiting (``SA_NOCLDWAIT``, no ``SIGCHLD``); the
    coordinator waits for the posts (``wait`` per worker) and the teardown overlaps the next
    frame's world phase.

The coordinator starts every frame on CPU 0.  Trace thread names: ``coordinator``,
``worker<i>`` and ``worker<i>.exit`` (the teardown, spawned by the worker when it posts).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import Field, field_validator

from simsrv.invariants import check_partition
from simsrv.machine.plan import SPAWNER_CPU, Compute, FramePlan, Join, RunFirst, Spawn, Thread
from simsrv.platforms.profile import Costs
from simsrv.scenario.validation import StrictModel
from simsrv.scheduling.balancers import BALANCERS, makespan
from simsrv.scheduling.groups import FrameGroups, frame_groups
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyContext, StrategyKind
from simsrv.strategies.phases import input_phase, reply_info_phase, request_reply_phase
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

    # -- planning ---------------------------------------------------------------------------

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k, o = self.costs, self.options
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
            messages["client"],
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

        m = len(messages)
        lists = o.action_list_share * c.request_us(k, m, frame.commands, frame.range_entities)
        coordinator = [
            *input_phase(k, frame),
            *([Compute("action_lists", lists)] if o.action_list_share else []),
            Compute("grouping", k.grouping_per_message * m + k.grouping_per_edge * groups.edges),
            Compute("schedule", k.schedule_per_group * groups.count),
            reply_info_phase(k, self.connected_clients),
        ]
        threads: list[Thread] = []
        for w in range(1, processes):
            name = f"worker{w}"
            coordinator += self._start_worker(name)
            threads += self._worker_threads(name, w, share, frame)
        coordinator += _group_work(k, share, 0, o.action_list_share)
        coordinator += self._synchronise(processes, share)
        return FramePlan(threads=(Thread(COORDINATOR, 0, tuple(coordinator)), *threads))

    def _start_worker(self, name: str) -> list:
        k, o = self.costs, self.options
        if o.spawn == "pool":
            return [Compute("spawn", k.context_switch), Spawn(name)]
        create = Compute("spawn", k.fork if o.spawn == "fork" else k.clone)
        if o.affinity == "pinned":
            return [create, Compute("spawn", k.setaffinity), Spawn(name)]
        return [create, Spawn(name), RunFirst(name, self.context.platform.migration_delay_us)]

    def _worker_threads(
        self, name: str, index: int, share: ProcessShares, frame: FrameWorkload
    ) -> list[Thread]:
        k, o = self.costs, self.options
        cpu = index % self.context.cpus if o.affinity == "pinned" or o.spawn == "pool" else None
        ops: list = []
        if o.spawn == "pool":
            ops.append(Compute("copy_in", k.copy_per_entity * frame.entities))
        else:
            ops.append(Compute("copy_on_write", k.cow_per_page * share.pages[index]))
        ops += _group_work(k, share, index, o.action_list_share)
        ops.append(Compute("copy_out", k.copy_per_entity * share.entities[index]))
        threads = []
        if o.spawn != "pool":
            ops.append(Spawn(f"{name}.exit"))
            threads.append(
                Thread(f"{name}.exit", SPAWNER_CPU, (Compute("teardown", k.exit_teardown),), True)
            )
        start_cpu = SPAWNER_CPU if cpu is None else cpu
        return [Thread(name, start_cpu, tuple(ops), spawned=True), *threads]

    def _synchronise(self, processes: int, share: ProcessShares) -> list:
        k, o = self.costs, self.options
        ops: list = []
        waits_exit = o.reap == "wait" and o.spawn != "pool"
        for w in range(1, processes):
            ops.append(Join(f"worker{w}.exit" if waits_exit else f"worker{w}"))
            ops.append(Compute("wait", k.barrier if o.spawn == "pool" else k.wait))
        moved = float(share.entities[1:].sum())
        ops.append(Compute("copy_back", k.copy_per_entity * moved))
        return ops

    # -- per-frame record -------------------------------------------------------------------

    def _remember(
        self,
        groups: FrameGroups,
        weights: np.ndarray,
        assignment: np.ndarray,
        initial: list[float],
        workers: int,
    ) -> None:
        total = float(weights.sum())
        lower = max(float(weights.max()), (total + sum(initial)) / len(initial)) if total else 0.0
        self._record = {
            "groups": groups.count,
            "group_entities": int(total),
            "largest_group": int(weights.max()) if groups.count else 0,
            "group_sizes": tuple(sorted(weights.astype(int).tolist(), reverse=True)),
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
    proc_of_message = assignment[groups.message_group]
    reply_group = groups.entity_group[np.searchsorted(groups.entities, frame.reply_clients)]
    proc_of_reply = assignment[reply_group]
    proc_of_entity = assignment[groups.entity_group]
    # a client's packets all belong to its group, so to one process: count each client once
    _, first = np.unique(messages["client"], return_index=True)
    proc_of_client = proc_of_message[first]

    def per_process(index: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(index, values, minlength=processes).astype(float)

    return ProcessShares(
        messages=per_process(proc_of_message),
        commands=per_process(proc_of_message, messages["commands"]),
        ranges=per_process(proc_of_message, messages["range_count"]),
        replies=per_process(proc_of_reply),
        visible=per_process(proc_of_reply, frame.reply_visible),
        pvs_rooms=per_process(proc_of_reply, frame.reply_pvs_rooms),
        entities=per_process(proc_of_entity),
        pages=per_process(proc_of_client) * pages_per_client + base_pages,
    )


def _group_work(k: Costs, share: ProcessShares, p: int, lists_share: float) -> list[Compute]:
    """Request (less its action lists, built by the coordinator), reply and send work of
    process ``p``'s groups."""
    return request_reply_phase(
        k,
        share.messages[p],
        share.commands[p],
        share.ranges[p],
        share.replies[p],
        share.visible[p],
        share.pvs_rooms[p],
        request_share=1.0 - lists_share,
    )


STRATEGIES.register("bsp-group", StrategyKind("bsp-group", BspGroupOptions, BspGroup))
