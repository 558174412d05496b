"""The machine: N simulated CPUs that execute frame plans and record a trace.

:class:`Machine` is a thin facade over the compiled engine (:mod:`simsrv.machine.engine`):
it keeps the engine's state record (:class:`~simsrv.machine.engine.MachineState`), the trace
and lock-hold stores the engine writes into (:mod:`simsrv.machine.trace`) and the names those
stores intern; it converts a plan of operation objects (:mod:`simsrv.machine.plan`) into
arrays (:func:`~simsrv.machine.plan_arrays.from_plan`), grows the engine's arrays when it asks
for room, and turns the engine's error codes into :class:`~simsrv.machine.plan.PlanError`.

The model the engine implements (CPUs, SMT, background load, locks, barriers, spawn, join,
run-first and migration, and the order of simultaneous events) is stated in the reference
engine's docstring, :mod:`simsrv.machine.simpy_engine`, which executes the same plans op by
op with simpy; ``tests/test_engines.py`` requires identical traces from both on every scenario
and on random plans.  Simulated time runs in microseconds internally; the API speaks seconds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simsrv.core.uninitialised import empty
from simsrv.machine import engine
from simsrv.machine.cold_start import ColdStart
from simsrv.machine.engine import MachineState
from simsrv.machine.plan import US_PER_S, FramePlan, PlanError
from simsrv.machine.plan_arrays import PlanArrays, from_plan
from simsrv.machine.quota import CpuQuota, check_quota_machine
from simsrv.machine.trace import (
    COLD_REFILL,
    COLD_START,
    LOCK_SPIN,
    SIGNAL_SEND,
    SIGNAL_WAKEUP,
    LockHolds,
    Settled,
    Trace,
    wait_codes,
)

__all__ = ["Machine", "PlanError", "US_PER_S"]

PATHS = ("serial", "phased", "events")
"""The engine's paths by status (:data:`~simsrv.machine.engine.SERIAL` ...)."""


class Machine:
    """N simulated CPUs that execute frame plans and record a :class:`Trace`.

    Parameters
    ----------
    cpus:
        Number of (logical) CPUs.
    smt_per_core:
        Logical CPUs per physical core (CPU ``i`` is on core ``i // smt_per_core``).
    smt_throughput:
        Speed of a logical CPU while a sibling on its core computes, relative to alone (x1).
    runs:
        Use the run shortcut (:mod:`simsrv.machine.engine`); ``False`` schedules every
        computation as its own event.  Both give the same trace (tests check).
    background:
        Busy share of each CPU taken by other programs (CPU 0 first; missing CPUs: 0).
    signal_send_us, signal_wakeup_us:
        A thread library that wakes sleepers with signals (LinuxThreads): each wake-up costs
        the waker ``signal_send_us`` of CPU (one ``kill()``) and the sleeper
        ``signal_wakeup_us`` once the signal reaches it (the return from ``sigsuspend``).
    lock_barging:
        Locks are futex mutexes (glibc's, libgomp's): a release frees the lock and wakes its
        first sleeping waiter, which tries again ``signal_send_us + signal_wakeup_us`` later
        (the wait and wake-up one ``lock_wait``), anyone taking the lock meanwhile; False: the
        release hands the lock to the waiter (FIFO).
        0 and 0 (the default): wake-ups are free and immediate.
    irq_cpu, softirq_us, max_backlog:
        The CPU that takes the network card's interrupts (None: none), the softirq each
        received packet costs it, us, and the packets waiting for theirs at most: the packets
        given to :meth:`add_interrupts` preempt the thread computing there, one after
        another.
    interrupt_source:
        Called without arguments when the machine needs the packets arriving after the
        horizon of the last :meth:`add_interrupts` (it must call that method again, with a
        later horizon).
    quota:
        A CPU quota on the server's threads (CFS bandwidth control,
        :mod:`simsrv.machine.quota`); None: none.
    cold_start:
        The cold start of a computation on a CPU that was idle
        (:mod:`simsrv.machine.cold_start`); None: none.
    """

    runs_arrays_compiled = True
    """Plans as arrays run in the compiled engine, from the compiled frame loop too."""

    def __init__(
        self,
        cpus: int,
        smt_per_core: int = 1,
        smt_throughput: float = 1.0,
        runs: bool = True,
        background: tuple[float, ...] | list[float] = (),
        signal_send_us: float = 0.0,
        signal_wakeup_us: float = 0.0,
        irq_cpu: int | None = None,
        softirq_us: float = 0.0,
        max_backlog: int = 300,
        interrupt_source: Callable[[], None] | None = None,
        quota: CpuQuota | None = None,
        cold_start: ColdStart | None = None,
        lock_barging: bool = False,
    ) -> None:
        self.cpus = cpus
        if irq_cpu is not None and not 0 <= irq_cpu < cpus:
            raise ValueError(f"irq_cpu: {irq_cpu} is not a CPU of 0..{cpus - 1}")
        check_quota_machine(quota, background, irq_cpu if softirq_us > 0.0 else None)
        self.quota = quota
        self.smt_per_core = smt_per_core
        self.smt_throughput = smt_throughput
        self.background = tuple(background) + (0.0,) * (cpus - len(background))
        self.trace = Trace()
        self.charged_us: list[float] = []
        """CPU time each executed frame's plan charged, us, in execution order (since a
        reader last took them: :mod:`simsrv.pipeline.trace_stream` empties it with the stores)."""
        self.lock_holds = LockHolds(threads=self.trace.threads)
        """Every critical section: ``(lock, frame, thread, start_us, end_us)`` (the phased
        path logs its thread's whole phase, a superset).  :meth:`finish` closes the sections
        whose release happened inside a run of computations."""
        self.signal_send_us, self.signal_wakeup_us = signal_send_us, signal_wakeup_us
        self.irq_cpu, self.softirq_us = irq_cpu, softirq_us
        self.interrupt_source = interrupt_source
        self._arrays = engine.new_arrays(
            cpus, smt_per_core, smt_throughput, background, runs, signal_send_us,
            signal_wakeup_us, -1 if irq_cpu is None else irq_cpu, softirq_us, max_backlog,
            0.0 if quota is None else quota.quota_us, 0.0 if quota is None else quota.period_us,
            0.0 if cold_start is None else cold_start.wake_us,
            0.0 if cold_start is None else cold_start.refill_us,
            1.0 if cold_start is None else cold_start.decay_us, lock_barging,
        )  # fmt: skip
        self.cold_start = cold_start
        self.lock_barging = lock_barging
        ri, activities = self._arrays["ri"], self.trace.activities
        ri[engine.R_LOCK_WAIT] = activities.code("lock_wait")
        ri[engine.R_JOIN_WAIT] = activities.code("join_wait")
        ri[engine.R_RUNQ_WAIT] = activities.code("runqueue_wait")
        ri[engine.R_SPIN_ACT] = activities.code(LOCK_SPIN)
        if ri[engine.R_COLD]:
            ri[engine.R_COLD_ACT] = activities.code(COLD_START)
            ri[engine.R_REFILL_ACT] = activities.code(COLD_REFILL)
        if ri[engine.R_SIGNALS]:
            ri[engine.R_SEND_ACT] = activities.code(SIGNAL_SEND)
            ri[engine.R_WAKEUP_ACT] = activities.code(SIGNAL_WAKEUP)
        self._state: MachineState | None = None
        self._tables: dict[tuple, tuple] = {}
        self._last: tuple = (None, None, None, None)
        self._out = empty(2)
        self._no_spawn = np.zeros(1, np.bool_)
        self.path = ""
        """The path the last :meth:`execute` took: ``serial``, ``phased`` or ``events``
        (:mod:`simsrv.machine.engine`; a diagnostic)."""

    # -- the engine's state --------------------------------------------------------------

    @property
    def state(self) -> MachineState:
        """The engine's state record (rebuilt when a store was reallocated)."""
        state = self._state
        trace, holds = self.trace, self.lock_holds
        if (
            state is None
            or state.trace_times is not trace.times
            or state.holds_times is not holds.times
            or state.li is not self._arrays["li"]
        ):
            trace.flush()
            holds.flush()
            state = self._state = MachineState(
                **self._arrays,
                trace_ints=trace.ints,
                trace_times=trace.times,
                trace_size=trace.counter,
                holds_ints=holds.ints,
                holds_times=holds.times,
                holds_size=holds.counter,
            )
        return state

    @property
    def now_us(self) -> float:
        """The engine's clock, us (the serial path leaves it where it was)."""
        return float(self._arrays["rf"][engine.F_NOW])

    @property
    def idle(self) -> bool:
        """True when no thread of any earlier frame is still running."""
        return not self._arrays["ri"][engine.R_LIVE]

    def settled_us(self, next_start_us: float) -> Settled:
        """How far the records are complete when the next frame starts at ``next_start_us``
        or later (:class:`~simsrv.machine.trace.Settled`)."""
        trace_us, holds_us, open_frame = engine.settled(self.state, next_start_us)
        return Settled(trace_us, holds_us, None if open_frame < 0 else int(open_frame))

    def tables(self, plan: PlanArrays) -> tuple:
        """For a plan's names: which activities are waits, and the codes of its threads,
        activities and locks in the stores.  Strategies reuse their name tuples from frame to
        frame, so the last plan's tables are found by identity."""
        names, activities, locks = plan.thread_names, plan.activities, plan.locks
        last = self._last
        if last[0] is names and last[1] is activities and last[2] is locks:
            return last[3]
        key = (tuple(names), tuple(activities), tuple(locks))
        tables = self._tables.get(key)
        if tables is None:
            if len(set(names)) != len(names):
                raise PlanError(f"thread names are not unique: {list(names)}")
            tables = self._tables[key] = (
                wait_codes(activities) if len(activities) else np.zeros(1, np.bool_),
                self.trace.threads.codes_of(names),
                self.trace.activities.codes_of(activities),
                self.lock_holds.locks.codes_of(locks),
            )
            self._grow_locks(len(self.lock_holds.locks.names))
        self._last = (names, activities, locks, tables)
        return tables

    # -- executing -----------------------------------------------------------------------

    def arguments(self, plan: FramePlan | PlanArrays) -> tuple[PlanArrays, tuple]:
        """``plan`` as arrays, and the arguments the engine takes for it after the machine's
        state: its columns, thread CPUs, barrier parties, which threads are spawned and the
        tables of its names (:meth:`tables`)."""
        arrays = plan if type(plan) is PlanArrays else from_plan(plan)
        spawned = arrays.thread_spawned
        if spawned is None:
            if len(self._no_spawn) < len(arrays.thread_cpu):
                self._no_spawn = np.zeros(2 * len(arrays.thread_cpu), np.bool_)
            spawned = self._no_spawn
        return arrays, (
            arrays.thread, arrays.kind, arrays.cost, arrays.arg, arrays.activity,
            arrays.thread_cpu, arrays.barrier_parties, spawned, *self.tables(arrays),
        )  # fmt: skip

    def execute(self, plan: FramePlan | PlanArrays, frame: int, start_s: float) -> float:
        """Run ``plan`` as frame ``frame`` from ``start_s``; return when its coordinator ends, s."""
        arrays, arguments = self.arguments(plan)
        out = self._out
        while True:
            status = engine.execute(self.state, *arguments, frame, start_s * US_PER_S, out)
            if status == engine.ROOM:
                self.make_room()
            elif status == engine.IRQ_SHORT:
                self.more_interrupts()
            else:
                break
        if status < 0:
            raise self.plan_error(status, frame, arrays)
        self.path = PATHS[status]
        self.charged_us.append(float(out[1]))
        return float(out[0]) / US_PER_S

    def run_until(self, time_us: float = float("inf")) -> None:
        """Process every event up to ``time_us`` (all of them by default), then set the clock."""
        forever = time_us == float("inf")
        self._run_until(0.0 if forever else time_us, forever, False)

    def finish(self) -> None:
        """Run every thread still alive to its end (threads that outlive the last frame) and
        close the critical sections released inside runs; the trace is then complete."""
        self._run_until(0.0, True, True)

    def _run_until(self, time_us: float, forever: bool, close: bool) -> None:
        """:func:`engine.run_until <simsrv.machine.engine.run_until>`, the interrupts it needs
        added as it goes."""
        ri = self._arrays["ri"]
        while True:
            self._reserve_for_live()
            engine.run_until(self.state, time_us, forever, close)
            if ri[engine.R_ERROR] != engine.IRQ_SHORT:
                break
            ri[engine.R_ERROR] = 0
            self.more_interrupts()
        self._raise_error()

    def _reserve_for_live(self) -> None:
        """Room in the stores for every row the live threads may still record
        (:func:`engine.rows_per_op <simsrv.machine.engine.rows_per_op>` an operation; an
        interrupt CPU's busy period may split one)."""
        ri = self._arrays["ri"]
        rows = int(engine.rows_per_op(ri)) * int(ri[engine.R_OPS]) + len(self._arrays["li"]) + 1
        rows += int(ri[engine.R_IRQ_PERIODS]) - int(ri[engine.R_IRQ_NEXT]) // 2
        if ri[engine.R_QUOTA]:  # a throttle splits the rows it stops
            rows += int(engine.quota_splits(self.state, 0.0, 0, 0))
        self.trace.reserve(rows)
        self.lock_holds.reserve(rows)
        heap = int(ri[engine.R_HEAP]) + 2 * self.smt_per_core * rows + 64
        if (ri[engine.R_IRQ_CPU] >= 0 or ri[engine.R_QUOTA]) and heap > len(self._arrays["ht"]):
            # (the interrupt CPU's boundaries, the quota's periods: their reschedules)
            for name in ("ht", "hi"):
                self._arrays[name] = _grown(self._arrays[name], heap)
            self._state = None

    # -- the network card's interrupts ---------------------------------------------------

    def add_interrupts(self, arrivals_us: np.ndarray, horizon_us: float) -> np.ndarray:
        """Packets reach the network card at ``arrivals_us`` (ascending, none before the last
        call's horizon); every packet arriving before ``horizon_us`` is now known (inf: no
        more will come).  Returns when each packet's softirq ends (it is then on its socket),
        us, NaN for a packet the kernel dropped (its backlog full: :func:`engine.add_interrupts
        <simsrv.machine.engine.add_interrupts>`); without an interrupt CPU, nothing happens
        and that is its arrival."""
        a = self._arrays
        ri = a["ri"]
        arrivals_us = np.ascontiguousarray(arrivals_us, dtype=np.float64)
        if ri[engine.R_IRQ_CPU] < 0:
            return arrivals_us.copy()
        periods, first = int(ri[engine.R_IRQ_PERIODS]), int(ri[engine.R_IRQ_NEXT]) // 2
        irq = a["irq"]
        if first:  # the periods over are dropped
            irq[: periods - first] = irq[first:periods]
            periods -= first
            ri[engine.R_IRQ_PERIODS] = periods
            ri[engine.R_IRQ_NEXT] -= 2 * first
        if periods + len(arrivals_us) > len(irq):
            a["irq"] = _grown(irq, periods + len(arrivals_us))
            self._state = None
        ends = empty(len(arrivals_us))
        engine.add_interrupts(self.state, arrivals_us, float(horizon_us), ends)
        return ends

    def more_interrupts(self) -> None:
        """The packets after the horizon, from :attr:`interrupt_source`."""
        rf = self._arrays["rf"]
        horizon = float(rf[engine.F_IRQ_HORIZON])
        if self.interrupt_source is None or horizon == float("inf"):
            raise RuntimeError(f"the machine needs the packets arriving after {horizon} us")
        self.interrupt_source()
        if float(rf[engine.F_IRQ_HORIZON]) <= horizon:
            raise RuntimeError("the interrupt source added no packet time past the horizon")

    def _raise_error(self) -> None:
        status = int(self._arrays["ri"][engine.R_ERROR])
        if status < 0:
            raise self.plan_error(status, -1, None)

    def make_room(self) -> None:
        """Grow what the engine's last call said it needs (``R_NEED_*``, and the locks every
        plan so far names)."""
        a = self._arrays
        ri = a["ri"]
        slots, ops, bars, heap, rows = (
            int(ri[r])
            for r in (
                engine.R_NEED_SLOTS,
                engine.R_NEED_OPS,
                engine.R_NEED_BARS,
                engine.R_NEED_HEAP,
                engine.R_NEED_ROWS,
            )
        )
        for names, need in (("ti tf", slots), ("ok oc oa ov", ops), ("bi", bars), ("ht hi", heap)):
            for name in names.split():
                a[name] = _grown(a[name], need)
        self.trace.reserve(rows)
        self.lock_holds.reserve(rows)
        self._grow_locks(len(self.lock_holds.locks.names))
        self._state = None

    def _grow_locks(self, locks: int) -> None:
        """Lock state for ``locks`` lock codes (new locks: free, nobody waiting)."""
        a = self._arrays
        old = len(a["li"])
        if locks <= old:
            return
        size = max(locks, 2 * old, 16)
        li = np.full((size, engine.LOCK_INTS), engine.NONE, np.int64)
        li[:, engine.L_HAS_REL] = 0
        li[:old] = a["li"]
        lf = np.zeros((size, 2))
        lf[:old] = a["lf"]
        a["li"], a["lf"] = li, lf
        self._state = None

    def plan_error(self, status: int, frame: int, plan: PlanArrays | None) -> PlanError:
        """The :class:`PlanError` for an engine error code."""
        ri, ti = self._arrays["ri"], self._arrays["ti"]
        slot, arg = int(ri[engine.R_ERR_SLOT]), int(ri[engine.R_ERR_ARG])
        names = self.trace.threads.names
        if status == engine.E_COORDINATOR:
            return PlanError("the coordinator (threads[0]) must exist and not be spawned")
        if status == engine.E_CPU and plan is not None:
            cpu = int(plan.thread_cpu[slot])
            name = plan.thread_names[slot]
            return PlanError(f"thread {name!r}: cpu {cpu} out of range 0..{self.cpus - 1}")
        if status == engine.E_NOT_WAIT and plan is not None:
            name, activity = plan.thread_names[slot], plan.activities[arg]
            return PlanError(f"{name!r}: barrier activity {activity!r} must end in _wait")
        if status == engine.E_DEADLOCK:
            return PlanError(f"frame {frame}: plan deadlocked (no event can happen)")
        thread = names[ti[slot, engine.T_CODE]] if 0 <= slot < len(ti) else "?"
        if status == engine.E_HOLDING:
            li = self._arrays["li"]
            held = [self.lock_holds.locks.names[k] for k in np.flatnonzero(li[:, 0] == slot)]
            return PlanError(f"thread {thread!r} ended holding locks {sorted(map(str, held))}")
        if status == engine.E_NOT_HELD:
            lock = self.lock_holds.locks.names[arg]
            return PlanError(f"{thread!r} releases {lock!r}, which it does not hold")
        if status == engine.E_PARTIES:
            parties = int(self._arrays["bi"][arg, engine.B_PARTIES])
            return PlanError(f"{thread!r}: more than {parties} parties arrived at a barrier")
        if status == engine.E_SPAWN:
            child = names[ti[arg, engine.T_CODE]]
            return PlanError(f"{thread!r} spawns {child!r}, not a spawned thread of the plan")
        if status == engine.E_IRQ_HORIZON:
            return PlanError("the engine ran past its interrupt schedule (a bug of its reach)")
        return PlanError(f"the machine's event heap overflowed (status {status})")


def _grown(array: np.ndarray, need: int) -> np.ndarray:
    """``array`` with at least ``need`` rows (doubling), contents kept."""
    if len(array) >= need:
        return array
    size = max(need, 2 * len(array))
    grown = empty((size, *array.shape[1:]), array.dtype)
    grown[: len(array)] = array
    return grown
