"""The machine's engine compiled, for plans as arrays (:mod:`simsrv.machine.plan_arrays`).

:func:`execute_arrays` executes one frame's :class:`~simsrv.machine.plan_arrays.PlanArrays`
in one compiled call and gives exactly what :class:`simsrv.machine.executor.Machine` gives for
the same plan as objects: the same trace rows in the same order, the same end, charged CPU
time and critical sections.  It is a transcription of that engine for the case it covers:

* the machine is idle when the frame starts (no thread of an earlier frame alive, no event
  pending), computations run at full speed (no SMT slowdown, no background load) and the run
  shortcut is on;
* every thread is on its own CPU (so no thread ever queues for a CPU), none is spawned and no
  operation spawns, joins or lets a thread run first.

Inside it, the three paths of the object engine, chosen by the same rules: a plan of one
thread of computations is a straight sum; a barrier-phased plan without contention is the
closed form of :mod:`simsrv.machine.phased` (when the machine's back-off lets it try); else
the event engine: a heap keyed (time, thread, sequence) with runs of computations, deferred
lock releases and run truncation exactly as in :mod:`simsrv.machine.executor`.  When a plan
is outside the case, or is inconsistent, or a thread would outlive the coordinator, it returns
a negative status and writes nothing the caller keeps: the machine then runs the plan as
objects (which raises the engine's own error for an inconsistent plan).
``tests/test_compiled_engine.py`` compares the two engines on random plans, bit for bit.

Times are microseconds.
"""

from __future__ import annotations

import numpy as np

from simsrv.compiled import borrowing, compiled
from simsrv.machine.plan_arrays import ACQUIRE, BARRIER, COMPUTE, RELEASE

SERIAL, PHASED, EVENTS = 0, 1, 2
"""Paths taken (the status of :func:`execute_arrays` when >= 0)."""
REFUSED = -1
"""The plan is outside the compiled case or inconsistent: execute it as objects."""

# event kinds (as in the object engine)
_RESUME, _RUN_END, _WAKE = 0, 2, 3
# per-thread int state
_PC, _FIN, _TOKEN, _RUN_END_PC, _RUN_ID, _HELD, _WNEXT = range(7)
# per-thread float state
_BEGAN, _RUN_START = range(2)
# per-lock int state
_HOLDER, _HAS_REL, _REL_RUN, _WHEAD, _WTAIL = range(5)
# per-lock float state
_SINCE, _REL_AT = range(2)


MAX_REFUSALS = 7
"""Refusals in a row counted at most: a back-off of ``2**6 - 1 = 63`` frames."""


@compiled
def phased_backoff(status, tried, skip, refusals):
    """The phased shortcut's back-off after a frame: ``(skip, refusals)`` from the frame's
    path ``status`` (:data:`PHASED`, :data:`EVENTS`, :data:`SERIAL`), whether it ``tried``
    the shortcut, and the frames left that ``skip`` it and the ``refusals`` in a row before.
    After ``n`` refusals in a row the next ``2**(n-1) - 1`` frames skip the attempt, so
    strategies whose frames never qualify pay ~1/64 of a scan; a success resets the count; a
    serial frame changes nothing.  One rule for every engine path (the object engine's
    :meth:`Machine._execute_phased <simsrv.machine.executor.Machine._execute_phased>`, its
    array path and the compiled frame loop)."""
    if status == PHASED:
        return skip, 0
    if status == EVENTS:
        if tried:
            refusals = min(refusals + 1, MAX_REFUSALS)
            return 2 ** (refusals - 1) - 1, refusals
        return skip - 1, refusals
    return skip, refusals


@compiled
def execute_arrays(
    thread, kind, cost, arg, activity, thread_cpu, barrier_parties, is_wait, n_locks,
    lock_wait, cpus, start_us, now_us, try_phased,
    r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
):  # fmt: skip
    """Execute a frame's plan arrays from ``start_us`` on a machine whose clock is at
    ``now_us`` (the serial path starts at ``start_us``, the others at the later of the two).

    ``is_wait[a]`` says whether activity ``a`` is a wait; ``lock_wait`` is the activity code
    of lock waits; ``n_locks`` the size of the lock table.  Trace rows go to ``r_*`` and
    critical sections to ``h_*`` (as many rows as operations suffice); ``out`` receives
    ``[end_us, charged_us, rows, holds]``.  Returns :data:`SERIAL`, :data:`PHASED`,
    :data:`EVENTS` or :data:`REFUSED`."""
    n = len(thread)
    threads = len(thread_cpu)
    if threads == 0:
        return REFUSED
    offsets = np.searchsorted(thread, np.arange(threads + 1))
    charged = 0.0
    for i in range(n):
        if kind[i] > RELEASE:
            return REFUSED  # a spawn, join or run-first: the object engine runs it
        if kind[i] == COMPUTE and cost[i] > 0:
            charged += cost[i]
    out[1] = charged
    serial = threads == 1
    for i in range(n):
        if kind[i] != COMPUTE:
            serial = False
            break
    if serial:
        cpu0 = thread_cpu[0]
        if cpu0 < 0 or cpu0 >= cpus:
            return REFUSED
        now, rows = start_us, 0
        for i in range(n):
            if cost[i] > 0:
                end = now + cost[i]
                _put(r_thread, r_activity, r_start, r_end, rows, 0, activity[i], now, end)
                rows += 1
                now = end
        out[0], out[2], out[3] = now, rows, 0
        return SERIAL
    used = np.zeros(cpus, np.bool_)
    for t in range(threads):
        cpu = thread_cpu[t]
        if cpu < 0 or cpu >= cpus or used[cpu]:
            return REFUSED
        used[cpu] = True
    start_us = max(start_us, now_us)
    if try_phased and _phased(
        kind, cost, arg, activity, offsets, thread_cpu, barrier_parties, is_wait, n_locks,
        start_us, r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
    ):  # fmt: skip
        return PHASED
    return _events(
        kind, cost, arg, activity, offsets, barrier_parties, is_wait, n_locks, lock_wait,
        start_us, r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
    )  # fmt: skip


@compiled
def _phased(
    kind, cost, arg, activity, offsets, thread_cpu, barrier_parties, is_wait, n_locks,
    start_us, r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
):  # fmt: skip
    """:func:`simsrv.machine.phased.phased_timeline` on arrays: True (rows, holds and the end
    written) or False when the plan is not barrier-phased and free of contention."""
    threads = len(offsets) - 1
    declared = len(barrier_parties)
    held_by = np.full(max(n_locks, 1), -1, np.int64)
    names = np.empty(declared + 1, np.int64)  # thread 0's barriers, in order
    n_names = 0
    passed_at = np.empty((threads, declared + 1), np.int64)  # op index of each passage
    owner = np.full((declared + 2, max(n_locks, 1)), -1, np.int64)  # (phase, lock) -> thread
    for t in range(threads):
        held, passed = 0, 0
        for i in range(offsets[t], offsets[t + 1]):
            k = kind[i]
            if k == BARRIER:
                if held or not is_wait[activity[i]] or passed >= declared:
                    return False  # (more passages than barriers: not distinct, or unequal)
                if t and (passed >= n_names or names[passed] != arg[i]):
                    return False
                passed_at[t, passed] = i
                passed += 1
            elif k == ACQUIRE:
                lock = arg[i]
                if held_by[lock] == t:
                    return False
                if owner[passed + 1, lock] == -1:
                    owner[passed + 1, lock] = t
                elif owner[passed + 1, lock] != t:
                    return False
                held_by[lock] = t
                held += 1
            elif k == RELEASE:
                lock = arg[i]
                if held_by[lock] != t:
                    return False
                held_by[lock] = -1
                held -= 1
        if held:
            return False
        if t == 0:
            for j in range(passed):
                names[j] = arg[passed_at[0, j]]
                if barrier_parties[names[j]] != threads:
                    return False
                for m in range(j):
                    if names[m] == names[j]:
                        return False
            n_names = passed
        elif passed != n_names:
            return False
    barriers = n_names
    rows = 0
    opened = start_us
    ends = np.zeros(threads)
    starts = np.empty(barriers + 1)
    phase_ends = np.empty((barriers + 1, threads))
    for phase in range(barriers + 1):
        starts[phase] = opened
        for t in range(threads):
            first = offsets[t] if phase == 0 else passed_at[t, phase - 1] + 1
            last = offsets[t + 1] if phase == barriers else passed_at[t, phase]
            now = opened
            for i in range(first, last):
                if kind[i] == COMPUTE and cost[i] > 0:
                    end = now + cost[i]
                    _put(r_thread, r_activity, r_start, r_end, rows, t, activity[i], now, end)
                    rows += 1
                    now = end
            ends[t] = now
            phase_ends[phase, t] = now
        if phase == barriers:
            break
        opens = ends.max()
        for t in range(threads):
            if ends[t] < opens:
                wait = activity[passed_at[t, phase]]
                _put(r_thread, r_activity, r_start, r_end, rows, t, wait, ends[t], opens)
                rows += 1
        opened = opens
    if ends.max() > ends[0]:
        return False
    holds = 0
    for phase in range(1, barriers + 2):
        for lock in range(n_locks):
            t = owner[phase, lock]
            if t >= 0:
                h_lock[holds], h_thread[holds] = lock, t
                h_start[holds], h_end[holds] = starts[phase - 1], phase_ends[phase - 1, t]
                holds += 1
    out[0], out[2], out[3] = ends[0], rows, holds
    return True


@compiled
def _events(
    kind, cost, arg, activity, offsets, barrier_parties, is_wait, n_locks, lock_wait,
    start_us, r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
):  # fmt: skip
    """The event engine of :mod:`simsrv.machine.executor` for one thread per CPU: allocates
    its state and runs :func:`_event_loop`."""
    threads = len(offsets) - 1
    n = len(kind)
    cap = 2 * n + 4 * threads + 16
    ht = np.empty(cap)  # heap: time
    hi = np.empty((cap, 4), np.int64)  # heap: thread, sequence, kind, token
    ts = np.zeros((threads, 7), np.int64)
    tf = np.zeros((threads, 2))
    for t in range(threads):
        ts[t, _PC] = offsets[t]
        ts[t, _RUN_END_PC] = -1
        ts[t, _WNEXT] = -1
    locks = max(n_locks, 1)
    ls = np.zeros((locks, 5), np.int64)
    lf = np.zeros((locks, 2))
    for lock in range(locks):
        ls[lock, _HOLDER] = ls[lock, _WHEAD] = ls[lock, _WTAIL] = -1
    bars = len(barrier_parties)
    bcount = np.zeros(max(bars, 1), np.int64)
    bwait = np.empty((max(bars, 1), threads), np.int64)
    return _event_loop(
        kind, cost, arg, activity, offsets, barrier_parties, is_wait, n_locks, lock_wait,
        start_us, r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
        ht, hi, ts, tf, ls, lf, bcount, bwait,
    )  # fmt: skip


@borrowing
def _event_loop(
    kind, cost, arg, activity, offsets, parties, is_wait, n_locks, lock_wait, start_us,
    r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end, out,
    ht, hi, ts, tf, ls, lf, bcount, bwait,
):  # fmt: skip
    """The event loop, in one body: the object engine's ``_step`` (pop an event, end a run
    or wake a waiter) and ``_advance`` (a thread's operations from its program counter:
    begin a run of computations with the releases it defers, arrive at a barrier, acquire
    or release a lock) inlined, so that an event costs no call with the whole state as
    arguments.  The heap (``ht``, ``hi``) is keyed (time, thread, sequence); ``ts``/``tf``
    hold the threads' state, ``ls``/``lf`` the locks', ``bcount``/``bwait`` the barriers'."""
    threads = len(offsets) - 1
    cap = len(ht)
    size = seq = rows = holds = 0
    pos_t, pos_r = start_us, -1  # the latest (time, thread) an event was taken at
    now = start_us
    fresh = 0  # threads not yet advanced once (they start in order, before any event)
    while True:
        if fresh < threads:
            t = fresh
            fresh += 1
        else:
            if ts[0, _FIN]:
                if size == 0 or ht[0] > now:
                    break  # nothing else happens at the coordinator's end
            elif size == 0:
                return REFUSED  # deadlock: the object engine raises
            # take the first event
            time, t, event, token = ht[0], hi[0, 0], hi[0, 2], hi[0, 3]
            size -= 1
            if size > 0:
                _sift_down(ht, hi, size)
            if time > pos_t or (time == pos_t and t > pos_r):
                pos_t, pos_r = time, t
            if event == _RUN_END:
                if token != ts[t, _TOKEN]:
                    continue  # superseded (the run was truncated)
                now = time
                at = tf[t, _RUN_START]  # the run's rows
                for i in range(ts[t, _PC], ts[t, _RUN_END_PC]):
                    if kind[i] == COMPUTE and cost[i] > 0:
                        end = at + cost[i]
                        _put(r_thread, r_activity, r_start, r_end, rows, t, activity[i], at, end)
                        rows += 1
                        at = end
                ts[t, _PC], ts[t, _RUN_END_PC] = ts[t, _RUN_END_PC], -1
            else:
                now = time
                if event == _WAKE:
                    pc = ts[t, _PC]
                    act = lock_wait if kind[pc] == ACQUIRE else activity[pc]
                    if time > tf[t, _BEGAN]:
                        _put(
                            r_thread, r_activity, r_start, r_end, rows, t, act, tf[t, _BEGAN], time
                        )
                        rows += 1
                    ts[t, _PC] = pc + 1
        # advance thread t from its program counter until it waits or ends
        last = offsets[t + 1]
        pc = ts[t, _PC]
        waits = False
        while pc < last:
            k = kind[pc]
            if k == COMPUTE and cost[pc] <= 0:
                pc += 1
                continue
            ts[t, _PC] = pc
            if size and (ht[0] < now or (ht[0] == now and hi[0, 0] < t)):
                if size >= cap:
                    return REFUSED
                seq += 1
                _sift_up(ht, hi, size, now, t, seq, _RESUME, ts[t, _TOKEN])
                size += 1  # an earlier thread acts first
                waits = True
                break
            if k == COMPUTE:  # a run: computations and the releases deferred in it
                tf[t, _BEGAN] = now
                end = now
                ts[t, _RUN_ID] += 1
                run = ts[t, _RUN_ID]
                while pc < last:
                    k = kind[pc]
                    if k == COMPUTE:
                        if cost[pc] > 0:
                            end = end + cost[pc]
                    elif k == RELEASE:
                        lock = arg[pc]
                        if ls[lock, _HOLDER] != t or ls[lock, _HAS_REL]:
                            return REFUSED  # releases a lock it does not hold
                        if ls[lock, _WHEAD] >= 0:
                            break  # a waiter: released when the run gets there
                        ts[t, _HELD] -= 1
                        ls[lock, _HAS_REL] = 1
                        lf[lock, _REL_AT] = end
                        ls[lock, _REL_RUN] = run
                    else:
                        break
                    pc += 1
                tf[t, _RUN_START], ts[t, _RUN_END_PC] = now, pc
                if size >= cap:
                    return REFUSED
                seq += 1
                _sift_up(ht, hi, size, end, t, seq, _RUN_END, ts[t, _TOKEN])
                size += 1
                waits = True
                break
            if k == BARRIER:
                barrier = arg[pc]
                if not is_wait[activity[pc]]:
                    return REFUSED
                bcount[barrier] += 1
                arrived = bcount[barrier]
                if arrived > parties[barrier]:
                    return REFUSED
                tf[t, _BEGAN] = now
                bwait[barrier, arrived - 1] = t
                if arrived == parties[barrier]:
                    for i in range(arrived):
                        if size >= cap:
                            return REFUSED
                        seq += 1
                        w = bwait[barrier, i]
                        _sift_up(ht, hi, size, now, w, seq, _WAKE, ts[w, _TOKEN])
                        size += 1
                waits = True
                break
            lock = arg[pc]
            if k == ACQUIRE:
                holder = ls[lock, _HOLDER]
                if holder >= 0 and ls[lock, _HAS_REL]:
                    at = lf[lock, _REL_AT]
                    in_run = (
                        ts[holder, _RUN_END_PC] >= 0 and ts[holder, _RUN_ID] == ls[lock, _REL_RUN]
                    )
                    acted = pos_t > at or (pos_t == at and pos_r >= holder)
                    if at < now or not in_run or acted:  # released already
                        _put(h_lock, h_thread, h_start, h_end, holds, lock, holder,
                             lf[lock, _SINCE], at)  # fmt: skip
                        holds += 1
                        holder = -1
                        ls[lock, _HOLDER] = -1
                        ls[lock, _HAS_REL] = 0
                    else:  # the holder's run stops at the release: t waits for it
                        if size >= cap:
                            return REFUSED
                        seq += 1
                        end = _truncate_run(kind, cost, arg, ts, tf, ls, holder, lock)
                        _sift_up(ht, hi, size, end, holder, seq, _RUN_END, ts[holder, _TOKEN])
                        size += 1
                if holder >= 0:  # t queues
                    tf[t, _BEGAN] = now
                    ts[t, _WNEXT] = -1
                    if ls[lock, _WTAIL] >= 0:
                        ts[ls[lock, _WTAIL], _WNEXT] = t
                    else:
                        ls[lock, _WHEAD] = t
                    ls[lock, _WTAIL] = t
                    waits = True
                    break
                ls[lock, _HOLDER] = t
                lf[lock, _SINCE] = now
                ts[t, _HELD] += 1
            else:  # a release outside a run: the first waiter gets the lock
                if ls[lock, _HOLDER] != t or ls[lock, _HAS_REL]:
                    return REFUSED
                ts[t, _HELD] -= 1
                _put(h_lock, h_thread, h_start, h_end, holds, lock, t, lf[lock, _SINCE], now)
                holds += 1
                lf[lock, _SINCE] = now
                waiter = ls[lock, _WHEAD]
                if waiter >= 0:
                    ls[lock, _WHEAD] = ts[waiter, _WNEXT]
                    if ls[lock, _WHEAD] < 0:
                        ls[lock, _WTAIL] = -1
                    ls[lock, _HOLDER] = waiter
                    ts[waiter, _HELD] += 1
                    if size >= cap:
                        return REFUSED
                    seq += 1
                    _sift_up(ht, hi, size, now, waiter, seq, _WAKE, ts[waiter, _TOKEN])
                    size += 1
                else:
                    ls[lock, _HOLDER] = -1
            pc += 1
        if not waits:
            ts[t, _PC] = pc
            if ts[t, _HELD]:
                return REFUSED  # ended holding locks
            ts[t, _FIN] = 1
    if size:
        return REFUSED  # something happens after the frame: the object engine keeps it
    for t in range(threads):
        if not ts[t, _FIN]:
            return REFUSED
    for lock in range(n_locks):  # releases inside runs: their sections end at the release
        holder = ls[lock, _HOLDER]
        if holder >= 0 and ls[lock, _HAS_REL]:
            _put(h_lock, h_thread, h_start, h_end, holds, lock, holder, lf[lock, _SINCE],
                 lf[lock, _REL_AT])  # fmt: skip
            holds += 1
    out[0], out[2], out[3] = now, rows, holds
    return EVENTS


@borrowing
def _put(threads, activities, starts, ends, row, thread, activity, start, end):
    threads[row], activities[row], starts[row], ends[row] = thread, activity, start, end


@borrowing
def _less(t1, r1, s1, t2, r2, s2):
    return t1 < t2 or (t1 == t2 and (r1 < r2 or (r1 == r2 and s1 < s2)))


@borrowing
def _sift_up(ht, hi, size, time, thread, seq, event, token):
    """Put an event at slot ``size`` of the heap and move it up to its place."""
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if _less(time, thread, seq, ht[parent], hi[parent, 0], hi[parent, 1]):
            ht[i] = ht[parent]
            hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = (
                hi[parent, 0], hi[parent, 1], hi[parent, 2], hi[parent, 3]
            )  # fmt: skip
            i = parent
        else:
            break
    ht[i] = time
    hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = thread, seq, event, token


@borrowing
def _sift_down(ht, hi, size):
    """After the first event was taken: move the event at slot ``size`` (the last) down
    from the top to its place in a heap of ``size`` events."""
    lt, l0, l1, l2, l3 = ht[size], hi[size, 0], hi[size, 1], hi[size, 2], hi[size, 3]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _less(
            ht[right], hi[right, 0], hi[right, 1], ht[child], hi[child, 0], hi[child, 1]
        ):
            child = right
        if _less(ht[child], hi[child, 0], hi[child, 1], lt, l0, l1):
            ht[i] = ht[child]
            hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = (
                hi[child, 0], hi[child, 1], hi[child, 2], hi[child, 3]
            )  # fmt: skip
            i = child
        else:
            break
    ht[i] = lt
    hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = l0, l1, l2, l3


@borrowing
def _truncate_run(kind, cost, arg, ts, tf, ls, t, lock):
    """Stop thread ``t``'s run at its release of ``lock`` (a thread waits for it): the
    releases from there on are no longer deferred, the run's pending end is superseded.
    Returns the run's new end, us."""
    now = tf[t, _RUN_START]
    pc = ts[t, _PC]
    stop = ts[t, _RUN_END_PC]
    while pc < stop:
        if kind[pc] == COMPUTE and cost[pc] > 0:
            now = now + cost[pc]
        elif kind[pc] == RELEASE and arg[pc] == lock:
            break
        pc += 1
    for i in range(pc, stop):
        if kind[i] == RELEASE:
            ls[arg[i], _HAS_REL] = 0
            ts[t, _HELD] += 1
    ts[t, _RUN_END_PC] = pc
    ts[t, _TOKEN] += 1
    return now
