"""Execution of frame plans on simulated CPUs: a discrete-event engine.

Model
-----
* Each CPU runs one thread at a time.  A thread's :class:`Compute` holds its CPU for the cost;
  threads that share a CPU take turns at operation boundaries, in request order (FIFO), so two
  threads on one CPU take the sum of their costs and two threads on two CPUs the maximum.
* A blocked thread (barrier, lock, join) does not hold its CPU; the time it waits is recorded as
  a wait interval (``barrier_wait``, ``lock_wait``, ``join_wait``, ``runqueue_wait``) that does
  not count as busy.
* Locks are FIFO mutexes that persist across frames; barriers belong to one frame's plan.
* Optional background load: CPU ``i`` is busy a share ``background[i]`` of the time with
  programs outside the server (time-sliced finely), so the server's computations on it run
  at ``1 - background[i]`` of its speed (a cost ``c`` takes ``c / (1 - share)``), on top of
  any SMT slowdown.
* Optional SMT: logical CPU ``i`` is on core ``i // smt_per_core``.  A computation runs at
  speed 1 (one unit of cost per us) while it is the only computing logical CPU of its core and
  at ``smt_throughput`` while a sibling computes too; speeds change the instant a sibling starts
  or stops and the work done is kept (cost ``c`` ends when ``t_alone + throughput * t_shared =
  c``).  Blocked threads do not compute, so they do not slow their siblings.
* **Simultaneous events.**  When several threads act at the same simulated instant, they act in
  a fixed order: threads of earlier frames first, then by their index in the plan (the
  coordinator first).  E.g. two threads released by one barrier that share a CPU run in plan
  order; two threads that request a free lock at the same instant: the lower index gets it.
* Simulated time runs in microseconds internally; the API speaks seconds.

Engine
------
A heap of events keyed ``(time_us, frame, thread index, sequence)``; a thread runs its
operations synchronously until one must wait (a busy CPU, a held lock, a barrier, a join) or
until simulated time must pass.  Three shortcuts keep it fast; all are exact:

* a plan that is one thread of computations while nothing else runs is a straight sum;
* a plan of one thread per CPU passing the same barriers, whose threads never want the same
  lock between two barriers, while nothing else runs: barrier by barrier in closed form
  (:mod:`simsrv.machine.phased`);
* a thread that starts a computation on a CPU with nobody else on it runs its next
  computations too in one step (one event for the run, not one per operation).  If another
  thread asks for that CPU before the run ends, the run is split at that instant: the
  operations already over are recorded, the current one keeps the CPU, and the rest queue
  behind the newcomer as they would have one by one.  A run may include lock releases that
  nobody waits for (no event either); when a thread starts waiting for such a lock, the run
  ends at the release, which then happens as an ordinary operation.
* "at the same instant, who acts first" follows the largest event key processed so far at
  that instant (an event pushed for now with a smaller key comes after the one that pushed
  it), so the shortcuts decide ties exactly as the op-by-op engine (``Machine(runs=False)``).

A reference engine on simpy, op by op and without shortcuts, executes the same plans
(``machine.engine = "simpy"``, :mod:`simsrv.machine.simpy_engine`); ``tests/test_engines.py``
requires identical traces from both on every scenario and on random plans.

The engine replaced simpy for speed: simpy's resources cost ~4 events and
~25 us of Python per operation, which capped the thread strategies at ~1.3x real time; the
timelines of the hand-written tests (``tests/test_machine_timelines.py``) are unchanged, and
``tests/test_machine_properties.py`` checks on random plans (many exact ties) that the run
shortcut gives the op-by-op timeline, that no CPU runs two things at once, that every
computation is charged in full and that critical sections of a lock never overlap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from heapq import heappop, heappush
from typing import Any

import numpy as np

from simsrv.machine import compiled_engine
from simsrv.machine.array_path import execute_and_record
from simsrv.machine.compiled_engine import phased_backoff
from simsrv.machine.phased import phased_timeline
from simsrv.machine.plan import (
    SPAWNER_CPU,
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    Release,
    RunFirst,
    Spawn,
    Thread,
)
from simsrv.machine.plan_arrays import PlanArrays
from simsrv.machine.trace import LockHolds, Settled, Trace, is_wait, wait_codes

US_PER_S = 1e6

_SERIAL, _PHASED, _EVENTS = (
    compiled_engine.SERIAL,
    compiled_engine.PHASED,
    compiled_engine.EVENTS,
)
# event kinds
_RESUME = 0  # continue at the current operation (after yielding to earlier threads)
_FINISH = 1  # the current computation ends (stale if the token changed)
_RUN_END = 2  # a run of computations on an uncontended CPU ends (stale if the token changed)
_WAKE = 3  # a wait ends (barrier, lock, join, run-first): record it, go to the next operation
_TIMER = 4  # a run-first parent may migrate


class PlanError(RuntimeError):
    """A strategy produced an inconsistent plan (a bug in the strategy, not user input)."""


class _Run:
    """One thread of one frame while it executes."""

    __slots__ = (
        "began",
        "cpu",
        "ctx",
        "finished",
        "frame",
        "held",
        "joiners",
        "last",
        "name",
        "ops",
        "pc",
        "rank",
        "remaining",
        "run_end_pc",
        "run_id",
        "run_start",
        "speed",
        "spawned",
        "token",
    )

    def __init__(self, thread: Thread, frame: int, rank: int, ctx: _Frame, start_us: float) -> None:
        self.name = thread.name
        self.ops = thread.ops
        self.spawned = thread.spawned
        self.frame = frame
        self.rank = rank
        self.cpu = thread.cpu  # SPAWNER_CPU until spawned; changes when a parent migrates
        self.ctx = ctx
        self.pc = 0
        self.began = start_us  # start of the current computation or wait, us (the frame's
        # start until the thread first computes or waits)
        self.held: set[Hashable] = set()
        self.joiners: list[_Run] = []
        self.finished = False
        self.token = 0  # invalidates scheduled _FINISH / _RUN_END / _TIMER events
        self.run_start = 0.0  # a run of computations: its start, us, and the pc after it
        self.run_end_pc = -1  # -1: not in a run
        self.run_id = 0  # counts its runs
        self.remaining = 0.0  # SMT: work left in the current computation, us at speed 1
        self.speed = 1.0
        self.last = 0.0


class _Lock:
    """A FIFO mutex.  ``release_at`` is set while its holder is inside a run of computations
    that releases it at that known time (us): the release needs no event unless someone waits."""

    __slots__ = ("holder", "name", "release_at", "release_run", "since", "waiters")

    def __init__(self, name: Hashable) -> None:
        self.name = name
        self.holder: _Run | None = None
        self.since = 0.0  # when the holder took it, us
        self.release_at: float | None = None
        self.release_run = 0  # the holder's run_id of the run that releases it
        self.waiters: deque[_Run] = deque()


class _Frame:
    """A frame's plan while it executes: its threads by name and its barriers."""

    __slots__ = ("barriers", "frame", "runs")

    def __init__(self, plan: FramePlan, frame: int, start_us: float) -> None:
        self.frame = frame
        self.runs = {t.name: _Run(t, frame, i, self, start_us) for i, t in enumerate(plan.threads)}
        if len(self.runs) != len(plan.threads):
            raise PlanError(f"thread names are not unique: {[t.name for t in plan.threads]}")
        self.barriers = {name: [parties, 0, []] for name, parties in plan.barriers.items()}


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
        Use the run shortcut (module docstring); ``False`` schedules every computation as its
        own event.  Both give the same trace (tests check); the shortcut is only faster.
    background:
        Busy share of each CPU taken by other programs (CPU 0 first; missing CPUs: 0).
    """

    def __init__(
        self,
        cpus: int,
        smt_per_core: int = 1,
        smt_throughput: float = 1.0,
        runs: bool = True,
        background: tuple[float, ...] | list[float] = (),
    ) -> None:
        self.cpus = cpus
        self._runs = runs
        self.now_us = 0.0
        self._heap: list[tuple] = []
        self._seq = 0
        # how far the processing of simultaneous events has got: the largest key processed
        # (an event pushed for this instant with a smaller key is processed after it)
        self._position: tuple = (-1.0, -1, -1)
        self._holder: list[_Run | None] = [None] * cpus  # thread computing on each CPU
        self._queue: list[deque[_Run]] = [deque() for _ in range(cpus)]
        self._locks: dict[Hashable, _Lock] = {}
        self._live: dict[_Run, None] = {}  # threads started and not ended, in start order
        self._phased_refusals = 0  # phased-shortcut refusals in a row (see _execute_phased)
        self._phased_skip = 0  # frames left that skip the attempt
        self._tables: dict[tuple, tuple] = {}  # a plan's names -> _plan_tables
        self._last_tables: tuple = (None, None, None, None)  # the last plan's names, tables
        self._scratch = (np.empty((4, 0), np.int64), np.empty((4, 0)))  # the engine's rows
        self._out = np.empty(4)
        self.smt_per_core = smt_per_core
        self.smt_throughput = smt_throughput
        self._smt = smt_per_core > 1 and smt_throughput < 1.0
        self.background = tuple(background) + (0.0,) * (cpus - len(background))
        self._share = [1.0 - b for b in self.background]  # the server's share of each CPU
        self._background = any(b > 0.0 for b in self.background)
        self._speeds = self._smt or self._background  # computations at a speed, op by op
        self._compiled = runs and not self._speeds  # plans as arrays may run compiled
        self._core_busy = [0] * (-(-cpus // smt_per_core)) if self._smt else []
        self.trace = Trace()
        self.charged_us: list[float] = []
        """CPU time each executed frame's plan charged, us, in execution order (since a
        reader last took them: :mod:`simsrv.trace_stream` empties it with the stores)."""
        self.lock_holds = LockHolds(threads=self.trace.threads)
        """Every critical section: ``(lock, frame, thread, start_us, end_us)`` (the phased
        shortcut logs its thread's whole phase, a superset).  :meth:`finish` closes the
        sections whose release happened inside a run of computations."""

    @property
    def idle(self) -> bool:
        """True when no thread of any earlier frame is still running."""
        return not self._live

    def settled_us(self, next_start_us: float) -> Settled:
        """How far the records are complete when the next frame starts at ``next_start_us``
        or later (:class:`~simsrv.machine.trace.Settled`).  A live thread's next row starts at
        its current computation's or wait's start (``began``; a run of computations: its
        ``run_start``); a critical section logged later at its lock's ``since`` (a release
        inside a run of computations is logged lazily, at the lock's next acquisition)."""
        trace_us, open_frame = next_start_us, None
        for run in self._live:
            since = run.run_start if run.run_end_pc >= 0 else run.began
            if since < trace_us:
                trace_us = since
            if open_frame is None or run.frame < open_frame:
                open_frame = run.frame
        holds_us = trace_us
        for state in self._locks.values():
            if state.holder is not None and state.since < holds_us:
                holds_us = state.since
        return Settled(trace_us, holds_us, open_frame)

    # -- the state the compiled frame loop (simsrv.compiled_loop) runs on ----------------------

    @property
    def runs_arrays_compiled(self) -> bool:
        """Whether plans as arrays may run in the compiled engine (full speed, run shortcut)."""
        return self._compiled

    @property
    def idle_for_arrays(self) -> bool:
        """True when the compiled engine may run the next plan: no thread alive, no event."""
        return not self._live and not self._heap

    def array_tables(self, plan: PlanArrays) -> tuple:
        """The tables of ``plan``'s names (:meth:`_plan_tables`): which activities are waits,
        and the trace and lock-hold codes of its threads, activities and locks."""
        return self._plan_tables(plan)

    def scratch_rows(self, ops: int) -> tuple[np.ndarray, np.ndarray]:
        """The engine's scratch rows, grown to at least ``ops`` operations."""
        if ops > self._scratch[0].shape[1]:
            self._scratch = (np.empty((4, ops), np.int64), np.empty((4, ops)))
        return self._scratch

    @property
    def engine_out(self) -> np.ndarray:
        """The compiled engine's result array (4,)."""
        return self._out

    @property
    def phased_backoff(self) -> tuple[int, int]:
        """The phased shortcut's back-off: frames left that skip it, refusals in a row."""
        return self._phased_skip, self._phased_refusals

    @phased_backoff.setter
    def phased_backoff(self, value: tuple[int, int]) -> None:
        self._phased_skip, self._phased_refusals = value

    @property
    def position(self) -> tuple[float, int, int]:
        """How far the processing of simultaneous events has got: (time us, frame, key)."""
        return self._position

    @position.setter
    def position(self, value: tuple[float, int, int]) -> None:
        self._position = value

    def execute(self, plan: FramePlan | PlanArrays, frame: int, start_s: float) -> float:
        """Run ``plan`` as frame ``frame`` from ``start_s``; return when its coordinator ends, s.

        A plan as arrays runs in the compiled engine (:mod:`simsrv.machine.compiled_engine`)
        when it can (an idle machine at full speed, one thread per CPU), else as objects; both
        give the same result."""
        start_us = start_s * US_PER_S
        if type(plan) is PlanArrays:
            if self._compiled and not self._live and not self._heap and not plan.spawns():
                end_us = self._execute_arrays(plan, frame, start_us)
                if end_us is not None:
                    return end_us / US_PER_S
            plan = plan.to_plan()
        if not self._live and not self._background and plan.is_serial():
            return self._execute_serial(plan.threads[0], frame, start_us) / US_PER_S
        if self._runs and not self._live and not self._heap and not self._speeds:
            end_us = self._execute_phased(plan, frame, max(start_us, self.now_us))
            if end_us is not None:
                return end_us / US_PER_S
        self.charged_us.append(plan.charged_us())
        self._check(plan)
        self.run_until(start_us)
        self._position = max(self._position, (start_us, frame, -1))  # earlier frames first
        ctx = _Frame(plan, frame, start_us)
        for run in ctx.runs.values():
            if not run.spawned:
                self._live[run] = None
                self._advance(run)
        coordinator, heap = ctx.runs[plan.threads[0].name], self._heap
        while not coordinator.finished:
            if not heap:
                raise PlanError(f"frame {frame}: plan deadlocked (no event can happen)")
            self._step(heappop(heap))
        self.run_until(self.now_us)  # what else ends at this instant (the next frame would)
        return self.now_us / US_PER_S

    def _execute_arrays(self, plan: PlanArrays, frame: int, start_us: float) -> float | None:
        """``plan`` in the compiled engine: the frame's end, us (the serial path: the
        coordinator's end), or None when the engine refuses it (nothing is recorded then).
        One compiled call executes it and appends its rows to the trace and the lock holds
        (:mod:`simsrv.machine.array_path`); this is the hot path of the thread strategies,
        hence the inlined checks."""
        last = self._last_tables
        if last[0] is plan.thread_names and last[1] is plan.activities and last[2] is plan.locks:
            waits, threads, activities, locks = last[3]
        else:
            waits, threads, activities, locks = self._plan_tables(plan)
        n = len(plan.kind)
        scratch_ints, scratch_times = self._scratch
        if n > scratch_ints.shape[1]:
            size = max(n, 2 * scratch_ints.shape[1], 64)
            self._scratch = scratch_ints, scratch_times = (
                np.empty((4, size), np.int64),
                np.empty((4, size)),
            )
        trace, holds = self.trace, self.lock_holds
        if trace.pending:
            trace.flush()
        if holds.pending:
            holds.flush()
        if trace.size + n > len(trace.times):
            trace.reserve(n)
        if holds.size + n > len(holds.times):
            holds.reserve(n)
        out = self._out
        try_phased = self._phased_skip == 0
        status = execute_and_record(
            plan.thread, plan.kind, plan.cost, plan.arg, plan.activity, plan.thread_cpu,
            plan.barrier_parties, waits, len(plan.locks), len(plan.activities), self.cpus,
            start_us, self.now_us, try_phased, scratch_ints, scratch_times, frame, threads,
            activities, locks, trace.ints, trace.times, trace.size, holds.ints, holds.times,
            holds.size, out,
        )  # fmt: skip
        if status < 0:
            return None
        self._phased_skip, self._phased_refusals = phased_backoff(
            status, try_phased, self._phased_skip, self._phased_refusals
        )
        end_us, charged, rows, sections = out.tolist()
        self.charged_us.append(charged)
        trace.size += int(rows)
        holds.size += int(sections)
        if status != _SERIAL:
            self.now_us = end_us
            position = (end_us, frame, len(plan.thread_names))
            if position > self._position:
                self._position = position
        return end_us

    def _plan_tables(self, plan: PlanArrays) -> tuple:
        """For a plan's names (thread names, activities, locks): which activities are waits
        (one more: lock waits) and the codes of its threads, activities (and ``lock_wait``)
        and locks in the trace and the lock holds.  Strategies reuse their name tuples from
        frame to frame, so the last plan's tables are found by identity."""
        names, activities, locks = plan.thread_names, plan.activities, plan.locks
        last = self._last_tables
        if last[0] is names and last[1] is activities and last[2] is locks:
            return last[3]
        key = (names, activities, locks)
        tables = self._tables.get(key)
        if tables is None:
            acts = (*activities, "lock_wait")
            tables = self._tables[key] = (
                wait_codes(acts),
                self.trace.threads.codes_of(names),
                self.trace.activities.codes_of(acts),
                self.lock_holds.locks.codes_of(locks),
            )
        self._last_tables = (names, activities, locks, tables)
        return tables

    def _execute_phased(self, plan: FramePlan, frame: int, start_us: float) -> float | None:
        """The phased shortcut (:mod:`simsrv.machine.phased`): the frame's end, us, or None
        when it does not apply or the back-off skips it (:func:`phased_backoff
        <simsrv.machine.compiled_engine.phased_backoff>`); the result is the same either
        way."""
        tried = self._phased_skip == 0
        timeline = (
            phased_timeline(
                plan, frame, start_us, self.cpus, self.lock_holds.pending, self.charged_us
            )
            if tried
            else None
        )
        self._phased_skip, self._phased_refusals = phased_backoff(
            _EVENTS if timeline is None else _PHASED, tried, self._phased_skip,
            self._phased_refusals,
        )  # fmt: skip
        if timeline is None:
            return None
        rows, end_us = timeline
        self.trace.pending += rows
        self.now_us = end_us
        self._position = max(self._position, (end_us, frame, len(plan.threads)))
        return end_us

    def run_until(self, time_us: float = float("inf")) -> None:
        """Process every event up to ``time_us`` (all of them by default), then set the clock."""
        heap = self._heap
        while heap and heap[0][0] <= time_us:
            self._step(heappop(heap))
        if time_us != float("inf") and time_us > self.now_us:
            self.now_us = time_us

    def finish(self) -> None:
        """Run every thread still alive to its end (threads that outlive the last frame) and
        close the critical sections released inside runs; the trace is then complete."""
        self.run_until()
        for state in self._locks.values():
            if state.holder is not None and state.release_at is not None:
                self._log_hold(state, state.release_at)
                state.holder = state.release_at = None

    def _log_hold(self, state: _Lock, end_us: float) -> None:
        holder = state.holder
        self.lock_holds.pending.append((state.name, holder.frame, holder.name, state.since, end_us))

    def _execute_serial(self, thread: Thread, frame: int, now: float) -> float:
        if not 0 <= thread.cpu < self.cpus:
            raise PlanError(f"thread {thread.name!r}: cpu {thread.cpu} out of range")
        rows, cpu, name = self.trace.pending, thread.cpu, thread.name
        charged = 0.0
        # Trace.record inlined (hot path): zero-length intervals are skipped the same way
        for activity, cost in thread.ops:
            if cost > 0:
                end = now + cost
                rows.append((frame, cpu, name, activity, now, end))
                now = end
                charged += cost
        self.charged_us.append(charged)
        return now

    # -- events ------------------------------------------------------------------------------

    def _push(self, time: float, run: _Run, kind: int) -> None:
        self._seq += 1
        heappush(self._heap, (time, run.frame, run.rank, self._seq, kind, run, run.token))

    def _step(self, event: tuple) -> None:
        time, _, _, _, kind, run, token = event
        if event[:3] > self._position:
            self._position = event[:3]
        if kind != _RESUME and kind != _WAKE and token != run.token:
            return  # superseded (an SMT speed change, a split run, a parent already woken)
        self.now_us = time
        if kind == _FINISH:
            self._end_compute(run)
        elif kind == _RUN_END:
            self._end_run(run)
        elif kind == _WAKE:
            op = run.ops[run.pc]
            activity = _WAIT_ACTIVITY.get(type(op)) or op.activity
            if time > run.began:
                self.trace.pending.append((run.frame, run.cpu, run.name, activity, run.began, time))
            run.pc += 1
        elif kind == _TIMER:
            self._maybe_migrate(run)
            return
        self._advance(run)

    # -- a thread's operations ---------------------------------------------------------------

    def _advance(self, run: _Run) -> None:
        """Run ``run``'s operations from ``run.pc`` until it must wait or ends."""
        ops, heap, now = run.ops, self._heap, self.now_us
        key = (now, run.frame, run.rank)
        count = len(ops)
        while run.pc < count:
            op = ops[run.pc]
            kind = type(op)
            if kind is Compute and op.cost_us <= 0:
                run.pc += 1
                continue
            if heap and heap[0][0] <= now and heap[0] < key:  # an earlier thread acts first
                self._push(now, run, _RESUME)
                return
            if kind is Compute:
                self._request_cpu(run)
                return
            if kind is BarrierWait:
                self._arrive(run, op)
                return
            if kind is Acquire:
                if not self._acquire(run, op.lock):
                    return
            elif kind is Release:
                self._release(run, op.lock)
            elif kind is Spawn:
                self._spawn(run, op.thread)
            elif kind is Join or kind is RunFirst:
                target = run.ctx.runs.get(op.thread)
                if target is None:
                    raise PlanError(f"{run.name!r} joins unknown thread {op.thread!r}")
                if not target.finished:
                    run.began = now
                    target.joiners.append(run)
                    if kind is RunFirst:
                        self._push(now + op.migrate_after_us, run, _TIMER)
                    return
            run.pc += 1
        self._end_thread(run)

    def _end_thread(self, run: _Run) -> None:
        if run.held:
            raise PlanError(f"thread {run.name!r} ended holding locks {sorted(map(str, run.held))}")
        run.finished = True
        del self._live[run]
        for joiner in run.joiners:
            joiner.token += 1  # a run-first parent's migration timer is void
            self._push(self.now_us, joiner, _WAKE)
        run.joiners.clear()

    # -- CPUs --------------------------------------------------------------------------------

    def _request_cpu(self, run: _Run) -> None:
        cpu = run.cpu
        holder = self._holder[cpu]
        if holder is None:
            self._begin_compute(run)
            return
        if holder.run_end_pc >= 0 and self._split_run(holder):
            self._begin_compute(run)  # the run was over at this instant: the CPU is free
            return
        self._queue[cpu].append(run)

    def _begin_compute(self, run: _Run) -> None:
        """``run`` takes its (free) CPU for the computation at ``run.pc`` and the ones after."""
        now, cpu, ops = self.now_us, run.cpu, run.ops
        self._holder[cpu] = run
        run.began = now
        if self._speeds:
            self._begin_smt(run, ops[run.pc].cost_us)
            return
        if not self._runs or self._queue[cpu]:  # others wait: it gives the CPU up after one
            run.token += 1
            self._push(now + ops[run.pc].cost_us, run, _FINISH)
            return
        end, pc = now, run.pc
        run.run_id += 1
        while pc < len(ops):
            op = ops[pc]
            kind = type(op)
            if kind is Compute:
                if op.cost_us > 0:
                    end = end + op.cost_us
            elif kind is Release:
                if not self._defer_release(run, op.lock, end):
                    break  # somebody waits for the lock: release it as an operation
            else:
                break
            pc += 1
        run.run_start, run.run_end_pc = now, pc
        self._push(end, run, _RUN_END)

    def _end_run(self, run: _Run) -> None:
        """A run of computations is over: record it, free the CPU, go on after it."""
        self._record_run(run, run.run_end_pc)
        run.pc, run.run_end_pc = run.run_end_pc, -1
        self._free_cpu(run.cpu)

    def _record_run(self, run: _Run, stop_pc: int) -> float:
        """Record the run's computations before ``stop_pc``; return when the last ended, us."""
        rows, t = self.trace.pending, run.run_start
        frame, cpu, name = run.frame, run.cpu, run.name
        for op in run.ops[run.pc : stop_pc]:
            if type(op) is Compute and op.cost_us > 0:
                end = t + op.cost_us
                rows.append((frame, cpu, name, op.activity, t, end))
                t = end
        return t

    def _split_run(self, run: _Run) -> bool:
        """Another thread asks for ``run``'s CPU: from now on ``run`` computes op by op.

        Returns True when the run turns out to be over at this instant (its thread goes on
        after it and the CPU is free)."""
        now = self.now_us
        first = self._position < (now, run.frame, run.rank)  # the run's thread has not acted now
        t, pc, ops = run.run_start, run.pc, run.ops
        while True:
            if pc == run.run_end_pc:  # every computation is over: end the run now
                run.token += 1
                self._end_run(run)
                self._push(now, run, _RESUME)
                return True
            op = ops[pc]
            if type(op) is Compute and op.cost_us > 0:
                end = t + op.cost_us
                if end > now or (end == now and first):
                    break
                t = end
            pc += 1
        # ops before pc are over; op pc runs from t to t + cost and keeps the CPU; the
        # releases after it will happen later than planned: they wait for their turn again
        self._undefer_releases(run, pc + 1)
        self._record_run(run, pc)
        run.pc, run.run_end_pc, run.began = pc, -1, t
        run.token += 1
        self._push(t + run.ops[pc].cost_us, run, _FINISH)
        return False

    def _end_compute(self, run: _Run) -> None:
        op = run.ops[run.pc]
        self.trace.pending.append(
            (run.frame, run.cpu, run.name, op.activity, run.began, self.now_us)
        )
        if self._smt:
            self._smt_change(run.cpu, -1)
        run.pc += 1
        self._free_cpu(run.cpu)

    def _free_cpu(self, cpu: int) -> None:
        queue = self._queue[cpu]
        self._holder[cpu] = None
        if queue:
            self._begin_compute(queue.popleft())

    def _idle_cpu(self, exclude: int) -> int | None:
        """The lowest-numbered CPU with no thread running or queued, other than ``exclude``."""
        for index in range(self.cpus):
            if index != exclude and self._holder[index] is None and not self._queue[index]:
                return index
        return None

    # -- SMT and background load: computations at a speed ---------------------------------

    def _begin_smt(self, run: _Run, cost: float) -> None:
        run.remaining, run.last = cost, self.now_us
        speed = self._smt_change(run.cpu, +1) if self._smt else 1.0
        run.speed = speed * self._share[run.cpu]
        self._reschedule(run)

    def _smt_change(self, cpu: int, delta: int) -> float:
        """A logical CPU of ``cpu``'s core starts (+1) or stops (-1) computing: its siblings'
        computations change speed now (work done so far is kept); return the new speed."""
        per_core = self.smt_per_core
        core = cpu // per_core
        self._core_busy[core] += delta
        speed = 1.0 if self._core_busy[core] <= 1 else self.smt_throughput
        for sibling in range(core * per_core, min(self.cpus, (core + 1) * per_core)):
            other = self._holder[sibling]
            if sibling == cpu or other is None:
                continue
            other.remaining -= (self.now_us - other.last) * other.speed
            if other.remaining < 0.0:  # rounding: the work is done now, not before now
                other.remaining = 0.0
            other.last = self.now_us
            other.speed = speed * self._share[sibling]
            self._reschedule(other)
        return speed

    def _reschedule(self, run: _Run) -> None:
        run.token += 1
        self._push(run.last + run.remaining / run.speed, run, _FINISH)

    # -- synchronisation ---------------------------------------------------------------------

    def _arrive(self, run: _Run, op: BarrierWait) -> None:
        barrier = run.ctx.barriers.get(op.name)
        if barrier is None:
            raise PlanError(f"{run.name!r} waits at undeclared barrier {op.name!r}")
        if not is_wait(op.activity):
            raise PlanError(f"{run.name!r}: barrier activity {op.activity!r} must end in _wait")
        barrier[1] += 1
        if barrier[1] > barrier[0]:
            raise PlanError(f"barrier {op.name!r}: more than {barrier[0]} parties arrived")
        run.began = self.now_us
        barrier[2].append(run)
        if barrier[1] == barrier[0]:
            for waiter in barrier[2]:
                self._push(self.now_us, waiter, _WAKE)

    def _lock(self, lock: Hashable) -> _Lock:
        state = self._locks.get(lock)
        if state is None:
            state = self._locks[lock] = _Lock(lock)
        return state

    def _acquire(self, run: _Run, lock: Hashable) -> bool:
        """Take ``lock`` now (True) or queue for it (False)."""
        state = self._lock(lock)
        holder = state.holder
        if holder is not None and state.release_at is not None:
            # released inside a run: over if before now (at now: if the holder acts first)
            at = state.release_at
            in_run = holder.run_end_pc >= 0 and holder.run_id == state.release_run
            if at < self.now_us or not in_run or self._position >= (at, holder.frame, holder.rank):
                self._log_hold(state, at)
                holder = state.holder = state.release_at = None
            else:  # the holder must now release it as an operation, at its time
                self._truncate_run(holder, lock)
        if holder is None:
            state.holder, state.since = run, self.now_us
            run.held.add(lock)
            return True
        run.began = self.now_us
        state.waiters.append(run)
        return False

    def _held(self, run: _Run, lock: Hashable) -> _Lock:
        """``lock``'s state, which ``run`` must hold (and not have released inside a run)."""
        state = self._locks.get(lock)
        if state is None or state.holder is not run or state.release_at is not None:
            raise PlanError(f"{run.name!r} releases {lock!r}, which it does not hold")
        return state

    def _release(self, run: _Run, lock: Hashable) -> None:
        state = self._held(run, lock)
        run.held.discard(lock)
        self._log_hold(state, self.now_us)
        state.since = self.now_us
        if state.waiters:
            waiter = state.waiters.popleft()
            state.holder = waiter
            waiter.held.add(lock)
            self._push(self.now_us, waiter, _WAKE)
        else:
            state.holder = None

    def _defer_release(self, run: _Run, lock: Hashable, at: float) -> bool:
        """``run`` will release ``lock`` at ``at`` (us) inside its run of computations, without
        an event; False (nothing done) when a thread already waits for the lock."""
        state = self._held(run, lock)
        if state.waiters:
            return False
        run.held.discard(lock)
        state.release_at, state.release_run = at, run.run_id
        return True

    def _undefer_releases(self, run: _Run, start: int) -> None:
        """The releases of ``run``'s run from op ``start`` on happen later than the run
        planned: ``run`` still holds those locks and releases them as plain operations."""
        for op in run.ops[start : run.run_end_pc]:
            if type(op) is Release:
                self._locks[op.lock].release_at = None
                run.held.add(op.lock)

    def _truncate_run(self, run: _Run, lock: Hashable) -> None:
        """End ``run``'s run of computations where it releases ``lock`` (someone waits now):
        the release and what follows then run as operations, as without the shortcut."""
        ops, t = run.ops, run.run_start
        for pc in range(run.pc, run.run_end_pc):
            op = ops[pc]
            if type(op) is Compute and op.cost_us > 0:
                t = t + op.cost_us
            elif type(op) is Release and op.lock == lock:
                break
        self._undefer_releases(run, pc)
        run.run_end_pc = pc
        run.token += 1
        self._push(t, run, _RUN_END)

    def _spawn(self, run: _Run, name: str) -> None:
        child = run.ctx.runs.get(name)
        if child is None or not child.spawned or child.pc or child.finished:
            raise PlanError(f"{run.name!r} spawns {name!r}, not a spawned thread of the plan")
        if child.cpu == SPAWNER_CPU:
            child.cpu = run.cpu
        self._live[child] = None
        self._push(self.now_us, child, _RESUME)

    def _maybe_migrate(self, run: _Run) -> None:
        """A run-first parent has waited ``migrate_after_us``: move to an idle CPU if any."""
        idle = self._idle_cpu(exclude=run.cpu)
        if idle is None:
            return  # it keeps waiting for the child
        target = run.ctx.runs[run.ops[run.pc].thread]
        target.joiners.remove(run)
        self.trace.pending.append(
            (run.frame, run.cpu, run.name, "runqueue_wait", run.began, self.now_us)
        )
        run.cpu = idle
        run.pc += 1
        self._advance(run)

    # -- plan checks -------------------------------------------------------------------------

    def _check(self, plan: FramePlan) -> None:
        """Per-frame checks of the threads; operations are checked as they execute."""
        if len(plan.threads) == 0 or plan.threads[0].spawned:
            raise PlanError("the coordinator (threads[0]) must exist and not be spawned")
        cpus = self.cpus
        for t in plan.threads:
            if not 0 <= t.cpu < cpus and not (t.spawned and t.cpu == SPAWNER_CPU):
                raise PlanError(f"thread {t.name!r}: cpu {t.cpu} out of range 0..{cpus - 1}")


_WAIT_ACTIVITY: dict[type, Any] = {
    Acquire: "lock_wait",
    Join: "join_wait",
    RunFirst: "runqueue_wait",
}
