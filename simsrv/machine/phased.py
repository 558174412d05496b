"""A closed-form timeline for barrier-phased plans without contention (an exact shortcut).

The thread strategies (``abdelkhalek``, ``area-quadrant``) build frames of one thread per CPU
that all pass the same barriers in the same order, with locks taken and given back between
two barriers.  When no lock is wanted by two threads between the same two barriers, nothing in
such a frame can wait except at the barriers, so the discrete-event engine is not needed: each
thread starts a phase at the instant the previous barrier opened, runs its computations back
to back on its own CPU, and arrives at the next barrier; the barrier opens at the last
arrival.  :func:`phased_timeline` computes that timeline with the same floating-point additions
and the same trace rows as the engine (``tests/test_machine_properties.py`` compares the two
on random plans), and returns ``None`` for any plan it does not cover, which the engine then
executes.

Preconditions the caller checks (machine state, not the plan): no thread of an earlier frame
is alive and no event is pending, and SMT does not slow computations down.
"""

from __future__ import annotations

from simsrv.machine.plan import Acquire, BarrierWait, Compute, FramePlan, Release
from simsrv.machine.trace import is_wait

Row = tuple[int, int, str, str, float, float]


def phased_timeline(
    plan: FramePlan,
    frame: int,
    start_us: float,
    cpus: int,
    lock_holds: list | None = None,
    charged_us: list | None = None,
) -> tuple[list[Row], float] | None:
    """The trace rows and the coordinator's end (us) of ``plan`` started at ``start_us``, or
    ``None`` when the plan is not barrier-phased and free of contention (see module doc).

    With ``lock_holds``, each lock a thread takes in a phase is logged there as
    ``(lock, frame, thread, phase start, the thread's end of the phase)`` (us): a superset of
    its critical sections, for the lock-exclusion invariant; with ``charged_us``, the CPU time
    the plan charges (its computations' costs, us) is appended there."""
    threads = plan.threads
    parties = len(threads)
    phases_of: list[list[list[Compute]]] = []  # per thread, per phase: its computations
    waits_of: list[list[BarrierWait]] = []  # per thread: its barrier passages, in order
    names: list = []  # the barriers every thread passes, in order (thread 0's)
    lock_owner: dict = {}  # (phase, lock) -> thread index
    used_cpus = set()
    charged = 0.0
    for index, thread in enumerate(threads):
        cpu = thread.cpu
        if thread.spawned or not 0 <= cpu < cpus or cpu in used_cpus:
            return None
        used_cpus.add(cpu)
        segment: list[Compute] = []
        phases = [segment]
        waits: list[BarrierWait] = []
        held: set = set()
        for op in thread.ops:
            kind = type(op)
            if kind is Compute:
                if op.cost_us > 0:
                    segment.append(op)
                    charged += op.cost_us
            elif kind is BarrierWait:
                passed = len(waits)
                if held or not is_wait(op.activity):
                    return None
                if index and (passed >= len(names) or names[passed] != op.name):
                    return None
                waits.append(op)
                segment = []
                phases.append(segment)
            elif kind is Acquire:
                lock = op.lock
                if lock in held or lock_owner.setdefault((len(phases), lock), index) != index:
                    return None
                held.add(lock)
            elif kind is Release and op.lock in held:
                held.discard(op.lock)
            else:
                return None
        if held:
            return None
        if index == 0:
            names = [w.name for w in waits]
            declared = plan.barriers
            if len(set(names)) != len(names) or any(declared.get(n) != parties for n in names):
                return None
        elif len(waits) != len(names):
            return None
        phases_of.append(phases)
        waits_of.append(waits)
    timeline = _timeline(plan, frame, start_us, phases_of, waits_of)
    if timeline is not None and charged_us is not None:
        charged_us.append(charged)
    if timeline is not None and lock_holds is not None and lock_owner:
        for (phase, lock), index in lock_owner.items():
            opened, end = timeline[2][phase - 1], timeline[3][phase - 1][index]
            lock_holds.append((lock, frame, threads[index].name, opened, end))
    return None if timeline is None else timeline[:2]


def _timeline(
    plan: FramePlan,
    frame: int,
    start_us: float,
    phases_of: list[list[list[Compute]]],
    waits_of: list[list[BarrierWait]],
) -> tuple[list[Row], float, list[float], list[list[float]]] | None:
    """(rows, coordinator end, each phase's start, each phase's thread ends), us."""
    threads = plan.threads
    barriers = len(waits_of[0])
    rows: list[Row] = []
    opened = start_us  # the instant the current phase began (the last barrier opened)
    ends = [0.0] * len(threads)
    starts: list[float] = []
    phase_ends: list[list[float]] = []
    for phase in range(barriers + 1):
        starts.append(opened)
        for index, thread in enumerate(threads):
            t, cpu, name = opened, thread.cpu, thread.name
            for activity, cost in phases_of[index][phase]:
                end = t + cost
                rows.append((frame, cpu, name, activity, t, end))
                t = end
            ends[index] = t
        phase_ends.append(list(ends))
        if phase == barriers:
            break
        opens = max(ends)
        for index, thread in enumerate(threads):
            arrived = ends[index]
            if arrived < opens:
                activity = waits_of[index][phase].activity
                rows.append((frame, thread.cpu, thread.name, activity, arrived, opens))
        opened = opens
    if max(ends) > ends[0]:
        return None  # a thread outlives the coordinator: the engine keeps it running
    return rows, ends[0], starts, phase_ends
