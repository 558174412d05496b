"""Frame plans as arrays: the schema a strategy fills with numpy or numba, without one Python
object per operation.

A :class:`PlanArrays` is the same thing as a :class:`~simsrv.machine.plan.FramePlan`, with
every kind of operation: computations, barrier waits, lock acquisitions and releases, spawns,
joins and run-first waits: the machine executes either
(:meth:`simsrv.machine.executor.Machine.execute`) and gives the same timeline and trace for
both; :meth:`PlanArrays.to_plan` and :func:`from_plan` convert one into the other (the
machine runs arrays, the simpy reference objects).

Schema (one row per operation; ``n`` rows)
------------------------------------------
=================  ========  ===============================================================
``thread``         int64     the thread (index into ``thread_names``); rows are grouped by
                             thread in ascending order, each thread's rows in execution order
``kind``           int8      :data:`COMPUTE`, :data:`BARRIER`, :data:`ACQUIRE`, :data:`RELEASE`,
                             :data:`SPAWN`, :data:`JOIN`, :data:`RUN_FIRST`, :data:`SPIN`
``cost``           float64   a computation's cost (``COMPUTE``, ``SPIN``: the section's), us of
                             CPU time; ``RUN_FIRST``: the parent's ``migrate_after_us``; 0 for
                             the other kinds
``arg``            int64     the lock id (``ACQUIRE``/``RELEASE``/``SPIN``: index into
                             ``locks``), the
                             barrier id (``BARRIER``: index into ``barrier_names``) or the
                             thread spawned, joined or let run first (``SPAWN``, ``JOIN``,
                             ``RUN_FIRST``: index into ``thread_names``); -1 else
``activity``       int64     the activity (index into ``activities``) of a computation or a
                             spin section, or the
                             wait activity recorded for a barrier (a name ending in ``_wait``);
                             -1 for the other kinds (their waits are ``lock_wait``,
                             ``join_wait`` and ``runqueue_wait``)
=================  ========  ===============================================================

The kinds are the operations of :mod:`simsrv.machine.plan`: ``SPAWN`` is
:class:`~simsrv.machine.plan.Spawn`, ``JOIN`` :class:`~simsrv.machine.plan.Join`,
``RUN_FIRST`` :class:`~simsrv.machine.plan.RunFirst` (a forked child runs first on its parent's
CPU; the waiting parent migrates to an idle CPU after ``cost`` us), ``SPIN``
:class:`~simsrv.machine.plan.SpinSection` (``cost`` us computed holding a kernel spinlock).

Per plan: ``thread_cpu`` (int64, one per thread: its CPU, 0-based, or
:data:`~simsrv.machine.plan.SPAWNER_CPU` (-1) for a spawned thread that starts on its
spawner's CPU), ``thread_names``, ``activities`` (names), ``barrier_names`` with
``barrier_parties`` (int64), ``locks``: a sequence that maps a lock id to the lock's name (any
hashable, the same name as the :class:`~simsrv.machine.plan.Acquire` of the object plan, so
that locks persist across frames whichever form a frame's plan takes), and
``thread_spawned`` (bool, one per thread: started by a ``SPAWN`` rather than with the frame;
None when no thread is spawned).  Thread 0 is the coordinator.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import borrowing, compiled
from simsrv.core.uninitialised import empty
from simsrv.machine.plan import (
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    Op,
    PlanError,
    Release,
    RunFirst,
    Spawn,
    SpinSection,
    Thread,
)

COMPUTE, BARRIER, ACQUIRE, RELEASE, SPAWN, JOIN, RUN_FIRST, SPIN = 0, 1, 2, 3, 4, 5, 6, 7
"""Operation kinds (the ``kind`` column)."""

COUNT, FILL = np.bool_(False), np.bool_(True)
"""The first argument of :func:`emit` and of the builders that call it: count the rows, or
write them (numpy booleans: a plain ``False`` passed to a compiled builder is typed as a
literal, and the builder compiled once per value)."""


@borrowing
def emit(fill, at, thread, kind, cost, arg, activity, t, op, value, argument, act):
    """For builders that count then fill the columns: thread ``t``'s next row is at
    ``at[t]``; write it there (only when ``fill``, else just count it)."""
    i = at[t]
    if fill:
        thread[i], kind[i], cost[i], arg[i], activity[i] = t, op, value, argument, act
    at[t] = i + 1


class PlanArrays(NamedTuple):
    """One frame's plan as arrays (schema in the module docstring)."""

    thread: np.ndarray
    kind: np.ndarray
    cost: np.ndarray
    arg: np.ndarray
    activity: np.ndarray
    thread_cpu: np.ndarray
    thread_names: Sequence[str]
    activities: Sequence[str]
    barrier_names: Sequence[str]
    barrier_parties: np.ndarray
    locks: Sequence[Hashable]
    thread_spawned: np.ndarray | None = None

    @classmethod
    def names_only(cls, *names: object) -> PlanArrays:
        """A plan without operations carrying ``names`` (the fields after the operation
        columns, in order): what every plan of a strategy shares."""
        none = np.zeros(0, np.int64)
        return cls(none, none.astype(np.int8), np.zeros(0), none, none, *names)

    def spawns(self) -> bool:
        """True when a thread of the plan is spawned (so it has spawns, and maybe joins)."""
        return self.thread_spawned is not None and bool(self.thread_spawned.any())

    def to_plan(self) -> FramePlan:
        """The same plan as operation objects."""
        acts, names = self.activities, self.thread_names
        other = self._other_op
        ops = [
            Compute(acts[a], c) if k == COMPUTE else other(k, c, g, a)
            for k, c, g, a in zip(
                self.kind.tolist(),
                self.cost.tolist(),
                self.arg.tolist(),
                self.activity.tolist(),
                strict=True,
            )
        ]
        bounds = np.searchsorted(self.thread, np.arange(len(names) + 1)).tolist()
        spawned = (
            [False] * len(names) if self.thread_spawned is None else self.thread_spawned.tolist()
        )
        threads = tuple(
            Thread(name, cpu, tuple(ops[bounds[t] : bounds[t + 1]]), spawned[t])
            for t, (name, cpu) in enumerate(zip(names, self.thread_cpu.tolist(), strict=True))
        )
        barriers = self.barrier_names
        return FramePlan(threads, dict(zip(barriers, self.barrier_parties.tolist(), strict=True)))

    def _other_op(self, kind: int, cost: float, arg: int, activity: int) -> Op:
        """The operation of a row that is not a computation."""
        if kind == BARRIER:
            return BarrierWait(self.barrier_names[arg], self.activities[activity])
        if kind == ACQUIRE:
            return Acquire(self.locks[arg])
        if kind == RELEASE:
            return Release(self.locks[arg])
        if kind == SPIN:
            return SpinSection(self.locks[arg], self.activities[activity], cost)
        if kind == SPAWN:
            return Spawn(self.thread_names[arg])
        if kind == JOIN:
            return Join(self.thread_names[arg])
        return RunFirst(self.thread_names[arg], cost)


@compiled
def counting_columns(threads) -> tuple[np.ndarray, ...]:
    """The columns a builder's counting pass writes into: ``count`` (ops per thread, zeros)
    and empty ``thread``, ``kind``, ``cost``, ``arg``, ``activity`` (see :func:`emit`)."""
    none = empty(0, np.int64)
    return np.zeros(threads, np.int64), none, none.astype(np.int8), empty(0), none, none


@compiled
def filling_columns(count) -> tuple[np.ndarray, ...]:
    """The columns of a plan whose thread ``t`` has ``count[t]`` ops, for the filling pass:
    ``at`` (each thread's first row, advanced as it is filled) and the rows' ``thread``,
    ``kind``, ``cost`` (0), ``arg`` (-1) and ``activity`` (-1)."""
    total = count.sum()
    at = np.zeros(len(count), np.int64)
    for t in range(1, len(count)):
        at[t] = at[t - 1] + count[t - 1]
    return (
        at,
        empty(total, np.int64),
        empty(total, np.int8),
        np.zeros(total),
        np.full(total, -1, np.int64),
        np.full(total, -1, np.int64),
    )


def from_plan(plan: FramePlan) -> PlanArrays:
    """``plan`` as arrays (``thread_spawned`` None when no thread is spawned)."""
    activities: dict[str, int] = {}
    locks: dict[Hashable, int] = {}
    barriers = {name: i for i, name in enumerate(plan.barriers)}
    index = {thread.name: t for t, thread in enumerate(plan.threads)}
    rows = []
    for t, thread in enumerate(plan.threads):
        for op in thread.ops:
            kind = type(op)
            if kind is Compute:
                code = activities.setdefault(op.activity, len(activities))
                rows.append((t, COMPUTE, op.cost_us, -1, code))
            elif kind is BarrierWait:
                if op.name not in barriers:
                    raise PlanError(f"{thread.name!r} waits at undeclared barrier {op.name!r}")
                code = activities.setdefault(op.activity, len(activities))
                rows.append((t, BARRIER, 0.0, barriers[op.name], code))
            elif kind is Acquire or kind is Release:
                lock = locks.setdefault(op.lock, len(locks))
                rows.append((t, ACQUIRE if kind is Acquire else RELEASE, 0.0, lock, -1))
            elif kind is SpinSection:
                lock = locks.setdefault(op.lock, len(locks))
                code = activities.setdefault(op.activity, len(activities))
                rows.append((t, SPIN, op.cost_us, lock, code))
            elif kind is Spawn or kind is Join or kind is RunFirst:
                if op.thread not in index:
                    raise PlanError(f"{thread.name!r} joins unknown thread {op.thread!r}")
                if kind is RunFirst:
                    rows.append((t, RUN_FIRST, op.migrate_after_us, index[op.thread], -1))
                else:
                    code = SPAWN if kind is Spawn else JOIN
                    rows.append((t, code, 0.0, index[op.thread], -1))
            else:
                raise ValueError(f"{kind.__name__} is not in the array schema")
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
    return PlanArrays(
        thread=np.array(columns[0], dtype=np.int64),
        kind=np.array(columns[1], dtype=np.int8),
        cost=np.array(columns[2], dtype=np.float64),
        arg=np.array(columns[3], dtype=np.int64),
        activity=np.array(columns[4], dtype=np.int64),
        thread_cpu=np.array([t.cpu for t in plan.threads], dtype=np.int64),
        thread_names=tuple(t.name for t in plan.threads),
        activities=tuple(activities),
        barrier_names=tuple(barriers),
        barrier_parties=np.array(list(plan.barriers.values()), dtype=np.int64),
        locks=tuple(locks),
        thread_spawned=(
            np.array([t.spawned for t in plan.threads], dtype=np.bool_)
            if any(t.spawned for t in plan.threads)
            else None
        ),
    )
