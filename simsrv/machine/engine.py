"""The machine's engine, compiled: N simulated CPUs executing frame plans, frame after frame.

This is the fast engine and the only one the runs use (``machine.engine = "fast"``); the simpy
reference (:mod:`simsrv.machine.simpy_engine`) implements the same model op by op, for
clarity, and ``tests/test_engines.py`` requires the same trace from both, bit for bit.  The
model itself is stated in the reference's docstring; this module says how it is made fast.

State
-----
The whole machine is one record of arrays, :class:`MachineState` (built by :func:`new_state`,
owned by the facade :class:`simsrv.machine.executor.Machine`): registers, the event heap, the
threads of every frame still referenced (their operations copied into an operation store),
the barriers of those frames, the CPUs (who computes, who queues), the cores (how many
siblings compute), the locks (which persist across frames), and the trace and lock-hold
column stores (:mod:`simsrv.machine.trace`), which the engine appends to in place.  Every
compiled caller (:meth:`Machine.execute <simsrv.machine.executor.Machine.execute>` and the
compiled frame loop, :mod:`simsrv.frame_steps.kernels`) passes that record to
:func:`execute`: nothing is copied in or out.

Threads live in *slots*; a frame's threads take consecutive slots and its operations
consecutive rows of the store.  When no thread is alive the store starts again from row 0;
when threads are alive and the store is full, the frames without a live thread are dropped
(:func:`_compact`); when that is not enough, :func:`execute` returns :data:`ROOM` with what it
needs and the facade grows the arrays.

Paths
-----
:func:`execute` takes one of three paths, each exact (the same trace as the op-by-op model):

* **serial**: one thread of computations while no thread runs and its CPU has no background
  load: a straight sum;
* **phased**: every thread on its own CPU, all passing the same barriers, no lock wanted by two
  threads between two barriers, nothing else running, full speed: barrier by barrier in closed
  form (:func:`_phased`; tried again after refusals with a back-off, :func:`phased_backoff`);
* **events**: the discrete-event engine.  A heap of events keyed ``(time, frame, rank,
  sequence)``; a thread runs its operations until it must wait or time must pass.  A thread
  that starts computing on a CPU nobody else wants runs its next computations too, in one
  event (a *run*), deferring the lock releases inside it that nobody waits for; a thread that
  asks for that CPU meanwhile splits the run at that instant (:func:`_split_run`), a thread
  that waits for such a lock truncates it at the release (:func:`_truncate_run`).  Ties at one
  instant follow the largest key processed so far (the *position*), so runs decide ties
  exactly as op by op (``runs=False``).  With SMT or background load, computations run at a
  speed, op by op: the speed of a computation changes the instant a sibling starts or stops
  computing, keeping the work done.

Times are microseconds.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.core.compiled import borrowing, compiled, inlinable, inlined, inlined_allocating
from simsrv.core.uninitialised import empty
from simsrv.machine.cold_start import cold_us
from simsrv.machine.plan_arrays import (
    ACQUIRE,
    BARRIER,
    COMPUTE,
    JOIN,
    RELEASE,
    RUN_FIRST,
    SPAWN,
    SPIN,
)

SERIAL, PHASED, EVENTS = 0, 1, 2
"""Paths taken (the status of :func:`execute` when >= 0)."""
ROOM = -1
"""A store lacks room: nothing was done; :func:`needs` says what to grow."""
IRQ_SHORT = -12
"""The interrupt CPU's packets are not known far enough ahead: for :func:`execute`, nothing
was done; :func:`run_until` stopped before the first event it cannot process yet.  Call
:func:`add_interrupts` with the next packets, then again."""
(
    E_COORDINATOR,
    E_CPU,
    E_NOT_WAIT,
    E_DEADLOCK,
    E_HOLDING,
    E_NOT_HELD,
    E_PARTIES,
    E_SPAWN,
    E_HEAP,
    E_IRQ_HORIZON,
) = range(-2, -12, -1)
"""Plan errors (a bug in a strategy): the facade raises
:class:`~simsrv.machine.plan.PlanError` with ``ri[R_ERR_SLOT]``, ``ri[R_ERR_ARG]``."""

NONE = -1
"""No thread (a free CPU or lock, the end of a queue)."""
DONE = -2
"""A lock's holder whose thread has ended with the release deferred in its last run."""

# -- int registers (ri) ----------------------------------------------------------------------
(
    R_SEQ, R_HEAP, R_SLOTS, R_OPS, R_BARS, R_LIVE, R_POS_FRAME, R_POS_RANK, R_SKIP,
    R_REFUSALS, R_CPUS, R_PER_CORE, R_RUNS, R_SMT, R_SPEEDS, R_BACKGROUND, R_LOCK_WAIT,
    R_JOIN_WAIT, R_RUNQ_WAIT, R_ERROR, R_ERR_SLOT, R_ERR_ARG, R_NEED_SLOTS, R_NEED_OPS,
    R_NEED_BARS, R_NEED_HEAP, R_NEED_ROWS, R_LOADS, R_SIGNALS, R_SEND_ACT, R_WAKEUP_ACT,
    R_IRQ_CPU, R_IRQ_PERIODS, R_IRQ_NEXT, R_IRQ_BACKLOG, R_IRQ_THROTTLE, R_SPIN_ACT, R_SECTIONS,
    R_QUOTA, R_Q_THROTTLED, R_Q_RATE, R_COLD, R_COLD_ACT, R_REFILL_ACT, R_BARGING,
) = range(45)  # fmt: skip
INT_REGISTERS = 45
# -- float registers (rf) --------------------------------------------------------------------
(
    F_NOW, F_POS, F_THROUGHPUT, F_SEND, F_WAKEUP, F_IRQ_COST, F_IRQ_LAST, F_IRQ_HORIZON,
    F_Q_QUOTA, F_Q_PERIOD, F_Q_USED, F_Q_LAST, F_COLD_WAKE, F_COLD_REFILL, F_COLD_DECAY,
) = range(15)  # fmt: skip
FLOAT_REGISTERS = 15
# -- thread slots: ints (ti) and floats (tf) -------------------------------------------------
(
    T_PC, T_END, T_FRAME, T_RANK, T_CPU, T_FIN, T_TOKEN, T_RUN_END, T_RUN_ID, T_HELD, T_NEXT,
    T_JHEAD, T_JTAIL, T_CODE, T_SPAWNED, T_LIVE, T_FIRST, T_TARGET, T_LOAD, T_SIGNAL_ACT,
    T_SPIN, T_COLD, T_RETRY,
) = range(23)  # fmt: skip
THREAD_INTS = 23
TF_BEGAN, TF_RUN_START, TF_REMAINING, TF_SPEED, TF_LAST, TF_SIGNAL, TF_REFILL = range(7)
THREAD_FLOATS = 7
# -- heap entries (hi; ht holds the times) ---------------------------------------------------
H_FRAME, H_RANK, H_SEQ, H_KIND, H_SLOT, H_TOKEN = range(6)
# -- barriers (bi), CPUs (ci), locks (li, lf) ------------------------------------------------
B_PARTIES, B_COUNT, B_HEAD, B_TAIL, B_LOAD = range(5)
C_HOLDER, C_HEAD, C_TAIL = range(3)
L_HOLDER, L_HAS_REL, L_REL_RUN, L_HEAD, L_TAIL, L_FRAME, L_RANK, L_CODE = range(8)
LOCK_INTS = 8
LF_SINCE, LF_REL_AT = range(2)
# event kinds (numpy integers: a plain int passed to a compiled helper would be typed as a
# literal, and the helper compiled once per value)
RESUME, FINISH, RUN_END, WAKE, TIMER = (np.int64(kind) for kind in range(5))
STARTS, STOPS = np.int64(1), np.int64(-1)
"""A logical CPU starts or stops computing (:func:`_smt_change`)."""
NO_SLOT = np.int64(NONE)
UNTIL = np.bool_(False)
"""Arguments of :func:`_run`: no slot, and not ``forever`` (numpy scalars: a plain ``-1`` or
``False`` passed to a compiled function is typed as a literal, and the function compiled once
per value)."""
BEFORE_THREADS = np.int64(-1)
"""The rank a frame's start takes in the position: before its threads'."""

MAX_REFUSALS = 7
"""Refusals in a row counted at most: a back-off of ``2**6 - 1 = 63`` frames."""


class MachineState(NamedTuple):
    """The machine as arrays (see the module docstring).

    ``ri``/``rf``: int and float registers (``R_*``, ``F_*``); ``ht``/``hi``: the event heap
    (time; ``H_*``); ``ti``/``tf``: thread slots (``T_*``, ``TF_*``); ``ok``, ``oc``, ``oa``,
    ``ov``: the operation store (kind, cost us, argument as a slot, barrier or lock code,
    activity code); ``bi``: barriers (``B_*``); ``ci``: CPUs (``C_*``); ``core_busy``:
    computing siblings per core; ``share``: the server's share of each CPU (1 - background);
    ``idle_since``: when each CPU's last computation or spin ended, us (-1: busy; the cold
    start, :mod:`simsrv.machine.cold_start`); ``li``/``lf``: locks by lock code (``L_*``,
    ``LF_*``); ``irq``: the interrupt CPU's
    busy periods ``[start, end)`` us, in time order (``R_IRQ_PERIODS`` of them;
    :func:`add_interrupts`); ``trace_*``, ``holds_*``: the column stores and their row
    counters."""

    ri: np.ndarray
    rf: np.ndarray
    ht: np.ndarray
    hi: np.ndarray
    ti: np.ndarray
    tf: np.ndarray
    ok: np.ndarray
    oc: np.ndarray
    oa: np.ndarray
    ov: np.ndarray
    bi: np.ndarray
    ci: np.ndarray
    core_busy: np.ndarray
    share: np.ndarray
    idle_since: np.ndarray
    li: np.ndarray
    lf: np.ndarray
    irq: np.ndarray
    trace_ints: np.ndarray
    trace_times: np.ndarray
    trace_size: np.ndarray
    holds_ints: np.ndarray
    holds_times: np.ndarray
    holds_size: np.ndarray


def new_arrays(
    cpus: int,
    smt_per_core: int,
    smt_throughput: float,
    background,
    runs: bool,
    signal_send_us: float = 0.0,
    signal_wakeup_us: float = 0.0,
    irq_cpu: int = -1,
    softirq_us: float = 0.0,
    max_backlog: int = 300,
    quota_us: float = 0.0,
    period_us: float = 0.0,
    cold_wake_us: float = 0.0,
    cold_refill_us: float = 0.0,
    cold_decay_us: float = 1.0,
    lock_barging: bool = False,
):
    """The engine's own arrays and registers for a fresh machine (a dict of
    :class:`MachineState` fields without the column stores); the activity codes of the wait
    and signal rows are the facade's to set.  ``irq_cpu`` (-1: none) takes the network card's
    interrupts, each received packet's softirq costing it ``softirq_us``, at most
    ``max_backlog`` packets waiting for theirs (:func:`add_interrupts`).  ``quota_us`` > 0:
    the server's threads may run ``quota_us`` of CPU time per ``period_us`` (CFS bandwidth
    control, :func:`_quota_event`).  ``cold_wake_us`` or ``cold_refill_us`` > 0: a computation
    that starts on a CPU idle for ``g`` > 0 us first computes ``cold_wake_us + cold_refill_us *
    (1 - exp(-g / cold_decay_us))`` (:func:`_cold_start`).  ``lock_barging``: a release does
    not hand a lock to its first waiter; it frees the lock and wakes the waiter, which tries
    again once woken (:func:`_release`)."""
    share = np.ones(cpus)
    share[: len(background)] = [1.0 - b for b in background[:cpus]]
    smt = smt_per_core > 1 and smt_throughput < 1.0
    ri = np.zeros(INT_REGISTERS, np.int64)
    ri[R_POS_FRAME] = ri[R_POS_RANK] = -1
    ri[R_CPUS], ri[R_PER_CORE], ri[R_RUNS] = cpus, smt_per_core, runs
    ri[R_SMT], ri[R_BACKGROUND] = smt, bool((share < 1.0).any())
    interrupts = irq_cpu >= 0 and softirq_us > 0.0
    ri[R_IRQ_CPU] = irq_cpu if interrupts else NONE
    ri[R_IRQ_BACKLOG] = max_backlog
    ri[R_QUOTA] = quota_us > 0.0
    ri[R_SPEEDS] = smt or ri[R_BACKGROUND] or interrupts or ri[R_QUOTA]
    ri[R_COLD] = cold_wake_us > 0.0 or cold_refill_us > 0.0
    ri[R_COLD_ACT] = ri[R_REFILL_ACT] = -1
    ri[R_LOCK_WAIT] = ri[R_JOIN_WAIT] = ri[R_RUNQ_WAIT] = ri[R_SPIN_ACT] = -1
    rf = np.zeros(FLOAT_REGISTERS)
    rf[F_POS], rf[F_THROUGHPUT] = -1.0, smt_throughput
    rf[F_SEND], rf[F_WAKEUP] = signal_send_us, signal_wakeup_us
    ri[R_SIGNALS] = signal_send_us > 0.0 or signal_wakeup_us > 0.0
    ri[R_BARGING] = lock_barging
    rf[F_IRQ_COST], rf[F_IRQ_LAST], rf[F_IRQ_HORIZON] = softirq_us, -np.inf, 0.0
    rf[F_Q_QUOTA], rf[F_Q_PERIOD] = quota_us, period_us
    rf[F_COLD_WAKE], rf[F_COLD_REFILL], rf[F_COLD_DECAY] = (
        cold_wake_us,
        cold_refill_us,
        cold_decay_us,
    )
    ci = np.full((cpus, 3), NONE, np.int64)
    return {
        "ri": ri,
        "rf": rf,
        "ht": empty(256),
        "hi": empty((256, 6), np.int64),
        "ti": empty((16, THREAD_INTS), np.int64),
        "tf": empty((16, THREAD_FLOATS)),
        "ok": empty(256, np.int8),
        "oc": empty(256),
        "oa": empty(256, np.int64),
        "ov": empty(256, np.int64),
        "bi": empty((8, 5), np.int64),
        "ci": ci,
        "core_busy": np.zeros(-(-cpus // smt_per_core), np.int64),
        "share": share,
        "idle_since": np.zeros(cpus),
        "li": empty((0, LOCK_INTS), np.int64),
        "lf": empty((0, 2)),
        "irq": empty((64 if interrupts else 0, 2)),
    }


# -- the entry points --------------------------------------------------------------------------


@compiled
def execute(
    m, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned, is_wait,
    thread_codes, activity_codes, lock_codes, frame, start_us, out,
):  # fmt: skip
    """Execute one frame's plan arrays (:mod:`simsrv.machine.plan_arrays`; ``spawned`` per
    thread, all False when none is) as frame ``frame`` from ``start_us``.  ``is_wait`` per
    plan activity; ``thread_codes``, ``activity_codes`` and ``lock_codes`` map the plan's
    numbering to the stores' codes.  ``out`` receives ``[end_us, charged_us]``: when the
    coordinator ends and the CPU time the plan charged.  Returns the path taken, :data:`ROOM`
    (nothing done: a store lacks room, or ``m`` predates the lock store the codes need) or a
    plan error (< -1)."""
    ri, rf = m.ri, m.rf
    threads, n, bars = len(thread_cpu), len(kind), len(barrier_parties)
    if threads == 0 or spawned[0]:
        return E_COORDINATOR
    cpus = ri[R_CPUS]
    for t in range(threads):
        cpu = thread_cpu[t]
        if not (0 <= cpu < cpus) and not (spawned[t] and cpu == -1):
            ri[R_ERR_SLOT] = t
            return E_CPU
    charged = 0.0
    serial = threads == 1
    plain = True  # only computations, barriers and locks: the phased path may take it
    for i in range(n):
        k = kind[i]
        if k in (COMPUTE, SPIN) and cost[i] > 0:
            charged += cost[i]
        if k != COMPUTE:
            serial = False
            if k == SPIN:
                ri[R_SECTIONS] = 1  # (from now on a row more per operation is reserved)
            if k == BARRIER and not is_wait[activity[i]]:
                ri[R_ERR_SLOT], ri[R_ERR_ARG] = thread[i], activity[i]
                return E_NOT_WAIT
            if k > RELEASE:
                plain = False
    out[1] = charged
    for i in range(len(lock_codes)):  # a record taken before the facade grew its locks
        if lock_codes[i] >= len(m.li):
            return ROOM
    serial = serial and ri[R_LIVE] == 0 and m.share[thread_cpu[0]] == 1.0
    serial = serial and not _irq_core(m, thread_cpu[0]) and not ri[R_QUOTA] and not ri[R_COLD]
    periods = 0  # (rows a busy period of the interrupt CPU, or a throttle, may split)
    if ri[R_IRQ_CPU] >= 0 and not serial:
        periods = _irq_reach(m, start_us, charged, n, threads)
        if periods < 0:
            return IRQ_SHORT
    if ri[R_QUOTA]:
        periods += quota_splits(m, charged, n, threads)
    if not _room(m, threads, n, bars, periods):
        return ROOM
    if serial:
        now, code, cpu = start_us, thread_codes[0], thread_cpu[0]
        for i in range(n):
            if cost[i] > 0:
                end = now + cost[i]
                _row(m, frame, cpu, code, activity_codes[activity[i]], now, end)
                now = end
        out[0] = now
        return SERIAL
    shortcut = not (ri[R_SPEEDS] or ri[R_SIGNALS] or ri[R_COLD])
    if ri[R_RUNS] and ri[R_LIVE] == 0 and ri[R_HEAP] == 0 and shortcut:
        tried = ri[R_SKIP] == 0
        begin = max(start_us, rf[F_NOW])
        done = (
            tried
            and plain
            and _phased(
                m, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, is_wait,
                thread_codes, activity_codes, lock_codes, len(lock_codes), frame, begin, out,
            )
        )  # fmt: skip
        ri[R_SKIP], ri[R_REFUSALS] = phased_backoff(
            PHASED if done else EVENTS, tried, ri[R_SKIP], ri[R_REFUSALS]
        )
        if done:
            rf[F_NOW] = out[0]
            _advance_position(m, out[0], frame, threads)
            return PHASED
    # the event engine: the plan into the store, then events until the coordinator ends
    base = _load(
        m, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned,
        thread_codes, activity_codes, lock_codes, frame, start_us,
    )  # fmt: skip
    _run_events(m, start_us, False)
    _advance_position(m, start_us, frame, BEFORE_THREADS)
    for t in range(threads):
        if ri[R_ERROR]:
            break
        if not spawned[t]:
            m.ti[base + t, T_LIVE] = 1
            ri[R_LIVE] += 1
            _run(m, base + t, -np.inf, UNTIL, NO_SLOT)  # its operations until it must wait
    if not ri[R_ERROR]:
        _run(m, NO_SLOT, np.inf, UNTIL, base)  # events until the coordinator ends
    if not ri[R_ERROR] and not m.ti[base, T_FIN]:
        return E_DEADLOCK
    if not ri[R_ERROR]:
        _run_events(m, rf[F_NOW], False)
    if ri[R_ERROR] == IRQ_SHORT:  # the reach computed above was wrong: a bug
        ri[R_ERROR] = E_IRQ_HORIZON
    if ri[R_ERROR]:
        return ri[R_ERROR]
    out[0] = rf[F_NOW]
    return EVENTS


@compiled
def run_until(m, time_us, forever, close):
    """Process every event up to ``time_us`` included (every event when ``forever``); the clock
    then reads ``time_us`` unless it is later (not when ``forever``).  With ``close`` (the
    machine's finish: ``forever`` too), then close the critical sections whose release was
    deferred inside a run.  Returns 0 or a plan error."""
    _run_events(m, time_us, forever)
    if m.ri[R_ERROR]:
        return m.ri[R_ERROR]
    if not close:
        return 0
    li = m.li
    for lock in range(len(li)):
        if li[lock, L_HOLDER] != NONE and li[lock, L_HAS_REL]:
            _log_hold(m, lock, m.lf[lock, LF_REL_AT])
            li[lock, L_HOLDER] = NONE
            li[lock, L_HAS_REL] = 0
    return 0


@compiled
def settled(m, next_start_us):
    """``(trace_us, holds_us, open_frame)`` (:class:`~simsrv.machine.trace.Settled`; -1: no
    open frame): a live thread's next row starts at its current computation's or wait's start
    (a run's start); a critical section is logged later at its lock's ``since``."""
    ti, tf = m.ti, m.tf
    trace_us, open_frame = next_start_us, -1
    for s in range(m.ri[R_SLOTS]):
        if ti[s, T_LIVE]:
            since = tf[s, TF_RUN_START] if ti[s, T_RUN_END] >= 0 else tf[s, TF_BEGAN]
            trace_us = min(trace_us, since)
            if open_frame < 0 or ti[s, T_FRAME] < open_frame:
                open_frame = ti[s, T_FRAME]
    holds_us = trace_us
    for lock in range(len(m.li)):
        if m.li[lock, L_HOLDER] != NONE:
            holds_us = min(holds_us, m.lf[lock, LF_SINCE])
    return trace_us, holds_us, open_frame


@inlinable
def phased_backoff(status, tried, skip, refusals):
    """The phased path's back-off after a frame: ``(skip, refusals)`` from the frame's path
    ``status`` (:data:`PHASED` or :data:`EVENTS`), whether it ``tried`` the path, and the
    frames left that ``skip`` it and the ``refusals`` in a row before.  After ``n`` refusals
    in a row the next ``2**(n-1) - 1`` frames skip the attempt, so strategies whose frames
    never qualify pay ~1/64 of a scan; a success resets the count."""
    if status == PHASED:
        return skip, 0
    if tried:
        refusals = min(refusals + 1, MAX_REFUSALS)
        return 2 ** (refusals - 1) - 1, refusals
    return skip - 1, refusals


# -- room ------------------------------------------------------------------------------------


@inlined_allocating
def _room(m, threads, n, bars, periods):
    """True when every store has room for the frame, which may see ``periods`` busy periods
    of the interrupt CPU; else the needs in ``R_NEED_*``.  The thread store restarts when no
    thread is alive, else drops frames without one."""
    ri = m.ri
    if ri[R_SLOTS] and ri[R_LIVE] == 0:
        _restart(m)
    elif ri[R_SLOTS] and (
        ri[R_SLOTS] + threads > len(m.ti)
        or ri[R_OPS] + n > len(m.ok)
        or ri[R_BARS] + bars > len(m.bi)
    ):
        _compact(m)
    # (an interrupt splits the row of the computation or spin it stops, and reschedules the
    # computations of its core)
    rows = rows_per_op(ri) * (ri[R_OPS] + n) + len(m.li) + 1 + periods
    heap = ri[R_HEAP] + 8 * (ri[R_OPS] + n) + 8 * (ri[R_SLOTS] + threads) + 64
    heap += 2 * ri[R_PER_CORE] * periods
    ri[R_NEED_SLOTS], ri[R_NEED_OPS] = ri[R_SLOTS] + threads, ri[R_OPS] + n
    ri[R_NEED_BARS], ri[R_NEED_HEAP], ri[R_NEED_ROWS] = ri[R_BARS] + bars, heap, rows
    return not (
        ri[R_NEED_SLOTS] > len(m.ti)
        or ri[R_NEED_OPS] > len(m.ok)
        or ri[R_NEED_BARS] > len(m.bi)
        or heap > len(m.ht)
        or m.trace_size[0] + rows > len(m.trace_times)
        or m.holds_size[0] + rows > len(m.holds_times)
    )


@inlinable
def rows_per_op(ri):
    """The trace rows (and lock holds) one operation may record at most, from the registers
    ``ri``: one, plus one with a signalling thread library (a wait, then its wake-up), plus
    one once a spin section has run (its spin, then its computation), plus one under the cold
    start rule (the cold start before it)."""
    return 1 + ri[R_SIGNALS] + ri[R_SECTIONS] + ri[R_COLD]


@inlined
def _restart(m):
    """No thread is alive: the store starts again from slot 0 (the events still queued are
    stale, a lock whose holder ended with its release deferred keeps it as ended)."""
    ri, hi, li = m.ri, m.hi, m.li
    for i in range(ri[R_HEAP]):
        hi[i, H_SLOT] = NONE
    for lock in range(len(li)):
        if li[lock, L_HOLDER] >= 0:
            li[lock, L_HOLDER] = DONE
    ri[R_SLOTS] = ri[R_OPS] = ri[R_BARS] = 0


@inlined_allocating
def _compact(m):
    """Keep only the frames that have a live thread (their slots, operations and barriers move
    to the front); events and locks of the dropped threads stay, marked ended."""
    ri, ti, hi, li = m.ri, m.ti, m.hi, m.li
    slots, bars = ri[R_SLOTS], ri[R_BARS]
    keep_slot = np.full(slots, NONE, np.int64)  # old slot -> new slot
    keep_bar = np.full(max(bars, 1), NONE, np.int64)
    kept = empty(slots, np.int64)  # the loads (frames executed) kept, ascending
    n_kept = 0
    new_slot = new_op = 0
    s = 0
    while s < slots:  # a load's slots are consecutive, loads ascend
        load = ti[s, T_LOAD]
        e = s
        live = False
        while e < slots and ti[e, T_LOAD] == load:
            live = live or ti[e, T_LIVE] == 1
            e += 1
        if live:
            kept[n_kept] = load
            n_kept += 1
            for x in range(s, e):
                keep_slot[x] = new_slot
                new_slot += 1
        s = e
    new_bar = p = 0
    for b in range(bars):  # barriers are in load order too
        load = m.bi[b, B_LOAD]
        while p < n_kept and kept[p] < load:
            p += 1
        if p < n_kept and kept[p] == load:
            keep_bar[b] = new_bar
            new_bar += 1
    # move the kept slots and their operations (targets never overtake sources)
    for s in range(slots):
        d = keep_slot[s]
        if d < 0:
            continue
        first, end = ti[s, T_FIRST], ti[s, T_END]
        shift = first - new_op
        for i in range(first, end):
            j = i - shift
            k = m.ok[i]
            a = m.oa[i]
            if k == BARRIER:
                a = keep_bar[a]
            elif SPAWN <= k <= RUN_FIRST:
                a = keep_slot[a]
            m.ok[j], m.oc[j], m.oa[j], m.ov[j] = k, m.oc[i], a, m.ov[i]
        for c in range(THREAD_INTS):
            ti[d, c] = ti[s, c]
        for c in range(THREAD_FLOATS):
            m.tf[d, c] = m.tf[s, c]
        ti[d, T_FIRST] = first - shift
        ti[d, T_END] = end - shift
        ti[d, T_PC] -= shift
        if ti[d, T_RUN_END] >= 0:
            ti[d, T_RUN_END] -= shift
        new_op += end - first
    for d in range(new_slot):
        for c in (T_NEXT, T_JHEAD, T_JTAIL, T_TARGET):
            if ti[d, c] >= 0:
                ti[d, c] = keep_slot[ti[d, c]]
    for b in range(bars):
        d = keep_bar[b]
        if d >= 0:
            for c in range(5):
                m.bi[d, c] = m.bi[b, c]
            for c in (B_HEAD, B_TAIL):
                if m.bi[d, c] >= 0:
                    m.bi[d, c] = keep_slot[m.bi[d, c]]
    for i in range(ri[R_HEAP]):  # events of dropped threads are stale: slot NONE
        if hi[i, H_SLOT] >= 0:
            hi[i, H_SLOT] = keep_slot[hi[i, H_SLOT]]
    for cpu in range(len(m.ci)):
        for c in range(3):
            if m.ci[cpu, c] >= 0:
                m.ci[cpu, c] = keep_slot[m.ci[cpu, c]]
    for lock in range(len(li)):
        for c in (L_HOLDER, L_HEAD, L_TAIL):
            if li[lock, c] >= 0:
                x = keep_slot[li[lock, c]]
                li[lock, c] = DONE if x < 0 and c == L_HOLDER else x
    ri[R_SLOTS], ri[R_OPS], ri[R_BARS] = new_slot, new_op, new_bar


@inlined
def _load(
    m, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned, thread_codes,
    activity_codes, lock_codes, frame, start_us,
):  # fmt: skip
    """Copy the plan into the store (room checked); returns the coordinator's slot."""
    ri, ti, tf = m.ri, m.ti, m.tf
    base, op, bar = ri[R_SLOTS], ri[R_OPS], ri[R_BARS]
    threads = len(thread_cpu)
    for b in range(len(barrier_parties)):
        m.bi[bar + b, B_PARTIES] = barrier_parties[b]
        m.bi[bar + b, B_COUNT] = 0
        m.bi[bar + b, B_HEAD] = m.bi[bar + b, B_TAIL] = NONE
        m.bi[bar + b, B_LOAD] = ri[R_LOADS]
    for t in range(threads):
        s = base + t
        for c in range(THREAD_INTS):
            ti[s, c] = 0
        ti[s, T_FRAME], ti[s, T_RANK], ti[s, T_CPU] = frame, t, thread_cpu[t]
        ti[s, T_RUN_END] = ti[s, T_NEXT] = ti[s, T_JHEAD] = ti[s, T_JTAIL] = NONE
        ti[s, T_TARGET] = NONE
        ti[s, T_CODE], ti[s, T_SPAWNED] = thread_codes[t], spawned[t]
        ti[s, T_LOAD] = ri[R_LOADS]
        tf[s, TF_BEGAN] = start_us  # until it first computes or waits
        tf[s, TF_RUN_START] = tf[s, TF_REMAINING] = tf[s, TF_LAST] = tf[s, TF_SIGNAL] = 0.0
        tf[s, TF_SPEED] = 1.0
    i = 0
    n = len(kind)
    for t in range(threads):
        s = base + t
        ti[s, T_FIRST] = ti[s, T_PC] = op + i
        while i < n and thread[i] == t:
            k = kind[i]
            j = op + i
            m.ok[j], m.oc[j] = k, cost[i]
            if k in (COMPUTE, BARRIER):
                m.ov[j] = activity_codes[activity[i]]
                m.oa[j] = bar + arg[i] if k == BARRIER else NONE
            elif k == SPIN:
                m.ov[j], m.oa[j] = activity_codes[activity[i]], lock_codes[arg[i]]
            elif k in (ACQUIRE, RELEASE):
                m.ov[j], m.oa[j] = NONE, lock_codes[arg[i]]
            else:
                m.ov[j], m.oa[j] = NONE, base + arg[i]
            i += 1
        ti[s, T_END] = op + i
    ri[R_SLOTS], ri[R_OPS], ri[R_BARS] = base + threads, op + n, bar + len(barrier_parties)
    ri[R_LOADS] += 1
    return base


# -- the event heap ----------------------------------------------------------------------------


@inlined
def _before(t1, f1, r1, t2, f2, r2):
    """``(t1, f1, r1) < (t2, f2, r2)``."""
    return t1 < t2 or (t1 == t2 and (f1 < f2 or (f1 == f2 and r1 < r2)))


@inlined
def _less(ht, hi, i, t, f, r, s):
    """Heap entry ``i``'s key before ``(t, f, r, s)``."""
    a = ht[i]
    if a != t:
        return a < t
    if hi[i, H_FRAME] != f:
        return hi[i, H_FRAME] < f
    if hi[i, H_RANK] != r:
        return hi[i, H_RANK] < r
    return hi[i, H_SEQ] < s


@inlined
def _push(m, time, s, event):
    """Schedule ``event`` for slot ``s`` at ``time`` (its token: the slot's now)."""
    _push_event(m.ri, m.ht, m.hi, m.ti, time, s, event)


@borrowing
def _push_event(ri, ht, hi, ti, time, s, event):
    """:func:`_push` on the arrays it needs (a call with the whole state would pass all of
    its arrays, field by field)."""
    size = ri[R_HEAP]
    if size >= len(ht):
        ri[R_ERROR] = E_HEAP
        return
    ri[R_SEQ] += 1
    seq, f, r = ri[R_SEQ], ti[s, T_FRAME], ti[s, T_RANK]
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if _less(ht, hi, parent, time, f, r, seq):
            break
        ht[i] = ht[parent]
        for c in range(6):
            hi[i, c] = hi[parent, c]
        i = parent
    ht[i] = time
    hi[i, H_FRAME], hi[i, H_RANK], hi[i, H_SEQ] = f, r, seq
    hi[i, H_KIND], hi[i, H_SLOT], hi[i, H_TOKEN] = event, s, ti[s, T_TOKEN]
    ri[R_HEAP] = size + 1


@inlined
def _pop_top(m):
    """Remove the first event (the caller has read it)."""
    _pop_event(m.ri, m.ht, m.hi)


@borrowing
def _pop_event(ri, ht, hi):
    """:func:`_pop_top` on the arrays it needs."""
    size = ri[R_HEAP] - 1
    ri[R_HEAP] = size
    if size == 0:
        return
    t, f, r, s = ht[size], hi[size, H_FRAME], hi[size, H_RANK], hi[size, H_SEQ]
    k, slot, token = hi[size, H_KIND], hi[size, H_SLOT], hi[size, H_TOKEN]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _less(
            ht, hi, right, ht[child], hi[child, H_FRAME], hi[child, H_RANK], hi[child, H_SEQ]
        ):
            child = right
        if not _less(ht, hi, child, t, f, r, s):
            break
        ht[i] = ht[child]
        for c in range(6):
            hi[i, c] = hi[child, c]
        i = child
    ht[i] = t
    hi[i, H_FRAME], hi[i, H_RANK], hi[i, H_SEQ] = f, r, s
    hi[i, H_KIND], hi[i, H_SLOT], hi[i, H_TOKEN] = k, slot, token


@inlined
def _run_events(m, time_us, forever):
    """:func:`run_until`'s events (inlined into the engine's callers)."""
    _run(m, NO_SLOT, time_us, np.bool_(forever), NO_SLOT)
    if not forever and time_us > m.rf[F_NOW] and not m.ri[R_ERROR]:
        m.rf[F_NOW] = time_us


@borrowing
def _run(m, s, time_us, forever, coordinator):
    """The event loop: advance slot ``s`` (none when -1), then act on the first event while
    one is due, up to ``time_us`` included (every event when ``forever``), until slot
    ``coordinator`` has ended (none when -1) or a plan error.  One compiled function holds the
    loop, :func:`_step` and :func:`_advance` (each inlined once): the state's arrays are
    passed once per call, not once per event."""
    ri, ti = m.ri, m.ti
    while True:
        if s >= 0:
            _advance(m, s)
            s = NONE
        if ri[R_ERROR]:
            return
        if coordinator >= 0 and ti[coordinator, T_FIN]:
            return
        if ri[R_IRQ_CPU] >= 0 and _irq_due(m, time_us, forever):
            continue  # an interrupt boundary came first (or the schedule ended: an error)
        if ri[R_QUOTA] and _quota_due(m, time_us, forever):
            continue  # the quota ran out or its period ended first
        if ri[R_HEAP] == 0:
            return
        if not forever and m.ht[0] > time_us:
            return
        s = _step(m)


@inlined
def _irq_due(m, time_us, forever):
    """Process the interrupt CPU's next boundary if it comes before the next event (at one
    instant, first) and by ``time_us`` (or at all when ``forever``: with no event left, only
    while a thread stands still in a softirq); True when one was processed or the schedule is
    not known that far (``R_ERROR`` = :data:`IRQ_SHORT`).  The boundaries up to the clock are
    always processed (:func:`_irq_stalls` reads the last one's parity)."""
    ri, rf = m.ri, m.rf
    if ri[R_HEAP]:
        due = m.ht[0]
        cap = due if forever or due <= time_us else time_us
    elif m.ci[ri[R_IRQ_CPU], C_HOLDER] >= 0:  # no event: a thread stands still in a softirq
        cap = np.inf if forever else time_us
    else:  # nothing depends on the boundaries but the clock, set to ``time_us`` if finite
        cap = -np.inf if forever or time_us == np.inf else time_us
    b, horizon = _irq_next(m), rf[F_IRQ_HORIZON]
    if b <= cap and b < horizon:
        _irq_boundary(m, b)
        return True
    if cap >= horizon and horizon < np.inf:
        ri[R_ERROR] = IRQ_SHORT
        return True
    return False


@inlined
def _advance_position(m, time, frame, rank):
    """The position becomes ``(time, frame, rank)`` if that is later."""
    ri, rf = m.ri, m.rf
    if not _before(time, frame, rank, rf[F_POS], ri[R_POS_FRAME], ri[R_POS_RANK]) and not (
        time == rf[F_POS] and frame == ri[R_POS_FRAME] and rank == ri[R_POS_RANK]
    ):
        rf[F_POS], ri[R_POS_FRAME], ri[R_POS_RANK] = time, frame, rank


@inlined
def _step(m):
    """Take the first event and act on it (a stale one only moves the position); the slot
    that goes on with its operations next (:func:`_advance`), or :data:`NONE`."""
    ht, hi, ti = m.ht, m.hi, m.ti
    time, f, r = ht[0], hi[0, H_FRAME], hi[0, H_RANK]
    kind, s, token = hi[0, H_KIND], hi[0, H_SLOT], hi[0, H_TOKEN]
    _pop_top(m)
    _advance_position(m, time, f, r)
    if kind != RESUME and kind != WAKE and (s < 0 or token != ti[s, T_TOKEN]):
        return NONE  # superseded (a speed change, a split run, a parent already woken)
    m.rf[F_NOW] = time
    if kind == FINISH:
        if not _end_compute(m, s):
            return NONE  # (a cold start's end: the slot computes on)
    elif kind == RUN_END:
        _end_run(m, s)
    elif kind == WAKE:
        pc = ti[s, T_PC]
        k = m.ok[pc]
        if k == SPIN:  # a spinner has the lock handed over: it computes on at once
            cpu = ti[s, T_CPU]
            runs = not _irq_stalls(m, cpu) and not m.ri[R_Q_THROTTLED]
            if time > m.tf[s, TF_BEGAN] and runs:
                _row(m, ti[s, T_FRAME], cpu, ti[s, T_CODE], m.ri[R_SPIN_ACT], m.tf[s, TF_BEGAN],
                     time)  # fmt: skip
            ti[s, T_SPIN] = 0
            if m.ri[R_QUOTA] and runs:
                _quota_run(m, -1)
            _begin_compute(m, s)
            return NONE
        if k == ACQUIRE and ti[s, T_RETRY]:  # woken by a barging release: it tries again
            return _retry_acquire(m, s, pc, time)
        if k == ACQUIRE:
            act = m.ri[R_LOCK_WAIT]
        elif k == JOIN:
            act = m.ri[R_JOIN_WAIT]
        elif k == RUN_FIRST:
            act = m.ri[R_RUNQ_WAIT]
        else:
            act = m.ov[pc]
        if time > m.tf[s, TF_BEGAN]:
            _row(m, ti[s, T_FRAME], ti[s, T_CPU], ti[s, T_CODE], act, m.tf[s, TF_BEGAN], time)
        if m.tf[s, TF_SIGNAL] > 0.0:  # woken by a signal: the wait's op becomes its cost
            _become_compute(m, pc, m.tf[s, TF_SIGNAL], ti[s, T_SIGNAL_ACT])
            m.tf[s, TF_SIGNAL] = 0.0
        else:
            ti[s, T_PC] = pc + 1
    elif kind == TIMER and not _maybe_migrate(m, s):
        return NONE
    return s


# -- a thread's operations ---------------------------------------------------------------------


@inlined
def _advance(m, s):
    """Run slot ``s``'s operations from its program counter until it must wait or ends."""
    ri, ti, ok, oc, oa = m.ri, m.ti, m.ok, m.oc, m.oa
    now = m.rf[F_NOW]
    frame, rank, end = ti[s, T_FRAME], ti[s, T_RANK], ti[s, T_END]
    while ti[s, T_PC] < end:
        pc = ti[s, T_PC]
        k = ok[pc]
        if k == COMPUTE and oc[pc] <= 0:
            ti[s, T_PC] = pc + 1
            continue
        if ri[R_HEAP] and _before(m.ht[0], m.hi[0, H_FRAME], m.hi[0, H_RANK], now, frame, rank):
            _push(m, now, s, RESUME)  # an earlier thread acts first
            return
        if k in (COMPUTE, SPIN):
            _request_cpu(m, s)
            return
        if k == BARRIER:
            _arrive(m, s, oa[pc])
            return
        if k == ACQUIRE:
            if not _acquire(m, s, oa[pc]):
                return
        elif k == RELEASE:
            if _release(m, s, oa[pc]) and m.rf[F_SEND] > 0.0:
                # the thread library signals the waiter: the release op becomes the send
                _become_compute(m, pc, m.rf[F_SEND], ri[R_SEND_ACT])
                continue
        elif k == SPAWN:
            _spawn(m, s, oa[pc])
        else:  # JOIN or RUN_FIRST
            target = oa[pc]
            if not ti[target, T_FIN]:
                m.tf[s, TF_BEGAN] = now
                ti[s, T_TARGET] = target
                ti[s, T_NEXT] = NONE
                if ti[target, T_JTAIL] >= 0:
                    ti[ti[target, T_JTAIL], T_NEXT] = s
                else:
                    ti[target, T_JHEAD] = s
                ti[target, T_JTAIL] = s
                if k == RUN_FIRST:
                    _push(m, now + oc[pc], s, TIMER)
                return
        if ri[R_ERROR]:
            return
        ti[s, T_PC] = pc + 1
    _end_thread(m, s)


@inlined
def _end_thread(m, s):
    ri, ti = m.ri, m.ti
    if ti[s, T_HELD]:
        ri[R_ERROR], ri[R_ERR_SLOT] = E_HOLDING, s
        return
    ti[s, T_FIN], ti[s, T_LIVE] = 1, 0
    ri[R_LIVE] -= 1
    now = m.rf[F_NOW]
    j = ti[s, T_JHEAD]
    while j >= 0:
        following = ti[j, T_NEXT]
        ti[j, T_TOKEN] += 1  # a run-first parent's migration timer is void
        _push(m, now, j, WAKE)
        j = following
    ti[s, T_JHEAD] = ti[s, T_JTAIL] = NONE


@inlined
def _row(m, frame, cpu, code, activity, start, end):
    i = m.trace_size[0]
    m.trace_ints[i, 0], m.trace_ints[i, 1] = frame, cpu
    m.trace_ints[i, 2], m.trace_ints[i, 3] = code, activity
    m.trace_times[i, 0], m.trace_times[i, 1] = start, end
    m.trace_size[0] = i + 1


# -- CPUs ------------------------------------------------------------------------------------


@inlined
def _request_cpu(m, s):
    ci, ti = m.ci, m.ti
    cpu = ti[s, T_CPU]
    holder = ci[cpu, C_HOLDER]
    if holder < 0:
        _begin_compute(m, s)
        return
    if ti[holder, T_RUN_END] >= 0 and _split_run(m, holder):
        _begin_compute(m, s)  # the run was over at this instant: the CPU is free
        return
    ti[s, T_NEXT] = NONE
    if ci[cpu, C_TAIL] >= 0:
        ti[ci[cpu, C_TAIL], T_NEXT] = s
    else:
        ci[cpu, C_HEAD] = s
    ci[cpu, C_TAIL] = s


@borrowing
def _begin_compute(m, s):
    """Slot ``s`` takes its (free) CPU for the computation at its pc and the ones after (a
    spin section: for its spin while the lock is held, then its computation alone)."""
    ri, ti, ok, oc = m.ri, m.ti, m.ok, m.oc
    now, cpu = m.rf[F_NOW], ti[s, T_CPU]
    m.ci[cpu, C_HOLDER] = s
    if ri[R_COLD] and _cold_start(m, s, cpu, now):
        return
    pc = ti[s, T_PC]
    section = ok[pc] == SPIN
    if section and not _holds(m, s, m.oa[pc]) and not _acquire(m, s, m.oa[pc]):
        ti[s, T_SPIN] = 1  # it spins, holding the CPU, until the holder hands it over
        if ri[R_QUOTA] and not ri[R_Q_THROTTLED]:
            _quota_run(m, 1)
        return
    m.tf[s, TF_BEGAN] = now
    if ri[R_SPEEDS]:
        _begin_smt(m, s, oc[pc])
        return
    if section or not ri[R_RUNS] or m.ci[cpu, C_HEAD] >= 0:  # it gives the CPU up after one
        ti[s, T_TOKEN] += 1
        _push(m, now + oc[pc], s, FINISH)
        return
    end = now
    ti[s, T_RUN_ID] += 1
    last = ti[s, T_END]
    while pc < last:
        k = ok[pc]
        if k == COMPUTE:
            if oc[pc] > 0:
                end = end + oc[pc]
        elif k == RELEASE:
            if not _defer_release(m, s, m.oa[pc], end):
                break  # somebody waits for the lock (or an error): release it as an op
        else:
            break
        pc += 1
    m.tf[s, TF_RUN_START], ti[s, T_RUN_END] = now, pc
    _push(m, end, s, RUN_END)


@inlined
def _cold_start(m, s, cpu, now):
    """Slot ``s`` has taken ``cpu`` at ``now``: if the CPU was idle, its idle time ``g`` ends
    and, when ``g`` > 0, the slot first computes the cold start (True; its end begins the
    computation, :func:`_end_compute`; :mod:`simsrv.machine.cold_start`): the wake-up
    (``cold_start``) and then the refill (``cold_refill``), each when it is not 0."""
    since = m.idle_since[cpu]
    if since < 0.0:
        return False
    m.idle_since[cpu] = -1.0
    if now <= since:
        return False
    rf = m.rf
    wake = cold_us(rf[F_COLD_WAKE], 0.0, 1.0, now - since)
    refill = cold_us(0.0, rf[F_COLD_REFILL], rf[F_COLD_DECAY], now - since)
    if wake > 0.0:
        m.ti[s, T_COLD] = 1
        m.tf[s, TF_REFILL] = refill
        _cold_part(m, s, now, wake)
    else:
        m.ti[s, T_COLD] = 2
        _cold_part(m, s, now, refill)
    return True


@inlined
def _cold_part(m, s, now, cost):
    """Slot ``s`` computes ``cost`` us of its cold start from ``now`` (the part its
    ``T_COLD`` names)."""
    m.tf[s, TF_BEGAN] = now
    if m.ri[R_SPEEDS]:
        _begin_smt(m, s, cost)
    else:
        m.ti[s, T_TOKEN] += 1
        _push(m, now + cost, s, FINISH)


@inlined
def _activity(m, s):
    """The activity code of slot ``s``'s current computation."""
    if m.ti[s, T_COLD]:
        return m.ri[R_COLD_ACT] if m.ti[s, T_COLD] == 1 else m.ri[R_REFILL_ACT]
    return m.ov[m.ti[s, T_PC]]


@inlined
def _end_run(m, s):
    """A run of computations is over: record it, free the CPU, go on after it."""
    ti = m.ti
    _record_run(m, s, ti[s, T_RUN_END])
    ti[s, T_PC], ti[s, T_RUN_END] = ti[s, T_RUN_END], NONE
    _free_cpu(m, ti[s, T_CPU])


@inlined
def _record_run(m, s, stop):
    """Record the run's computations before ``stop``; return when the last ended."""
    ti, ok, oc = m.ti, m.ok, m.oc
    t = m.tf[s, TF_RUN_START]
    frame, cpu, code = ti[s, T_FRAME], ti[s, T_CPU], ti[s, T_CODE]
    for pc in range(ti[s, T_PC], stop):
        if ok[pc] == COMPUTE and oc[pc] > 0:
            end = t + oc[pc]
            _row(m, frame, cpu, code, m.ov[pc], t, end)
            t = end
    return t


@inlined
def _split_run(m, s):
    """Another thread asks for slot ``s``'s CPU: from now on ``s`` computes op by op.  True
    when the run turns out to be over at this instant (the CPU is free)."""
    ri, ti, ok, oc = m.ri, m.ti, m.ok, m.oc
    now = m.rf[F_NOW]
    # the run's thread has not acted at this instant
    first = _before(m.rf[F_POS], ri[R_POS_FRAME], ri[R_POS_RANK], now, ti[s, T_FRAME],
                    ti[s, T_RANK])  # fmt: skip
    t, pc = m.tf[s, TF_RUN_START], ti[s, T_PC]
    while True:
        if pc == ti[s, T_RUN_END]:  # every computation is over: end the run now
            ti[s, T_TOKEN] += 1
            _end_run(m, s)
            _push(m, now, s, RESUME)
            return True
        if ok[pc] == COMPUTE and oc[pc] > 0:
            end = t + oc[pc]
            if end > now or (end == now and first):
                break
            t = end
        pc += 1
    # ops before pc are over; op pc runs from t to t + cost and keeps the CPU; the releases
    # after it happen later than planned: they wait for their turn again
    _undefer_releases(m, s, pc + 1)
    _record_run(m, s, pc)
    ti[s, T_PC], ti[s, T_RUN_END] = pc, NONE
    m.tf[s, TF_BEGAN] = t
    ti[s, T_TOKEN] += 1
    _push(m, t + oc[pc], s, FINISH)
    return False


@inlined
def _end_compute(m, s):
    """Slot ``s``'s computation ends now: True when the slot goes on with its next operation;
    False when the computation was its CPU's cold start, after which it computes on."""
    ti = m.ti
    pc, cpu = ti[s, T_PC], ti[s, T_CPU]
    _row(m, ti[s, T_FRAME], cpu, ti[s, T_CODE], _activity(m, s), m.tf[s, TF_BEGAN], m.rf[F_NOW])
    if m.ri[R_QUOTA]:
        _quota_run(m, -1)
    if m.ri[R_SMT] and not _irq_stalls(m, cpu):  # (in a softirq the logical CPU stays busy)
        _smt_change(m, cpu, STOPS)
    if ti[s, T_COLD] == 1 and m.tf[s, TF_REFILL] > 0.0:  # the wake-up is over: the refill
        ti[s, T_COLD] = 2
        _cold_part(m, s, m.rf[F_NOW], m.tf[s, TF_REFILL])
        return False
    if ti[s, T_COLD]:  # the cold start is over: the computation begins (the CPU is held)
        ti[s, T_COLD] = 0
        _begin_compute(m, s)
        return False
    ti[s, T_PC] = pc + 1
    if m.ok[pc] == SPIN:  # the section's lock goes to the first spinner (no signal)
        _release(m, s, m.oa[pc])
    _free_cpu(m, cpu)
    return True


@inlined
def _free_cpu(m, cpu):
    ci = m.ci
    ci[cpu, C_HOLDER] = NONE
    head = ci[cpu, C_HEAD]
    if head < 0:
        m.idle_since[cpu] = m.rf[F_NOW]  # (read only under the cold start rule)
    if head >= 0:
        ci[cpu, C_HEAD] = m.ti[head, T_NEXT]
        if ci[cpu, C_HEAD] < 0:
            ci[cpu, C_TAIL] = NONE
        _begin_compute(m, head)


@inlined
def _idle_cpu(m, exclude):
    """The lowest-numbered CPU with no thread running or queued, other than ``exclude``;
    -1 when none."""
    ci = m.ci
    for cpu in range(len(ci)):
        if cpu != exclude and ci[cpu, C_HOLDER] < 0 and ci[cpu, C_HEAD] < 0:
            return cpu
    return -1


# -- SMT and background load: computations at a speed ----------------------------------------


@inlined
def _begin_smt(m, s, cost):
    tf = m.tf
    tf[s, TF_REMAINING], tf[s, TF_LAST] = cost, m.rf[F_NOW]
    cpu = m.ti[s, T_CPU]
    if _irq_stalls(m, cpu):  # a softirq holds the CPU: the computation starts at its end
        tf[s, TF_SPEED] = 0.0
        m.ti[s, T_TOKEN] += 1
        return
    speed = _smt_change(m, cpu, STARTS) if m.ri[R_SMT] else 1.0
    if m.ri[R_QUOTA]:
        if m.ri[R_Q_THROTTLED]:  # the quota ran out: the computation starts at the period's end
            tf[s, TF_SPEED] = 0.0
            m.ti[s, T_TOKEN] += 1
            return
        _quota_run(m, 1)
    tf[s, TF_SPEED] = speed * m.share[cpu]
    _reschedule(m, s)


@inlined
def _smt_change(m, cpu, delta):
    """A logical CPU of ``cpu``'s core starts (+1) or stops (-1) computing: its siblings'
    computations change speed now (the work done so far is kept); returns the new speed."""
    ri, tf, ci = m.ri, m.tf, m.ci
    per_core = ri[R_PER_CORE]
    core = cpu // per_core
    m.core_busy[core] += delta
    speed = _core_speed(m, core)
    if ri[R_Q_THROTTLED]:  # nothing computes: the speeds are set at the period's end
        return speed
    now = m.rf[F_NOW]
    for sibling in range(core * per_core, min(ri[R_CPUS], (core + 1) * per_core)):
        other = ci[sibling, C_HOLDER]
        if sibling == cpu or other < 0 or _irq_stalls(m, sibling) or m.ti[other, T_SPIN]:
            continue  # (a spinner does not compute)
        _progress(m, other, now)
        tf[other, TF_SPEED] = speed * m.share[sibling]
        _reschedule(m, other)
    return speed


@inlined
def _core_speed(m, core):
    """The speed of a computation on ``core`` (1, or the SMT throughput while another of
    its logical CPUs computes too)."""
    return m.rf[F_THROUGHPUT] if m.ri[R_SMT] and m.core_busy[core] > 1 else 1.0


@inlined
def _progress(m, s, now):
    """Slot ``s``'s computation has run at its speed until ``now``: its work left so far."""
    tf = m.tf
    tf[s, TF_REMAINING] -= (now - tf[s, TF_LAST]) * tf[s, TF_SPEED]
    if tf[s, TF_REMAINING] < 0.0:  # rounding: the work is done now, not before now
        tf[s, TF_REMAINING] = 0.0
    tf[s, TF_LAST] = now


@inlined
def _reschedule(m, s):
    tf = m.tf
    m.ti[s, T_TOKEN] += 1
    _push(m, tf[s, TF_LAST] + tf[s, TF_REMAINING] / tf[s, TF_SPEED], s, FINISH)


# -- the interrupt CPU: each received packet's softirq preempts the thread computing there ----


@inlined
def _irq_core(m, cpu):
    """Whether ``cpu`` is the interrupt CPU or, with SMT, a sibling on its core (a softirq
    changes the speed of computations there)."""
    irq = m.ri[R_IRQ_CPU]
    if irq < 0:
        return False
    per_core = m.ri[R_PER_CORE]
    return cpu == irq or (m.ri[R_SMT] != 0 and cpu // per_core == irq // per_core)


@inlined
def _irq_stalls(m, cpu):
    """Whether ``cpu`` is the interrupt CPU inside a busy period (its thread stands still)."""
    return cpu == m.ri[R_IRQ_CPU] and m.ri[R_IRQ_NEXT] % 2 == 1


@inlined
def _irq_next(m):
    """When the interrupt CPU's next boundary is (a busy period's start or end; boundary
    ``R_IRQ_NEXT`` of ``irq`` read row by row), inf when none is stored."""
    b = m.ri[R_IRQ_NEXT]
    if b >= 2 * m.ri[R_IRQ_PERIODS]:
        return np.inf
    return m.irq[b // 2, b % 2]


@inlined
def _irq_boundary(m, time):
    """A busy period of the interrupt CPU starts or ends at ``time``.  Its start stops the
    thread computing there (its row so far is recorded, the work done kept; a computation
    whose work is already done ends now as planned) or, with none, makes the logical CPU busy
    for its SMT siblings; its end lets the thread go on (its next row starts now) or frees
    the logical CPU."""
    ri, ti, tf = m.ri, m.ti, m.tf
    m.rf[F_NOW] = time
    starts = ri[R_IRQ_NEXT] % 2 == 0
    ri[R_IRQ_NEXT] += 1
    irq = ri[R_IRQ_CPU]
    s = m.ci[irq, C_HOLDER]
    if s < 0 or ti[s, T_SPIN]:
        if s >= 0:  # a spinner's spin stops for the period (its row so far recorded)
            _spin_pauses(m, s, irq, time, starts)
        if ri[R_SMT]:
            _smt_change(m, irq, STARTS if starts else STOPS)
        return
    if starts:
        _stand_still(m, s, irq, time)
    elif tf[s, TF_SPEED] == 0.0:
        _go_on(m, s, irq, time)


@inlined
def _stand_still(m, s, cpu, time):
    """Slot ``s``'s computation on ``cpu`` stops at ``time`` (a softirq, a throttle): its row
    so far is recorded, the work done kept, its finish void; True.  False when its work is
    done at ``time``: it ends then as planned."""
    ti, tf = m.ti, m.tf
    _progress(m, s, time)
    if tf[s, TF_REMAINING] <= 0.0:
        return False
    if time > tf[s, TF_BEGAN]:
        _row(m, ti[s, T_FRAME], cpu, ti[s, T_CODE], _activity(m, s), tf[s, TF_BEGAN], time)
    tf[s, TF_SPEED] = 0.0
    ti[s, T_TOKEN] += 1
    return True


@inlined
def _go_on(m, s, cpu, time):
    """Slot ``s``'s stopped computation on ``cpu`` goes on from ``time`` (its next row starts
    then) at its core's speed."""
    tf = m.tf
    tf[s, TF_BEGAN], tf[s, TF_LAST] = time, time
    tf[s, TF_SPEED] = _core_speed(m, cpu // m.ri[R_PER_CORE]) * m.share[cpu]
    _reschedule(m, s)


@inlined
def _spin_pauses(m, s, cpu, time, stops):
    """Slot ``s``'s spin on ``cpu`` stops at ``time`` (its row so far recorded) or, not
    ``stops``, goes on (its next row starts then)."""
    tf = m.tf
    if not stops:
        tf[s, TF_BEGAN] = time
    elif time > tf[s, TF_BEGAN]:
        _row(m, m.ti[s, T_FRAME], cpu, m.ti[s, T_CODE], m.ri[R_SPIN_ACT], tf[s, TF_BEGAN], time)


@borrowing
def add_interrupts(m, arrivals_us, horizon_us, ends_us):
    """Packets reach the network card at ``arrivals_us`` (ascending, none before the last
    call's): each costs the interrupt CPU ``F_IRQ_COST`` us of softirq, first come first
    served (a packet's softirq starts at its arrival or when the one before ends; its end,
    when the packet is queued on its socket, goes to ``ends_us``), appended to the busy
    periods (a softirq that starts as the last period ends extends it).  The kernel queues
    ``R_IRQ_BACKLOG`` packets for their softirq at most (Linux 2.4's ``netif_rx``): a packet
    that finds more waiting is dropped (``ends_us`` NaN, no softirq), and so is every packet
    after it that finds the queue not empty.  The packets waiting at ``a`` are those whose
    softirq starts after ``a``: the busy period's last ones, back to back, ``ceil((last -
    a) / cost) - 1`` of them.  Every packet arriving before ``horizon_us`` is now known.  The
    caller has made room in ``irq`` (one row a packet)."""
    ri, rf, irq = m.ri, m.rf, m.irq
    cost, last, n = rf[F_IRQ_COST], rf[F_IRQ_LAST], ri[R_IRQ_PERIODS]
    backlog, throttle = ri[R_IRQ_BACKLOG], ri[R_IRQ_THROTTLE]
    for i in range(len(arrivals_us)):
        a = arrivals_us[i]
        waiting = np.ceil((last - a) / cost) - 1.0 if last > a else 0.0
        if waiting > backlog or (throttle and waiting > 0.0):
            throttle = 1
            ends_us[i] = np.nan
            continue
        throttle = 0
        start = a if a > last else last
        last = start + cost
        ends_us[i] = last
        if n > 0 and start == irq[n - 1, 1]:
            irq[n - 1, 1] = last
        else:
            irq[n, 0], irq[n, 1] = start, last
            n += 1
    rf[F_IRQ_LAST], rf[F_IRQ_HORIZON], ri[R_IRQ_PERIODS] = last, horizon_us, n
    ri[R_IRQ_THROTTLE] = throttle


@inlined
def _work_left(m, charged, n, threads):
    """``(work, threads)``: the computations a frame's plan charges (``charged`` us, ``n``
    operations, ``threads`` threads) and every live thread has left, a signal's send and
    wake-up per synchronisation operation included, and a cold start before each operation
    (at most ``F_COLD_WAKE + F_COLD_REFILL``) (us of work at speed 1), and the threads that
    may do it."""
    ri, rf, ti, ok, oc = m.ri, m.rf, m.ti, m.ok, m.oc
    work, ops = charged, n
    for s in range(ri[R_SLOTS]):
        if not ti[s, T_FIN]:
            threads += 1
            work += m.tf[s, TF_SIGNAL]
            for pc in range(ti[s, T_PC], ti[s, T_END]):
                ops += 1
                if (ok[pc] == COMPUTE or ok[pc] == SPIN) and oc[pc] > 0:
                    work += oc[pc]
    work += ops * (threads * rf[F_SEND] + rf[F_WAKEUP] + rf[F_COLD_WAKE] + rf[F_COLD_REFILL])
    return work, threads


@inlined
def _slowest(m):
    """The slowest speed a running computation can have (x1)."""
    return m.share.min() * (m.rf[F_THROUGHPUT] if m.ri[R_SMT] else 1.0)


@inlined
def _irq_reach(m, start_us, charged, n, threads):
    """The busy periods a frame from ``start_us`` may see (-1: the schedule is not known that
    far).  A bound: until every computation left (:func:`_work_left`) is done at the slowest
    speed a running computation can have, the interrupt CPU's busy periods aside, no later
    than the horizon."""
    ri, rf = m.ri, m.rf
    work, _ = _work_left(m, charged, n, threads)
    left = work / _slowest(m) * (1.0 + 1e-9) + 1.0  # us of time outside busy periods
    first = ri[R_IRQ_NEXT] // 2  # the periods not over before the clock
    k, t = first, max(start_us, rf[F_NOW])
    while k < ri[R_IRQ_PERIODS] and m.irq[k, 1] <= t:
        k += 1
    while k < ri[R_IRQ_PERIODS]:
        gap = m.irq[k, 0] - t
        if gap >= left:
            break
        if gap > 0.0:
            left -= gap
        t = max(t, m.irq[k, 1])
        k += 1
    if t + left >= rf[F_IRQ_HORIZON]:
        return -1
    return k - first + 1


# -- the CPU quota: CFS bandwidth control of the server's threads ------------------------------


@inlined
def _quota_settle(m):
    """The server's CPU time used in the quota's period, brought up to now: the threads
    running since the last change (``R_Q_RATE`` of them) used that much each; with none, a
    period that began meanwhile starts from zero."""
    rf = m.rf
    now, last = rf[F_NOW], rf[F_Q_LAST]
    if now > last:
        period = rf[F_Q_PERIOD]
        if m.ri[R_Q_RATE] > 0:
            rf[F_Q_USED] += m.ri[R_Q_RATE] * (now - last)
        elif np.floor(now / period) > np.floor(last / period):
            rf[F_Q_USED] = 0.0
        rf[F_Q_LAST] = now


@inlined
def _quota_run(m, delta):
    """``delta`` threads start (+1) or stop (-1) running on a CPU now."""
    _quota_settle(m)
    m.ri[R_Q_RATE] += delta


@inlined
def _quota_next(m):
    """``(time, hit)``: the quota's next event: the instant the running threads will have used
    the quota (``hit``), or the end of the period (while throttled, or when that comes
    first); ``(inf, False)`` when nothing runs and nothing is throttled."""
    rf = m.rf
    period = rf[F_Q_PERIOD]
    boundary = (np.floor(rf[F_Q_LAST] / period) + 1.0) * period
    if m.ri[R_Q_THROTTLED]:
        return boundary, False
    rate = m.ri[R_Q_RATE]
    if rate <= 0:
        return np.inf, False
    hit = rf[F_Q_LAST] + max(rf[F_Q_QUOTA] - rf[F_Q_USED], 0.0) / rate
    if hit < boundary:
        return hit, True
    return boundary, False


@inlined
def _quota_due(m, time_us, forever):
    """Process the quota's next event if it comes before the next event (at one instant,
    first) and by ``time_us`` (or at all when ``forever``: with no event left, only while a
    thread stands still throttled); True when one was processed."""
    ri = m.ri
    b, hit = _quota_next(m)
    if b == np.inf:
        return False
    if ri[R_HEAP]:
        due = m.ht[0]
        cap = due if forever or due <= time_us else time_us
    elif ri[R_Q_THROTTLED] and ri[R_LIVE] > 0:  # no event: live threads wait for the period
        cap = np.inf if forever else time_us
    else:  # nothing depends on the period's end but the clock, set to ``time_us`` if finite
        cap = -np.inf if forever or time_us == np.inf else time_us
    if b <= cap:
        _quota_event(m, b, hit)
        return True
    return False


@inlined
def _quota_event(m, time, hit):
    """CFS bandwidth control (Linux ``Documentation/scheduler/sched-bwc.rst``): the server's
    threads together may run ``F_Q_QUOTA`` us of CPU time in each period ``[k P, (k + 1) P)``
    of ``F_Q_PERIOD`` us.  At ``time`` either they have used it (``hit``): the group is
    throttled, every thread running stands still (its row so far recorded, the work done
    kept; a computation whose work is done ends now as planned) and none starts until the
    period ends; or the period ends: the quota is whole again and the stopped threads go
    on (their next rows start now)."""
    ri, rf, ti, ci = m.ri, m.rf, m.ti, m.ci
    rf[F_NOW] = time
    _quota_settle(m)
    if hit:
        rf[F_Q_USED] = rf[F_Q_QUOTA]
        ri[R_Q_THROTTLED] = 1
    elif not ri[R_Q_THROTTLED]:
        rf[F_Q_USED] = 0.0
        return
    else:
        rf[F_Q_USED] = 0.0
        ri[R_Q_THROTTLED] = 0
    for cpu in range(ri[R_CPUS]):
        s = ci[cpu, C_HOLDER]
        if s < 0:
            continue
        if ti[s, T_SPIN]:  # a spinner stops spinning for the throttle, or goes on
            _spin_pauses(m, s, cpu, time, hit)
            ri[R_Q_RATE] += -1 if hit else 1
        elif not hit:
            _go_on(m, s, cpu, time)
            ri[R_Q_RATE] += 1
        elif _stand_still(m, s, cpu, time):
            ri[R_Q_RATE] -= 1


@compiled
def quota_splits(m, charged, n, threads):
    """The trace rows the CPU quota may split while a frame's plan (``charged`` us, ``n``
    operations, ``threads`` threads; 0, 0, 0: none) and the live threads run: each time the
    quota runs out, one row on each CPU.  It runs out at most once per quota of running time,
    and the running time left is at most the work left (:func:`_work_left`) at the slowest
    speed, once for the computations and once per thread for the spins (a spin lasts no
    longer than the sections it waits for)."""
    if not m.ri[R_QUOTA]:
        return 0
    work, threads = _work_left(m, charged, n, threads)
    running = (1.0 + threads) * work / _slowest(m)
    return m.ri[R_CPUS] * (int(running / m.rf[F_Q_QUOTA]) + 2)


# -- synchronisation -------------------------------------------------------------------------


@inlined
def _arrive(m, s, b):
    bi, ti = m.bi, m.ti
    bi[b, B_COUNT] += 1
    if bi[b, B_COUNT] > bi[b, B_PARTIES]:
        m.ri[R_ERROR], m.ri[R_ERR_SLOT], m.ri[R_ERR_ARG] = E_PARTIES, s, b
        return
    now = m.rf[F_NOW]
    m.tf[s, TF_BEGAN] = now
    ti[s, T_NEXT] = NONE
    if bi[b, B_TAIL] >= 0:
        ti[bi[b, B_TAIL], T_NEXT] = s
    else:
        bi[b, B_HEAD] = s
    bi[b, B_TAIL] = s
    if bi[b, B_COUNT] == bi[b, B_PARTIES]:
        # the last to arrive (s) wakes the sleepers in arrival order; with a thread library
        # that signals, one send after another, and each then pays its wake-up on its CPU
        # (without: send and wake-up cost 0, everyone goes on now)
        w = bi[b, B_HEAD]
        send, k = m.rf[F_SEND], 0
        while w >= 0:
            following = ti[w, T_NEXT]
            if w != s:
                k += 1
                _signal(m, w, m.rf[F_WAKEUP], m.ri[R_WAKEUP_ACT])
                _push(m, now + k * send, w, WAKE)
            w = following
        _signal(m, s, k * send, m.ri[R_SEND_ACT])
        _push(m, now, s, WAKE)


@inlined
def _signal(m, s, cost, activity):
    """Slot ``s``, waking, first computes ``cost`` as ``activity`` (a signal's cost)."""
    m.tf[s, TF_SIGNAL] = cost
    m.ti[s, T_SIGNAL_ACT] = activity


@inlined
def _become_compute(m, pc, cost, activity):
    """The synchronisation op at ``pc``, done, becomes a computation of its signal's cost (a
    frame's operations run once: the store may be rewritten)."""
    m.ok[pc], m.oc[pc], m.ov[pc], m.oa[pc] = COMPUTE, cost, activity, NONE


@inlined
def _take_lock(m, lock, s):
    li, ti = m.li, m.ti
    li[lock, L_HOLDER] = s
    li[lock, L_FRAME], li[lock, L_RANK], li[lock, L_CODE] = (
        ti[s, T_FRAME], ti[s, T_RANK], ti[s, T_CODE]
    )  # fmt: skip
    ti[s, T_HELD] += 1


@inlined
def _acquire(m, s, lock):
    """Take ``lock`` now (True) or queue for it (False)."""
    ri, li, ti = m.ri, m.li, m.ti
    now = m.rf[F_NOW]
    holder = li[lock, L_HOLDER]
    if holder != NONE and li[lock, L_HAS_REL]:
        # released inside a run: over if before now (at now: if the holder acted first)
        at = m.lf[lock, LF_REL_AT]
        in_run = (
            holder >= 0
            and ti[holder, T_RUN_END] >= 0
            and ti[holder, T_RUN_ID] == li[lock, L_REL_RUN]
        )
        acted = not _before(m.rf[F_POS], ri[R_POS_FRAME], ri[R_POS_RANK], at,
                            li[lock, L_FRAME], li[lock, L_RANK])  # fmt: skip
        if at < now or not in_run or acted:
            _log_hold(m, lock, at)
            holder = NONE
            li[lock, L_HOLDER] = NONE
            li[lock, L_HAS_REL] = 0
        else:  # the holder must now release it as an operation, at its time
            _truncate_run(m, holder, lock)
    if holder == NONE:
        _take_lock(m, lock, s)
        m.lf[lock, LF_SINCE] = now
        return True
    m.tf[s, TF_BEGAN] = now
    ti[s, T_NEXT] = NONE
    if li[lock, L_TAIL] >= 0:
        ti[li[lock, L_TAIL], T_NEXT] = s
    else:
        li[lock, L_HEAD] = s
    li[lock, L_TAIL] = s
    return False


@inlined
def _holds(m, s, lock):
    """Whether slot ``s`` holds ``lock`` (and has not released it inside a run)."""
    return m.li[lock, L_HOLDER] == s and not m.li[lock, L_HAS_REL]


@inlined
def _log_hold(m, lock, end):
    i = m.holds_size[0]
    m.holds_ints[i, 0], m.holds_ints[i, 1] = lock, m.li[lock, L_FRAME]
    m.holds_ints[i, 2] = m.li[lock, L_CODE]
    m.holds_times[i, 0], m.holds_times[i, 1] = m.lf[lock, LF_SINCE], end
    m.holds_size[0] = i + 1


@inlined
def _retry_acquire(m, s, pc, time):
    """Slot ``s``, woken by a barging release of the lock its op ``pc`` acquires, tries it
    again: with the lock it goes on (one ``lock_wait`` row from its first try: the waits and
    wake-ups between are one wait), else it waits again; :func:`_step`'s result (the slot
    that goes on, or :data:`NONE`)."""
    ti = m.ti
    ti[s, T_RETRY] = 0
    began = m.tf[s, TF_BEGAN]
    if _acquire(m, s, m.oa[pc]):
        if time > began:
            _row(m, ti[s, T_FRAME], ti[s, T_CPU], ti[s, T_CODE], m.ri[R_LOCK_WAIT], began, time)
        ti[s, T_PC] = pc + 1
        return s
    m.tf[s, TF_BEGAN] = began  # (queued again: the wait goes on from its first try)
    return NONE


@inlined
def _release(m, s, lock):
    """Release ``lock``: its first waiter, if any, takes it now and is woken (with signals:
    when the releaser's signal reaches it; a spinner at once, without).  With barging locks
    (``R_BARGING``: a futex mutex, libgomp's and glibc's) a sleeping waiter is only woken: the
    lock is free from now, anyone may take it, and the waiter tries again ``signal_send +
    signal_wakeup`` after the release, its wake-up latency counted in its wait.  True when a
    sleeping waiter was woken."""
    ri, li, ti = m.ri, m.li, m.ti
    if not _holds(m, s, lock):
        ri[R_ERROR], ri[R_ERR_SLOT], ri[R_ERR_ARG] = E_NOT_HELD, s, lock
        return False
    now = m.rf[F_NOW]
    ti[s, T_HELD] -= 1
    _log_hold(m, lock, now)
    m.lf[lock, LF_SINCE] = now
    waiter = li[lock, L_HEAD]
    if waiter >= 0:
        li[lock, L_HEAD] = ti[waiter, T_NEXT]
        if li[lock, L_HEAD] < 0:
            li[lock, L_TAIL] = NONE
        if ri[R_BARGING] and not ti[waiter, T_SPIN]:
            li[lock, L_HOLDER] = NONE
            ti[waiter, T_RETRY] = 1
            _push(m, now + m.rf[F_SEND] + m.rf[F_WAKEUP], waiter, WAKE)
            return True
        _take_lock(m, lock, waiter)
        if ti[waiter, T_SPIN]:  # a spinner sees the lock free: no signal
            _push(m, now, waiter, WAKE)
            return False
        _signal(m, waiter, m.rf[F_WAKEUP], ri[R_WAKEUP_ACT])  # (0 without signals)
        _push(m, now + m.rf[F_SEND], waiter, WAKE)
        return True
    li[lock, L_HOLDER] = NONE
    return False


@inlined
def _defer_release(m, s, lock, at):
    """Slot ``s`` will release ``lock`` at ``at`` inside its run, without an event; False
    (nothing done) when a thread already waits for the lock."""
    li = m.li
    if not _holds(m, s, lock):
        m.ri[R_ERROR], m.ri[R_ERR_SLOT], m.ri[R_ERR_ARG] = E_NOT_HELD, s, lock
        return False
    if li[lock, L_HEAD] >= 0:
        return False
    m.ti[s, T_HELD] -= 1
    li[lock, L_HAS_REL] = 1
    m.lf[lock, LF_REL_AT] = at
    li[lock, L_REL_RUN] = m.ti[s, T_RUN_ID]
    return True


@inlined
def _undefer_releases(m, s, start):
    """The releases of slot ``s``'s run from op ``start`` on happen later than the run
    planned: it still holds those locks and releases them as plain operations."""
    for pc in range(start, m.ti[s, T_RUN_END]):
        if m.ok[pc] == RELEASE:
            m.li[m.oa[pc], L_HAS_REL] = 0
            m.ti[s, T_HELD] += 1


@inlined
def _truncate_run(m, s, lock):
    """End slot ``s``'s run where it releases ``lock`` (someone waits now): the release and
    what follows then run as operations."""
    ti, ok, oc = m.ti, m.ok, m.oc
    t = m.tf[s, TF_RUN_START]
    pc, stop = ti[s, T_PC], ti[s, T_RUN_END]
    while pc < stop:
        if ok[pc] == COMPUTE and oc[pc] > 0:
            t = t + oc[pc]
        elif ok[pc] == RELEASE and m.oa[pc] == lock:
            break
        pc += 1
    _undefer_releases(m, s, pc)
    ti[s, T_RUN_END] = pc
    ti[s, T_TOKEN] += 1
    _push(m, t, s, RUN_END)


@inlined
def _spawn(m, s, child):
    ri, ti = m.ri, m.ti
    if not ti[child, T_SPAWNED] or ti[child, T_LIVE] or ti[child, T_FIN]:
        ri[R_ERROR], ri[R_ERR_SLOT], ri[R_ERR_ARG] = E_SPAWN, s, child
        return
    if ti[child, T_CPU] < 0:
        ti[child, T_CPU] = ti[s, T_CPU]
    ti[child, T_LIVE] = 1
    ri[R_LIVE] += 1
    _push(m, m.rf[F_NOW], child, RESUME)


@inlined
def _maybe_migrate(m, s):
    """A run-first parent has waited its delay: it moves to an idle CPU, if there is one
    (True: it goes on with its operations)."""
    ti = m.ti
    idle = _idle_cpu(m, ti[s, T_CPU])
    if idle < 0:
        return False  # it keeps waiting for the child
    target = ti[s, T_TARGET]
    j, previous = ti[target, T_JHEAD], NONE  # out of the child's joiners
    while j != s:
        previous, j = j, ti[j, T_NEXT]
    if previous < 0:
        ti[target, T_JHEAD] = ti[s, T_NEXT]
    else:
        ti[previous, T_NEXT] = ti[s, T_NEXT]
    if ti[target, T_JTAIL] == s:
        ti[target, T_JTAIL] = previous
    now = m.rf[F_NOW]
    _row(m, ti[s, T_FRAME], ti[s, T_CPU], ti[s, T_CODE], m.ri[R_RUNQ_WAIT], m.tf[s, TF_BEGAN],
         now)  # fmt: skip
    ti[s, T_CPU] = idle
    ti[s, T_PC] += 1
    return True


# -- the phased path ---------------------------------------------------------------------------


@inlined_allocating
def _phased(
    m, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, is_wait, thread_codes,
    activity_codes, lock_codes, n_locks, frame, start_us, out,
):  # fmt: skip
    """The closed form of a barrier-phased plan without contention: each thread starts a
    phase when the previous barrier opened and computes back to back on its own CPU; a barrier
    opens at its last arrival.  True (rows and holds written, ``out[0]`` the end) or False
    (nothing written) when the plan is not of that shape.  Each lock a thread takes in a
    phase is logged from the phase's start to the thread's end of the phase: a superset of its
    critical sections (for the ``lock_exclusive`` invariant)."""
    threads = len(thread_cpu)
    offsets = np.searchsorted(thread, np.arange(threads + 1))
    used = np.zeros(m.ri[R_CPUS], np.bool_)
    for t in range(threads):
        if used[thread_cpu[t]]:
            return False
        used[thread_cpu[t]] = True
    declared = len(barrier_parties)
    held_by = np.full(max(n_locks, 1), -1, np.int64)
    names = empty(declared + 1, np.int64)  # thread 0's barriers, in order
    n_names = 0
    passed_at = empty((threads, declared + 1), np.int64)  # op index of each passage
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
                for p in range(j):
                    if names[p] == names[j]:
                        return False
            n_names = passed
        elif passed != n_names:
            return False
    barriers = n_names
    opened = start_us
    ends = np.zeros(threads)
    starts = empty(barriers + 1)
    phase_ends = empty((barriers + 1, threads))
    first_row = m.trace_size[0]
    for phase in range(barriers + 1):
        starts[phase] = opened
        for t in range(threads):
            first = offsets[t] if phase == 0 else passed_at[t, phase - 1] + 1
            last = offsets[t + 1] if phase == barriers else passed_at[t, phase]
            now = opened
            for i in range(first, last):
                if kind[i] == COMPUTE and cost[i] > 0:
                    end = now + cost[i]
                    _row(m, frame, thread_cpu[t], thread_codes[t], activity_codes[activity[i]],
                         now, end)  # fmt: skip
                    now = end
            ends[t] = now
            phase_ends[phase, t] = now
        if phase == barriers:
            break
        opens = ends.max()
        for t in range(threads):
            if ends[t] < opens:
                wait = activity_codes[activity[passed_at[t, phase]]]
                _row(m, frame, thread_cpu[t], thread_codes[t], wait, ends[t], opens)
        opened = opens
    if ends.max() > ends[0]:
        m.trace_size[0] = first_row  # a thread outlives the coordinator: the events path
        return False
    for phase in range(1, barriers + 2):
        for lock in range(n_locks):
            t = owner[phase, lock]
            if t >= 0:
                i = m.holds_size[0]
                m.holds_ints[i, 0], m.holds_ints[i, 1] = lock_codes[lock], frame
                m.holds_ints[i, 2] = thread_codes[t]
                m.holds_times[i, 0] = starts[phase - 1]
                m.holds_times[i, 1] = phase_ends[phase - 1, t]
                m.holds_size[0] = i + 1
    out[0] = ends[0]
    return True
