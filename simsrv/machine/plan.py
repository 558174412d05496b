"""Frame plans: the contract between a strategy and the machine.

A :class:`FramePlan` is a set of threads (processes or threads of the modelled server), each a
sequence of operations.  Costs are microseconds of CPU time on the platform.  Thread 0 is the
coordinator (the thread that runs the frame loop): the frame ends when it finishes its
operations.  Other threads may outlive the frame (e.g. a worker's teardown overlapping the
next frame's world phase).

Operations
----------
:class:`Compute` runs for ``cost_us`` on the thread's CPU, labelled with an activity.
:class:`BarrierWait` blocks until every party of the named barrier has arrived.
:class:`Acquire` / :class:`Release` take and give back a named mutual-exclusion lock.
:class:`SpinSection` computes holding a kernel spinlock, busy-waiting on its CPU for it.
:class:`Spawn` starts a thread whose ``spawned`` flag is set; :class:`Join` waits for it to end.
:class:`RunFirst` models a child that runs first on its parent's CPU: the parent waits for it
as in :class:`Join`, unless the OS migrates the waiting parent to an idle CPU first.
Plans and operations are named tuples: immutable and cheap to build (a frame builds several).
Costs of synchronisation (a barrier's, a lock's, a fork's) are explicit ``Compute`` operations
chosen by the strategy; the machine only enforces the ordering.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import NamedTuple


class Compute(NamedTuple):
    """Run on the CPU for ``cost_us`` microseconds doing ``activity``."""

    activity: str
    cost_us: float


class BarrierWait(NamedTuple):
    """Wait until all parties of barrier ``name`` (declared in the plan) have arrived.

    The wait is recorded as ``activity`` (a name ending in ``_wait``), so that a strategy can
    tell its barriers apart in the trace (e.g. ``end_barrier_wait``).
    """

    name: str
    activity: str = "barrier_wait"


class Acquire(NamedTuple):
    """Take lock ``lock`` (any hashable id), waiting while another thread holds it."""

    lock: Hashable


class Release(NamedTuple):
    """Give back lock ``lock``."""

    lock: Hashable


class SpinSection(NamedTuple):
    """Compute ``cost_us`` as ``activity`` holding the kernel spinlock ``lock``.

    The thread takes its CPU first (as a :class:`Compute`) and keeps it throughout: while
    another thread holds the lock it busy-waits on that CPU (the machine records the time as
    ``lock_spin``: CPU time no plan charges), the lock going to the spinners in arrival order;
    with the lock it computes, then releases the lock and gives the CPU up.  A spinlock is a
    kernel's, so no thread-library signal is involved; a spinning CPU does not slow its SMT
    siblings (the ``pause`` in the spin loop).  A lock is taken either by sections or by
    :class:`Acquire`, not both.
    """

    lock: Hashable
    activity: str
    cost_us: float


class Spawn(NamedTuple):
    """Start thread ``thread`` (a thread of the same plan with ``spawned=True``)."""

    thread: str


class Join(NamedTuple):
    """Wait until thread ``thread`` has finished all its operations."""

    thread: str


class RunFirst(NamedTuple):
    """Let ``thread`` (just spawned on this CPU) run first; the waiting parent migrates.

    The parent is runnable but not running while ``thread`` holds their shared CPU.  If
    ``thread`` has not finished after ``migrate_after_us`` and another CPU is idle (no thread
    on it, none queued), the parent moves to the lowest-numbered idle CPU (Linux's idle balance
    pulling a queued task) and continues there; its later operations run on that CPU.
    Otherwise it waits for ``thread`` to finish.  The wait is recorded as ``runqueue_wait``.
    """

    thread: str
    migrate_after_us: float


Op = Compute | BarrierWait | Acquire | Release | SpinSection | Spawn | Join | RunFirst


US_PER_S = 1e6
"""Microseconds per second: the machine counts in us, its interface speaks seconds."""


class PlanError(RuntimeError):
    """A strategy produced an inconsistent plan (a bug in the strategy, not user input)."""


SPAWNER_CPU = -1
"""``Thread.cpu`` of a spawned thread that starts on the CPU its spawner is on at the time."""


class Thread(NamedTuple):
    """One thread of execution in a frame.

    Attributes
    ----------
    name:
        Unique within the plan (trace rows carry it).
    cpu:
        The CPU the thread runs on (0-based), or :data:`SPAWNER_CPU` for a spawned thread that
        starts where its spawner runs (as a forked child does).
    ops:
        Its operations, in order.
    spawned:
        ``False``: starts when the frame starts; ``True``: starts when a :class:`Spawn` names it.
    """

    name: str
    cpu: int
    ops: tuple[Op, ...]
    spawned: bool = False


class FramePlan(NamedTuple):
    """What one server frame runs: ``threads[0]`` is the coordinator.

    ``barriers`` maps each barrier name to its number of parties.
    """

    threads: tuple[Thread, ...]
    barriers: Mapping[str, int] = {}  # noqa: RUF012 (never mutated)

    def charged_us(self) -> float:
        """The CPU time the plan charges: the sum of its computations' costs (spin sections
        included), us."""
        total = 0.0
        for thread in self.threads:
            for op in thread.ops:  # the invariants' per-frame cost: one attribute read an op
                kind = type(op)
                if kind is Compute or kind is SpinSection:
                    cost = op.cost_us
                    if cost > 0:
                        total += cost
        return total

    def is_serial(self) -> bool:
        """True when the plan is one thread of plain computations (no synchronisation)."""
        if len(self.threads) != 1:
            return False
        for op in self.threads[0].ops:  # noqa: SIM110 (a plain loop: this is the hot path)
            if type(op) is not Compute:
                return False
        return True
