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
# counters (int) and clocks (float)
_HEAP, _SEQ, _ROWS, _HOLDS, _POS_R, _ERR = range(6)
_NOW, _POS_T = range(2)


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
    """The event engine of :mod:`simsrv.machine.executor` for one thread per CPU."""
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
    ctr = np.zeros(6, np.int64)
    ctr[_POS_R] = -1
    clk = np.array([start_us, start_us])
    st = (kind, cost, arg, activity, offsets, barrier_parties, is_wait, lock_wait,
          r_thread, r_activity, r_start, r_end, h_lock, h_thread, h_start, h_end,
          ht, hi, ts, tf, ls, lf, bcount, bwait, ctr, clk)  # fmt: skip
    for t in range(threads):
        _advance(st, t)
        if ctr[_ERR]:
            return REFUSED
    while not ts[0, _FIN]:
        if ctr[_HEAP] == 0:
            return REFUSED  # deadlock: the object engine raises
        _step(st)
        if ctr[_ERR]:
            return REFUSED
    while ctr[_HEAP] and ht[0] <= clk[_NOW]:
        _step(st)
        if ctr[_ERR]:
            return REFUSED
    if ctr[_HEAP]:
        return REFUSED  # something happens after the frame: the object engine keeps it
    for t in range(threads):
        if not ts[t, _FIN]:
            return REFUSED
    for lock in range(n_locks):  # releases inside runs: their sections end at the release
        holder = ls[lock, _HOLDER]
        if holder >= 0 and ls[lock, _HAS_REL]:
            _log_hold(st, lock, holder, lf[lock, _SINCE], lf[lock, _REL_AT])
    out[0], out[2], out[3] = clk[_NOW], ctr[_ROWS], ctr[_HOLDS]
    return EVENTS


@borrowing
def _put(threads, activities, starts, ends, row, thread, activity, start, end):
    threads[row], activities[row], starts[row], ends[row] = thread, activity, start, end


@borrowing
def _move(ht, hi, dst, src):
    ht[dst] = ht[src]
    for j in range(4):
        hi[dst, j] = hi[src, j]


@borrowing
def _less(t1, r1, s1, t2, r2, s2):
    return t1 < t2 or (t1 == t2 and (r1 < r2 or (r1 == r2 and s1 < s2)))


@borrowing
def _push(st, time, thread, event):
    ht, hi, ts, ctr = st[16], st[17], st[18], st[24]
    size = ctr[_HEAP]
    if size >= len(ht):
        ctr[_ERR] = 1
        return
    ctr[_SEQ] += 1
    seq = ctr[_SEQ]
    token = ts[thread, _TOKEN]
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if _less(time, thread, seq, ht[parent], hi[parent, 0], hi[parent, 1]):
            _move(ht, hi, i, parent)
            i = parent
        else:
            break
    ht[i] = time
    hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = thread, seq, event, token
    ctr[_HEAP] = size + 1


@borrowing
def _pop(st):
    """Remove the heap's first event; return (time, thread, kind, token)."""
    ht, hi, ctr = st[16], st[17], st[24]
    time, thread, event, token = ht[0], hi[0, 0], hi[0, 2], hi[0, 3]
    size = ctr[_HEAP] - 1
    ctr[_HEAP] = size
    if size > 0:
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
                _move(ht, hi, i, child)
                i = child
            else:
                break
        ht[i] = lt
        hi[i, 0], hi[i, 1], hi[i, 2], hi[i, 3] = l0, l1, l2, l3
    return time, thread, event, token


@borrowing
def _row(st, thread, act, start, end):
    ctr = st[24]
    rows = ctr[_ROWS]
    st[8][rows], st[9][rows], st[10][rows], st[11][rows] = thread, act, start, end
    ctr[_ROWS] = rows + 1


@borrowing
def _log_hold(st, lock, thread, start, end):
    ctr = st[24]
    holds = ctr[_HOLDS]
    st[12][holds], st[13][holds], st[14][holds], st[15][holds] = lock, thread, start, end
    ctr[_HOLDS] = holds + 1


@borrowing
def _step(st):
    kind, activity, lock_wait = st[0], st[3], st[7]
    ts, tf, ctr, clk = st[18], st[19], st[24], st[25]
    time, thread, event, token = _pop(st)
    if time > clk[_POS_T] or (time == clk[_POS_T] and thread > ctr[_POS_R]):
        clk[_POS_T], ctr[_POS_R] = time, thread
    if event != _RESUME and event != _WAKE and token != ts[thread, _TOKEN]:
        return  # superseded
    clk[_NOW] = time
    if event == _RUN_END:
        _end_run(st, thread)
    elif event == _WAKE:
        pc = ts[thread, _PC]
        act = lock_wait if kind[pc] == ACQUIRE else activity[pc]
        if time > tf[thread, _BEGAN]:
            _row(st, thread, act, tf[thread, _BEGAN], time)
        ts[thread, _PC] = pc + 1
    _advance(st, thread)


@borrowing
def _advance(st, t):
    kind, cost, arg = st[0], st[1], st[2]
    offsets = st[4]
    ht, hi, ts, ctr, clk = st[16], st[17], st[18], st[24], st[25]
    now = clk[_NOW]
    end = offsets[t + 1]
    pc = ts[t, _PC]
    while pc < end:
        k = kind[pc]
        if k == COMPUTE and cost[pc] <= 0:
            pc += 1
            continue
        ts[t, _PC] = pc
        if ctr[_HEAP] and (ht[0] < now or (ht[0] == now and hi[0, 0] < t)):
            _push(st, now, t, _RESUME)  # an earlier thread acts first
            return
        if k == COMPUTE:
            _begin_compute(st, t)
            return
        if k == BARRIER:
            _arrive(st, t, pc)
            return
        if k == ACQUIRE:
            if not _acquire(st, t, arg[pc]):
                return
        else:
            _release(st, t, arg[pc])
            if ctr[_ERR]:
                return
        pc += 1
    ts[t, _PC] = pc
    if ts[t, _HELD]:
        ctr[_ERR] = 1  # ended holding locks
        return
    ts[t, _FIN] = 1


@borrowing
def _begin_compute(st, t):
    kind, cost, arg, offsets = st[0], st[1], st[2], st[4]
    ts, tf, ctr, clk = st[18], st[19], st[24], st[25]
    now = clk[_NOW]
    tf[t, _BEGAN] = now
    end, pc, last = now, ts[t, _PC], offsets[t + 1]
    ts[t, _RUN_ID] += 1
    while pc < last:
        k = kind[pc]
        if k == COMPUTE:
            if cost[pc] > 0:
                end = end + cost[pc]
        elif k == RELEASE:
            if not _defer_release(st, t, arg[pc], end):
                break
            if ctr[_ERR]:
                return
        else:
            break
        pc += 1
    tf[t, _RUN_START], ts[t, _RUN_END_PC] = now, pc
    _push(st, end, t, _RUN_END)


@borrowing
def _record_run(st, t, stop):
    kind, cost, activity = st[0], st[1], st[3]
    ts, tf = st[18], st[19]
    now = tf[t, _RUN_START]
    for i in range(ts[t, _PC], stop):
        if kind[i] == COMPUTE and cost[i] > 0:
            end = now + cost[i]
            _row(st, t, activity[i], now, end)
            now = end


@borrowing
def _end_run(st, t):
    ts = st[18]
    _record_run(st, t, ts[t, _RUN_END_PC])
    ts[t, _PC], ts[t, _RUN_END_PC] = ts[t, _RUN_END_PC], -1


@borrowing
def _arrive(st, t, pc):
    arg, activity, parties, is_wait = st[2], st[3], st[5], st[6]
    tf, bcount, bwait, ctr, clk = st[19], st[22], st[23], st[24], st[25]
    barrier = arg[pc]
    if not is_wait[activity[pc]]:
        ctr[_ERR] = 1
        return
    bcount[barrier] += 1
    if bcount[barrier] > parties[barrier]:
        ctr[_ERR] = 1
        return
    tf[t, _BEGAN] = clk[_NOW]
    bwait[barrier, bcount[barrier] - 1] = t
    if bcount[barrier] == parties[barrier]:
        for i in range(parties[barrier]):
            _push(st, clk[_NOW], bwait[barrier, i], _WAKE)


@borrowing
def _acquire(st, t, lock):
    ts, tf, ls, lf, ctr, clk = st[18], st[19], st[20], st[21], st[24], st[25]
    now = clk[_NOW]
    holder = ls[lock, _HOLDER]
    if holder >= 0 and ls[lock, _HAS_REL]:
        at = lf[lock, _REL_AT]
        in_run = ts[holder, _RUN_END_PC] >= 0 and ts[holder, _RUN_ID] == ls[lock, _REL_RUN]
        acted = clk[_POS_T] > at or (clk[_POS_T] == at and ctr[_POS_R] >= holder)
        if at < now or not in_run or acted:
            _log_hold(st, lock, holder, lf[lock, _SINCE], at)
            holder = -1
            ls[lock, _HOLDER] = -1
            ls[lock, _HAS_REL] = 0
        else:
            _truncate_run(st, holder, lock)
    if holder < 0:
        ls[lock, _HOLDER] = t
        lf[lock, _SINCE] = now
        ts[t, _HELD] += 1
        return True
    tf[t, _BEGAN] = now
    ts[t, _WNEXT] = -1
    if ls[lock, _WTAIL] >= 0:
        ts[ls[lock, _WTAIL], _WNEXT] = t
    else:
        ls[lock, _WHEAD] = t
    ls[lock, _WTAIL] = t
    return False


@borrowing
def _release(st, t, lock):
    ts, ls, lf, ctr, clk = st[18], st[20], st[21], st[24], st[25]
    if ls[lock, _HOLDER] != t or ls[lock, _HAS_REL]:
        ctr[_ERR] = 1  # releases a lock it does not hold
        return
    now = clk[_NOW]
    ts[t, _HELD] -= 1
    _log_hold(st, lock, t, lf[lock, _SINCE], now)
    lf[lock, _SINCE] = now
    waiter = ls[lock, _WHEAD]
    if waiter >= 0:
        ls[lock, _WHEAD] = ts[waiter, _WNEXT]
        if ls[lock, _WHEAD] < 0:
            ls[lock, _WTAIL] = -1
        ls[lock, _HOLDER] = waiter
        ts[waiter, _HELD] += 1
        _push(st, now, waiter, _WAKE)
    else:
        ls[lock, _HOLDER] = -1


@borrowing
def _defer_release(st, t, lock, at):
    ts, ls, lf, ctr = st[18], st[20], st[21], st[24]
    if ls[lock, _HOLDER] != t or ls[lock, _HAS_REL]:
        ctr[_ERR] = 1
        return False
    if ls[lock, _WHEAD] >= 0:
        return False
    ts[t, _HELD] -= 1
    ls[lock, _HAS_REL] = 1
    lf[lock, _REL_AT] = at
    ls[lock, _REL_RUN] = ts[t, _RUN_ID]
    return True


@borrowing
def _undefer_releases(st, t, start):
    kind, arg = st[0], st[2]
    ts, ls = st[18], st[20]
    for i in range(start, ts[t, _RUN_END_PC]):
        if kind[i] == RELEASE:
            ls[arg[i], _HAS_REL] = 0
            ts[t, _HELD] += 1


@borrowing
def _truncate_run(st, t, lock):
    kind, cost, arg = st[0], st[1], st[2]
    ts, tf = st[18], st[19]
    now = tf[t, _RUN_START]
    pc = ts[t, _PC]
    while pc < ts[t, _RUN_END_PC]:
        if kind[pc] == COMPUTE and cost[pc] > 0:
            now = now + cost[pc]
        elif kind[pc] == RELEASE and arg[pc] == lock:
            break
        pc += 1
    _undefer_releases(st, t, pc)
    ts[t, _RUN_END_PC] = pc
    ts[t, _TOKEN] += 1
    _push(st, now, t, _RUN_END)
