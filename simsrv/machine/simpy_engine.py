"""The reference engine (``machine.engine = "simpy"``): the model of the machine, executed op by
op with simpy.  Its docstring is the machine's specification; the fast engine
(:mod:`simsrv.machine.engine`, compiled, with exact shortcuts) must give the same trace rows,
bit for bit (``tests/test_engines.py`` runs every scenario and random plans on both).

The model
---------
* Each CPU runs one thread at a time.  A thread's :class:`Compute` holds its CPU for the cost;
  threads that share a CPU take turns at operation boundaries, in request order (FIFO), so two
  threads on one CPU take the sum of their costs and two threads on two CPUs the maximum.
* A blocked thread (barrier, lock, join) does not hold its CPU; the time it waits is recorded as
  a wait interval (``barrier_wait`` or a named barrier's ``*_wait``, ``lock_wait``,
  ``join_wait``, ``runqueue_wait``) that does not count as busy.
* Locks are FIFO mutexes that persist across frames; barriers belong to one frame's plan.
  With ``lock_barging`` (a futex mutex) a release frees the lock and wakes its first sleeping
  waiter, which tries again ``signal_send_us + signal_wakeup_us`` later (others may take it
  meanwhile; its waits and wake-ups are one ``lock_wait``).
* A :class:`SpinSection` (a kernel spinlock around a computation) takes the thread's CPU
  first, as a computation does, and keeps it: while another thread holds the lock the thread
  busy-waits there (a ``lock_spin`` interval, busy CPU time the machine charges itself; it
  does not slow SMT siblings, the spin loop's ``pause``), the lock going to the spinners in
  arrival order at the holder's release, with no signal (a kernel lock); with the lock it
  computes the section's cost, releases the lock, and gives the CPU up.
* A spawned thread starts when its spawner's :class:`Spawn` runs, on its own CPU or (``cpu =
  SPAWNER_CPU``) on its spawner's; :class:`Join` waits for a thread's end.  A :class:`RunFirst`
  parent waits for its child like a join, unless after ``migrate_after_us`` another CPU is idle
  (no thread on it, none queued): it then moves to the lowest-numbered idle CPU and goes on
  there (Linux's idle balance pulling a queued task).  Threads may outlive their frame (a
  worker's teardown overlapping the next frame).
* Optional background load: CPU ``i`` is busy a share ``background[i]`` of the time with
  programs outside the server (time-sliced finely), so the server's computations on it run
  at ``1 - background[i]`` of its speed (a cost ``c`` takes ``c / (1 - share)``), on top of
  any SMT slowdown.
* Optional SMT: logical CPU ``i`` is on core ``i // smt_per_core``.  A computation runs at
  speed 1 (one unit of cost per us) while it is the only computing logical CPU of its core and
  at ``smt_throughput`` while a sibling computes too; speeds change the instant a sibling starts
  or stops and the work done is kept (cost ``c`` ends when ``t_alone + throughput * t_shared =
  c``).  Blocked threads do not compute, so they do not slow their siblings.
* Optional thread library that wakes sleepers with signals (LinuxThreads: ``kill()`` of the
  restart signal, the sleeper suspended in ``sigsuspend``; ``signal_send_us``,
  ``signal_wakeup_us`` > 0).  When a barrier opens, the last thread to arrive sends the
  sleepers their signals one after another in arrival order: it computes ``k *
  signal_send_us`` (activity ``signal_send``) and the ``i``-th sleeper is woken at ``now + i
  * signal_send_us``, then computes ``signal_wakeup_us`` (``signal_wakeup``) before going on.
  A release that hands a lock to a waiter computes ``signal_send_us`` right after the release;
  the waiter holds the lock from the release, is woken at ``now + signal_send_us`` and
  computes ``signal_wakeup_us``.  Neither is charged by the plan (the machine's own cost).
* Optional interrupt CPU (``irq_cpu``, ``softirq_us`` > 0): the network card's interrupts
  go to logical CPU ``irq_cpu``, and each received packet (:meth:`add_interrupts`) costs it
  ``softirq_us`` of softirq, first come first served: a packet's softirq starts at its
  arrival or when the previous packet's ends; the packet is on its socket when its softirq
  ends.  A packet that finds more than ``max_backlog`` packets waiting for their softirq (its
  start after the arrival) is dropped, and so is every later one that finds any waiting,
  until one finds none (Linux 2.4's ``netif_rx`` and its throttle).  While a softirq runs,
  the thread computing on that CPU stands still (its interval so far is recorded; it goes
  on, with the work done kept, when the CPU's busy period ends, and a computation whose work
  is done as the period starts ends then as planned); a thread that starts computing there
  waits for the period's end; with SMT the softirq is a computing logical CPU for its
  siblings.  A period's start or end comes before every other event of its instant.  Beyond
  one packet per ``softirq_us`` the CPU is never free again: its thread starves (a receive
  livelock, as 2.4 without NAPI; the gaps ``ksoftirqd`` would leave it are not modelled).
* Optional CPU quota (``quota``, CFS bandwidth control, :mod:`simsrv.machine.quota`): the
  server's threads together may run ``quota_us`` of CPU time in each period ``[k P, (k + 1)
  P)`` of ``period_us``; a thread runs while it computes or spins on its CPU, and the time
  used counts every running thread's (two running threads use it twice as fast).  The instant
  the quota is used up, the group is throttled: every thread running stands still (its
  interval so far is recorded; it goes on, with the work done kept, when the period ends,
  its next interval starting then; a computation whose work is done at that instant ends
  then as planned), and a thread that starts a computation or a spin meanwhile waits for the
  period's end.  At the period's end the quota is whole again.  The quota's events come
  before every other event of their instant.  Not with background load or an interrupt CPU.
* Optional cold start (``cold_start``, :mod:`simsrv.machine.cold_start`): a CPU is idle from
  the instant its last computation or spin ends with no thread queued for it (at the start,
  every CPU has been idle since time 0).  A thread that takes an idle CPU after ``g`` > 0 us
  of idleness first computes ``cold(g) = wake_us + refill_us * (1 - exp(-g / decay_us))`` there
  (``cold_start``, a cost the machine charges itself; the CPU is then busy), then its
  computation, or for a spin section its attempt at the lock.  A CPU handed to a queued
  thread was not idle; a thread standing still (a softirq, a throttle) keeps its CPU.
* **Simultaneous events.**  When several threads act at the same simulated instant, they act in
  a fixed order: threads of earlier frames first, then by their index in the plan (the
  coordinator first).  E.g. two threads released by one barrier that share a CPU run in plan
  order; two threads that request a free lock at the same instant: the lower index gets it.
* A frame ends when its coordinator (``threads[0]``) has run all its operations.
* Simulated time runs in microseconds internally; the API speaks seconds.

How it is written
-----------------
Every thread of a frame is a simpy *process* that walks its operations one by one; every CPU
and every lock is a simpy ``Resource`` of capacity 1 (FIFO); a barrier, a thread's end and
each timer are simpy *events*.  It imports nothing from the fast engine.

How simultaneous events keep the fast engine's order
----------------------------------------------------
The fast engine orders what happens at one instant by the key ``(frame, index in the plan)``:
earlier frames first, then the coordinator, then the other threads.  Here every event a thread
waits for is scheduled with a simpy *priority* that encodes that key (:meth:`_priority`), so
simpy's queue ``(time, priority, insertion)`` pops them in the fast engine's order.  Before each
operation a thread yields a *turn*: an event for now at its own priority, so that a thread with
a smaller key that has something to do at this instant acts first, exactly as the fast engine
makes a thread yield to earlier keys.  Events that simpy triggers itself (a resource granted, a
barrier or a thread's end succeeding, a condition) carry simpy's own priorities 0 and 1, which
come before every key: a process woken that way continues at once, as the fast engine's
synchronous hand-overs do (a freed CPU goes to the next thread in its queue in the same step).

Times are microseconds, as in the fast engine; timers are scheduled at absolute times computed
with the same floating-point expressions (``now + cost``, and with SMT ``now + remaining /
speed``), so that the trace's numbers are the same floats.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Generator, Hashable
from heapq import heappush
from typing import Any

import numpy as np
import simpy

from simsrv.core.uninitialised import empty
from simsrv.machine.cold_start import ColdStart
from simsrv.machine.plan import (
    SPAWNER_CPU,
    US_PER_S,
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    PlanError,
    Release,
    RunFirst,
    Spawn,
    SpinSection,
    Thread,
)
from simsrv.machine.plan_arrays import PlanArrays
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
    is_wait,
)

RANKS = 1 << 20  # threads per frame that the priority encoding can tell apart
FIRST_KEY = 2  # priorities below are simpy's own (URGENT = 0, NORMAL = 1)


class _Timer(simpy.Event):
    """A timeout with a priority: it happens ``delay`` us from now, after the events of that
    instant with a smaller priority (``simpy.Timeout`` always uses ``NORMAL``)."""

    def __init__(self, env: simpy.Environment, priority: int, delay: float) -> None:
        super().__init__(env)
        self._ok, self._value = True, None  # as simpy.Timeout: triggered when created
        env.schedule(self, priority, delay)


class _Environment(simpy.Environment):
    """simpy's environment with a clock that can be set to the start of a frame (the fast
    engine starts a frame at exactly ``start_s * 1e6``; ``now + (start - now)`` may round)."""

    def schedule_at(self, event: simpy.Event, priority: int, time: float) -> None:
        """Schedule ``event`` at exactly ``time`` (us; ``now + (time - now)`` may round)."""
        heappush(self._queue, (time, priority, next(self._eid), event))

    def jump_to(self, time: float) -> None:
        """Set the clock to ``time`` (us); no event may be pending before it."""
        if self.peek() < time or (time < self._now and self.peek() != float("inf")):
            raise RuntimeError("events pending before the new time")
        self._now = time


class _ThreadState:
    """One thread of one frame: where it runs, what it computes, what it waits for."""

    def __init__(self, thread: Thread, frame: int, rank: int) -> None:
        self.thread = thread
        self.name = thread.name
        self.frame = frame
        self.rank = rank
        self.cpu = thread.cpu
        self.finished = False
        self.end: simpy.Event | None = None  # succeeds when the thread has run every operation
        self.process: simpy.Process | None = None
        # a computation under SMT: work left (us at speed 1), its speed, when last updated
        self.remaining = 0.0
        self.speed = 1.0
        self.last = 0.0
        self.began = 0.0  # when its current computation's interval began
        self.activity = ""  # its current computation's
        self.token = 0  # the current finish timer (a speed change makes a new one)
        self.done: simpy.Event | None = None  # succeeds when the current computation ends
        self.requests: dict[Hashable, simpy.Resource] = {}  # the locks it holds


_BARGING_HELD = object()
"""``_ThreadState.requests``' entry for a barging lock the thread holds."""


class SimpyMachine:
    """N simulated CPUs on simpy; the same interface and trace as
    :class:`simsrv.machine.executor.Machine` (``execute``, ``finish``, ``trace``,
    ``charged_us``, ``lock_holds``, ``settled_us``)."""

    runs_arrays_compiled = False
    """The reference engine runs every plan itself (no compiled frame loop)."""

    def __init__(
        self,
        cpus: int,
        smt_per_core: int = 1,
        smt_throughput: float = 1.0,
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
        self.lock_barging = lock_barging
        self._holder: dict[Hashable, _ThreadState | None] = {}  # barging locks' holders
        self._sleepers: dict[Hashable, deque] = {}  # their sleepers' wake-up events, in order
        self._q_used = 0.0  # CPU time the server used in the quota's period, us (at _q_last)
        self._q_last = 0.0  # when the running threads last changed, us
        self._q_rate = 0  # threads running since then
        self._q_throttled = False
        self._q_token = 0  # the quota's current timer (a change makes a new one)
        self._q_timer: simpy.Event | None = None
        self.cold_start = cold_start
        self._idle_since = [0.0] * cpus  # when each CPU's last computation or spin ended (None:
        # busy)
        self.signal_send_us, self.signal_wakeup_us = signal_send_us, signal_wakeup_us
        self.smt_per_core = smt_per_core
        self.smt_throughput = smt_throughput
        self._smt = smt_per_core > 1 and smt_throughput < 1.0
        self.background = tuple(background) + (0.0,) * (cpus - len(background))
        self._share = [1.0 - b for b in self.background]  # the server's share of each CPU
        self.irq_cpu = irq_cpu if irq_cpu is not None and softirq_us > 0.0 else None
        self.softirq_us, self.max_backlog = softirq_us, max_backlog
        self._throttled = False  # the kernel drops packets until its backlog is empty
        self.interrupt_source = interrupt_source
        self._bounds: list[float] = []  # the interrupt CPU's busy periods: start, end, start...
        self._irq_last = -float("inf")  # when the last packet's softirq ends
        self._irq_horizon = 0.0  # every packet arriving before it is known
        self._watching = False  # a timer waits for the next boundary
        self._boundary_timer: simpy.Event | None = None  # that timer
        self._irq_core_cpus = [c for c in range(cpus) if self._irq_core(c)]  # softirqs' speeds
        self._speeds = (
            self._smt
            or any(b > 0.0 for b in self.background)
            or self.irq_cpu is not None
            or quota is not None
        )
        self.env = _Environment()
        self._cpu = [simpy.Resource(self.env, capacity=1) for _ in range(cpus)]
        self._computing: list[_ThreadState | None] = [None] * cpus
        self._spinning: list[_ThreadState | None] = [None] * cpus  # busy-waiting for a lock
        self._core_busy = [0] * (-(-cpus // smt_per_core))
        self._locks: dict[Hashable, simpy.Resource] = {}
        self._lock_since: dict[Hashable, float] = {}
        self.trace = Trace()
        self.charged_us: list[float] = []
        self.lock_holds = LockHolds(threads=self.trace.threads)
        self._alive = 0  # threads started and not ended

    # -- frames ------------------------------------------------------------------------------

    def execute(self, plan: FramePlan | PlanArrays, frame: int, start_s: float) -> float:
        """Run ``plan`` (objects or arrays) as frame ``frame`` from ``start_s``; return when its
        coordinator ends, s."""
        if type(plan) is PlanArrays:
            plan = plan.to_plan()
        self._check(plan)
        self.charged_us.append(plan.charged_us())
        start_us = start_s * US_PER_S
        self._run_until(start_us)
        cpu = plan.threads[0].cpu
        serial = plan.is_serial() and self.background[cpu] == 0.0 and not self._irq_core(cpu)
        serial = serial and self.quota is None and self.cold_start is None
        if serial and self.env.peek() == float("inf"):
            # as the fast engine: one serial thread on an idle machine, on a CPU without
            # background load, starts at exactly start_us, even a rounding error before the
            # previous frame's end
            self.env.jump_to(start_us)
        states = {t.name: _ThreadState(t, frame, i) for i, t in enumerate(plan.threads)}
        barriers = {
            name: [parties, [], self.env.event()] for name, parties in plan.barriers.items()
        }
        for state in states.values():
            state.end = self.env.event()
            if not state.thread.spawned:
                self._alive += 1
                state.process = self.env.process(self._thread(state, states, barriers))
        coordinator = states[plan.threads[0].name]
        while not coordinator.finished:
            if self.env.peek() == float("inf"):
                raise PlanError(f"frame {frame}: plan deadlocked (no event can happen)")
            self.env.step()
        self._run_until(self.env.now)
        return self.env.now / US_PER_S

    def settled_us(self, next_start_us: float) -> Settled:
        """As :meth:`simsrv.machine.executor.Machine.settled_us`, known only when no thread is
        alive and nothing is scheduled (else nothing is settled: ``-inf``, frame 0); this
        engine logs a critical section at its release."""
        # (a timer waiting for the interrupt CPU's next boundary changes nothing while no
        # thread is alive)
        pending = [
            event
            for *_, event in self.env._queue
            if event is not self._boundary_timer and event is not self._q_timer
        ]
        if self._alive or pending:
            return Settled(-float("inf"), -float("inf"), 0)
        return Settled(next_start_us, next_start_us, None)

    def finish(self) -> None:
        """Run every thread still alive to its end."""
        while self.env.peek() != float("inf"):
            self.env.step()

    def _run_until(self, time_us: float) -> None:
        """Process every event up to ``time_us`` included; the clock then reads ``time_us``
        (or stays later)."""
        while self.env.peek() <= time_us:
            self.env.step()
        if time_us > self.env.now:
            self.env.jump_to(time_us)

    @staticmethod
    def _priority(state: _ThreadState) -> int:
        return FIRST_KEY + state.frame * RANKS + state.rank

    def _turn(self, state: _ThreadState) -> simpy.Event:
        """Let every thread with a smaller key act first at this instant."""
        return _Timer(self.env, self._priority(state), 0.0)

    # -- one thread --------------------------------------------------------------------------

    def _thread(
        self, state: _ThreadState, states: dict[str, _ThreadState], barriers: dict
    ) -> Generator[simpy.Event, Any, None]:
        """The process of one thread: its operations, one by one."""
        if state.thread.spawned:
            # the fast engine starts a spawned thread at its own turn (simpy would run the new
            # process at once): a parent's zero-delay run-first timer comes first, as there
            yield self._turn(state)
        for op in state.thread.ops:
            kind = type(op)
            if kind is Compute and op.cost_us <= 0:
                continue
            yield self._turn(state)
            if kind is Compute:
                yield from self._compute(state, op)
            elif kind is BarrierWait:
                yield from self._barrier(state, op, barriers)
            elif kind is Acquire and self.lock_barging:
                yield from self._acquire_barging(state, op.lock)
            elif kind is Acquire:
                yield from self._acquire(state, op.lock)
            elif kind is SpinSection:
                yield from self._section(state, op)
            elif kind is Release:
                if self._release(state, op.lock) and self.signal_send_us > 0.0:
                    yield self._turn(state)
                    yield from self._signal(state, SIGNAL_SEND, self.signal_send_us)
            elif kind is Spawn:
                self._spawn(state, states, op.thread, barriers)
            elif kind is Join or kind is RunFirst:
                yield from self._join(state, states, op)
        if state.requests:
            held = sorted(map(str, state.requests))
            raise PlanError(f"thread {state.name!r} ended holding locks {held}")
        state.finished = True
        self._alive -= 1
        state.end.succeed()

    def _record(self, state: _ThreadState, activity: str, start: float, end: float) -> None:
        self.trace.pending.append((state.frame, state.cpu, state.name, activity, start, end))

    def _compute(self, state: _ThreadState, op: Compute) -> Generator:
        """Take the thread's CPU (FIFO), hold it for the cost (slower while an SMT sibling
        computes, and by the CPU's background load), record the interval, give the CPU
        back."""
        request = self._cpu[state.cpu].request()
        yield request
        yield from self._cold(state)
        yield from self._computation(state, op.activity, op.cost_us)
        self._give_up(state.cpu, request)

    def _section(self, state: _ThreadState, op: SpinSection) -> Generator:
        """Take the thread's CPU (FIFO), busy-wait there while another thread holds the
        spinlock (``lock_spin``; the lock is handed to the spinners in arrival order), compute
        holding it, release it, give the CPU back."""
        cpu = state.cpu
        request = self._cpu[cpu].request()
        yield request
        yield from self._cold(state)
        resource = self._lock(op.lock)
        taken = resource.request()
        state.requests[op.lock] = taken
        if not taken.triggered:
            taken.spins = True  # (its release hands it over without a signal)
            state.began = self.env.now
            self._spinning[cpu] = state
            if cpu == self.irq_cpu:
                self._watch_interrupts()
            if self.quota is not None and not self._q_throttled:
                self._quota_run(+1)
            yield taken  # handed over at the holder's release
            since = self.env.now
            yield _Timer(self.env, self._priority(state), 0.0)  # (the fast engine's wake-up)
            self._spinning[cpu] = None
            runs = not self._irq_stalls(cpu) and not self._q_throttled
            if self.env.now > state.began and runs:
                self._record(state, LOCK_SPIN, state.began, self.env.now)
            if self.quota is not None and runs:
                self._quota_run(-1)
            self._lock_since[op.lock] = since
        else:
            self._lock_since[op.lock] = self.env.now
        yield from self._computation(state, op.activity, op.cost_us)
        self._release(state, op.lock)
        self._give_up(cpu, request)

    def _cold(self, state: _ThreadState) -> Generator:
        """The thread has taken its CPU: if the CPU was idle for ``g``, it stops being idle and
        the thread first computes the cold start ``cold(g)`` (when ``g`` > 0) as ``cold_start``
        (:mod:`simsrv.machine.cold_start`)."""
        if self.cold_start is None:
            return
        since = self._idle_since[state.cpu]
        if since is None:
            return
        self._idle_since[state.cpu] = None
        if self.env.now > since:
            idle = self.env.now - since
            wake, refill = self.cold_start.wake_part(idle), self.cold_start.refill_part(idle)
            if wake > 0.0:
                yield from self._computation(state, COLD_START, wake)
            if refill > 0.0:
                yield from self._computation(state, COLD_REFILL, refill)

    def _give_up(self, cpu: int, request: simpy.Resource) -> None:
        """The thread gives its CPU up: to the next thread queued for it, or the CPU is idle
        from now."""
        resource = self._cpu[cpu]
        resource.release(request)
        if not resource.users:
            self._idle_since[cpu] = self.env.now

    def _computation(self, state: _ThreadState, activity: str, cost_us: float) -> Generator:
        """Compute ``cost_us`` as ``activity`` on the CPU the thread holds (slower while an
        SMT sibling computes, and by the CPU's background load); record the interval."""
        cpu = state.cpu
        state.began, state.activity = self.env.now, activity
        self._computing[cpu] = state
        state.done = self.env.event()
        if self._irq_core(cpu):
            self._watch_interrupts()
        if self._irq_stalls(cpu):  # a softirq holds the CPU: it starts at the period's end
            state.remaining, state.last, state.speed = cost_us, state.began, 0.0
            state.token += 1
        elif self._speeds:
            state.remaining, state.last = cost_us, state.began
            speed = self._smt_change(cpu, +1) if self._smt else 1.0
            if self._q_throttled:  # the quota ran out: it starts at the period's end
                state.speed = 0.0
                state.token += 1
            else:
                if self.quota is not None:
                    self._quota_run(+1)
                state.speed = speed * self._share[cpu]
                self._finish_in(state, state.remaining / state.speed)
        else:
            self._finish_in(state, cost_us)
        yield state.done
        self._record(state, activity, state.began, self.env.now)
        if self.quota is not None:
            self._quota_run(-1)
        if self._smt and not self._irq_stalls(cpu):  # (in a softirq it stays busy)
            self._smt_change(cpu, -1)
        self._computing[cpu] = None

    def _finish_in(self, state: _ThreadState, delay: float) -> None:
        """The current computation ends ``delay`` us from now unless a speed change moves it
        (the fast engine's ``now + cost`` and ``last + remaining / speed``, with ``last`` =
        now: the same floats)."""
        state.token += 1
        token = state.token
        timer = _Timer(self.env, self._priority(state), delay)

        def end(_event: simpy.Event) -> None:
            if token == state.token:  # not superseded by a speed change
                state.done.succeed()

        timer.callbacks.append(end)

    def _smt_change(self, cpu: int, delta: int) -> float:
        """A logical CPU of ``cpu``'s core starts (+1) or stops (-1) computing: the siblings'
        computations change speed now, keeping the work done; return the new speed."""
        per_core = self.smt_per_core
        core = cpu // per_core
        self._core_busy[core] += delta
        speed = self._core_speed(core)
        if self._q_throttled:  # nothing computes: the speeds are set at the period's end
            return speed
        for sibling in range(core * per_core, min(self.cpus, (core + 1) * per_core)):
            other = self._computing[sibling]
            if sibling == cpu or other is None or self._irq_stalls(sibling):
                continue
            self._progress(other)
            other.speed = speed * self._share[sibling]
            self._finish_in(other, other.remaining / other.speed)
        return speed

    # -- the interrupt CPU ----------------------------------------------------------------

    def add_interrupts(self, arrivals_us, horizon_us: float) -> np.ndarray:
        """As :meth:`simsrv.machine.executor.Machine.add_interrupts`: packets reach the card at
        ``arrivals_us`` (ascending); every one arriving before ``horizon_us`` is known; returns
        when each one's softirq ends (its arrival without an interrupt CPU), us."""
        if self.irq_cpu is None:
            return np.array(arrivals_us, dtype=np.float64)
        bounds, last, cost = self._bounds, self._irq_last, self.softirq_us
        ends = empty(len(arrivals_us))
        for i, a in enumerate(arrivals_us):
            a = float(a)
            waiting = math.ceil((last - a) / cost) - 1.0 if last > a else 0.0
            if waiting > self.max_backlog or (self._throttled and waiting > 0.0):
                self._throttled = True  # dropped (netif_rx: the backlog is full)
                ends[i] = math.nan
                continue
            self._throttled = False
            start = a if a > last else last
            last = start + cost
            ends[i] = last
            if bounds and start == bounds[-1]:
                bounds[-1] = last
            else:
                bounds += (start, last)
        self._irq_last, self._irq_horizon = last, float(horizon_us)
        return ends

    def _known_until(self, time: float) -> None:
        """Every boundary up to ``time`` is final (before the horizon): else ask for more."""
        while time >= self._irq_horizon:
            horizon = self._irq_horizon
            if self.interrupt_source is None or horizon == float("inf"):
                raise RuntimeError(f"the machine needs the packets arriving after {horizon} us")
            self.interrupt_source()
            if self._irq_horizon <= horizon:
                raise RuntimeError("the interrupt source added no packet time past the horizon")

    def _irq_core(self, cpu: int) -> bool:
        """Whether ``cpu`` is the interrupt CPU or, with SMT, a sibling on its core."""
        irq = self.irq_cpu
        if irq is None:
            return False
        per_core = self.smt_per_core
        return cpu == irq or (self._smt and cpu // per_core == irq // per_core)

    def _irq_stalls(self, cpu: int) -> bool:
        """Whether ``cpu`` is the interrupt CPU inside a busy period (a boundary at this very
        instant has happened)."""
        if cpu != self.irq_cpu:
            return False
        self._known_until(self.env.now)
        return bisect_right(self._bounds, self.env.now) % 2 == 1

    def _watch_interrupts(self) -> None:
        """A thread computes on the interrupt CPU's core: the core's busy count takes the
        softirq in (nothing computed there since the last boundary watched), and a timer
        waits for the next boundary (unless one already does)."""
        if self._watching:
            return
        self._watching = True
        irq = self.irq_cpu
        if self._smt:
            self._core_busy[irq // self.smt_per_core] = int(self._irq_stalls(irq))
        self._next_boundary()

    def _next_boundary(self) -> None:
        """Schedule the first boundary after now (before every other event of its instant)."""
        now = self.env.now
        index = bisect_right(self._bounds, now)
        while index >= len(self._bounds) or self._bounds[index] >= self._irq_horizon:
            if self._irq_horizon == float("inf"):  # no boundary will ever come: the
                return  # core's busy count stays maintained by its threads alone
            self._known_until(max(now, self._irq_horizon))
            index = bisect_right(self._bounds, now)
        timer = self._boundary_timer = simpy.Event(self.env)
        timer._ok, timer._value = True, None
        timer.callbacks.append(lambda _event: self._boundary(index % 2 == 0))
        self.env.schedule_at(timer, 0, self._bounds[index])

    def _boundary(self, starts: bool) -> None:
        """A busy period of the interrupt CPU starts or ends now (the fast engine's
        ``_irq_boundary``); the next one is watched while a thread computes on its core."""
        irq = self.irq_cpu
        state = self._computing[irq]
        if state is None:
            spinner = self._spinning[irq]
            if spinner is not None:  # its spin stops for the period (its row so far recorded)
                self._spin_pauses(spinner, starts)
            if self._smt:
                self._smt_change(irq, +1 if starts else -1)
        elif starts:
            self._stand_still(state)
        elif state.speed == 0.0:
            self._go_on(state, irq)
        watched = self._spinning[irq] is not None
        if watched or any(self._computing[c] is not None for c in self._irq_core_cpus):
            self._next_boundary()
        else:
            self._watching = False

    # -- the CPU quota ----------------------------------------------------------------------

    def _quota_run(self, delta: int) -> None:
        """``delta`` threads start (+1) or stop (-1) running now: the time used so far is
        counted at the old number, and the quota's next event is scheduled anew."""
        self._quota_settle()
        self._q_rate += delta
        self._quota_schedule()

    def _quota_settle(self) -> None:
        """The time used in the period brought up to now (with nothing running, a period that
        began meanwhile starts from zero)."""
        now, last = self.env.now, self._q_last
        if now > last:
            period = self.quota.period_us
            if self._q_rate > 0:
                self._q_used += self._q_rate * (now - last)
            elif math.floor(now / period) > math.floor(last / period):
                self._q_used = 0.0
            self._q_last = now

    def _quota_schedule(self) -> None:
        """A timer for the quota's next event (before every other event of its instant): the
        instant the running threads will have used it, or the period's end (while throttled,
        or when that comes first); none while nothing runs or waits for the period."""
        self._q_token += 1
        period = self.quota.period_us
        boundary = (math.floor(self._q_last / period) + 1.0) * period
        if self._q_throttled:
            time, hit = boundary, False
        elif self._q_rate <= 0:
            self._q_timer = None
            return
        else:
            time = self._q_last + max(self.quota.quota_us - self._q_used, 0.0) / self._q_rate
            hit = time < boundary
            if not hit:
                time = boundary
        token = self._q_token
        timer = self._q_timer = simpy.Event(self.env)
        timer._ok, timer._value = True, None
        timer.callbacks.append(lambda _event: token == self._q_token and self._quota_event(hit))
        self.env.schedule_at(timer, 0, time)

    def _quota_event(self, hit: bool) -> None:
        """The quota is used up (``hit``: the group is throttled, its running threads stand
        still) or its period ends (the quota is whole again; the stopped threads go on)."""
        self._quota_settle()
        self._q_used = self.quota.quota_us if hit else 0.0
        if not hit and not self._q_throttled:
            self._quota_schedule()
            return
        self._q_throttled = hit
        for cpu in range(self.cpus):
            spinner, state = self._spinning[cpu], self._computing[cpu]
            if spinner is not None:
                self._spin_pauses(spinner, hit)
                self._q_rate += -1 if hit else 1
            elif state is not None and not hit:
                self._go_on(state, cpu)
                self._q_rate += 1
            elif state is not None and self._stand_still(state):
                self._q_rate -= 1
        self._quota_schedule()

    # -- a computation or a spin stopped and going on (a softirq, a throttle) -------------

    def _stand_still(self, state: _ThreadState) -> bool:
        """``state``'s computation stops now: its interval so far is recorded, the work done
        kept, its finish void; True.  False when its work is done now (it ends as planned)."""
        now = self.env.now
        self._progress(state)
        if state.remaining <= 0.0:
            return False
        if now > state.began:
            self._record(state, state.activity, state.began, now)
        state.speed = 0.0
        state.token += 1
        return True

    def _go_on(self, state: _ThreadState, cpu: int) -> None:
        """``state``'s stopped computation goes on now (its next interval starts now) at its
        core's speed."""
        state.began = state.last = self.env.now
        state.speed = self._core_speed(cpu // self.smt_per_core) * self._share[cpu]
        self._finish_in(state, state.remaining / state.speed)

    def _spin_pauses(self, spinner: _ThreadState, stops: bool) -> None:
        """``spinner``'s spin stops now (its interval so far recorded) or, not ``stops``, goes
        on (its next interval starts now)."""
        now = self.env.now
        if not stops:
            spinner.began = now
        elif now > spinner.began:
            self._record(spinner, LOCK_SPIN, spinner.began, now)

    def _core_speed(self, core: int) -> float:
        """The speed of a computation on ``core`` (1, or the SMT throughput while another of
        its logical CPUs computes too)."""
        return self.smt_throughput if self._smt and self._core_busy[core] > 1 else 1.0

    def _progress(self, state: _ThreadState) -> None:
        """``state``'s computation has run at its speed until now: its work left so far."""
        now = self.env.now
        state.remaining -= (now - state.last) * state.speed
        if state.remaining < 0.0:  # rounding: the work is done now, not before now
            state.remaining = 0.0
        state.last = now

    def _barrier(self, state: _ThreadState, op: BarrierWait, barriers: dict) -> Generator:
        """Wait until every party of the barrier has arrived."""
        barrier = barriers.get(op.name)
        if barrier is None:
            raise PlanError(f"{state.name!r} waits at undeclared barrier {op.name!r}")
        if not is_wait(op.activity):
            raise PlanError(f"{state.name!r}: barrier activity {op.activity!r} must end in _wait")
        parties, arrived, opened = barrier
        arrived.append(state)
        if len(arrived) > parties:
            raise PlanError(f"barrier {op.name!r}: more than {parties} parties arrived")
        began = self.env.now
        if len(arrived) == parties:
            opened.succeed()
        yield opened
        # the last to arrive wakes the others in arrival order, the i-th sleeper i signal sends
        # after the opening (without signals: at once, in key order as the fast engine)
        order = 0 if state is arrived[-1] else arrived.index(state) + 1
        yield _Timer(self.env, self._priority(state), order * self.signal_send_us)
        if self.env.now > began:
            self._record(state, op.activity, began, self.env.now)
        if order:
            cost, activity = self.signal_wakeup_us, SIGNAL_WAKEUP
        else:
            cost, activity = (parties - 1) * self.signal_send_us, SIGNAL_SEND
        if cost > 0.0:
            yield self._turn(state)
            yield from self._signal(state, activity, cost)

    def _signal(self, state: _ThreadState, activity: str, cost: float) -> Generator:
        """The thread library's cost of a signal, computed on the thread's CPU."""
        yield from self._compute(state, Compute(activity, cost))

    def _acquire(self, state: _ThreadState, lock: Hashable) -> Generator:
        """Take the lock (a FIFO resource that outlives the frame), waiting while it is held."""
        resource = self._lock(lock)
        began = self.env.now
        request = resource.request()
        state.requests[lock] = request
        if not request.triggered:
            yield request  # handed over at the release; woken when the signal arrives
            since = self.env.now
            yield _Timer(self.env, self._priority(state), self.signal_send_us)
            if self.env.now > began:
                self._record(state, "lock_wait", began, self.env.now)
            self._lock_since[lock] = since
            if self.signal_wakeup_us > 0.0:
                yield self._turn(state)
                yield from self._signal(state, SIGNAL_WAKEUP, self.signal_wakeup_us)
            return
        self._lock_since[lock] = self.env.now

    def _acquire_barging(self, state: _ThreadState, lock: Hashable) -> Generator:
        """Take a futex-like lock: free, at once; held, sleep until a release wakes this
        thread, ``signal_send_us + signal_wakeup_us`` after which it tries again (others may
        have taken the lock meanwhile).  One ``lock_wait`` from the first try to the taking."""
        began = self.env.now
        while self._holder.get(lock) is not None:
            woken = self.env.event()
            self._sleepers.setdefault(lock, deque()).append(woken)
            yield woken
            yield _Timer(
                self.env, self._priority(state), self.signal_send_us + self.signal_wakeup_us
            )
        self._holder[lock] = state
        state.requests[lock] = _BARGING_HELD
        if self.env.now > began:
            self._record(state, "lock_wait", began, self.env.now)
        self._lock_since[lock] = self.env.now

    def _lock(self, lock: Hashable) -> simpy.Resource:
        """The lock's FIFO resource (made at its first use; it outlives the frame)."""
        resource = self._locks.get(lock)
        if resource is None:
            resource = self._locks[lock] = simpy.Resource(self.env, capacity=1)
        return resource

    def _release(self, state: _ThreadState, lock: Hashable) -> bool:
        """Release the lock; True when a sleeping waiter takes it (a spinner needs no
        signal)."""
        request = state.requests.pop(lock, None)
        if request is None:
            raise PlanError(f"{state.name!r} releases {lock!r}, which it does not hold")
        self.lock_holds.pending.append(
            (lock, state.frame, state.name, self._lock_since.pop(lock), self.env.now)
        )
        if request is _BARGING_HELD:  # free from now; the first sleeper is woken to try again
            self._holder[lock] = None
            sleepers = self._sleepers.get(lock)
            if sleepers:
                sleepers.popleft().succeed()
                return True
            return False
        resource = self._locks[lock]
        # a waiter takes it (simpy grants it at this instant)
        handed = bool(resource.queue) and not getattr(resource.queue[0], "spins", False)
        resource.release(request)
        # the next waiter holds it from now on (it records its wait at its turn)
        if resource.users:
            self._lock_since[lock] = self.env.now
        return handed

    def _spawn(
        self, state: _ThreadState, states: dict[str, _ThreadState], name: str, barriers: dict
    ) -> None:
        child = states.get(name)
        if child is None or not child.thread.spawned or child.process is not None:
            raise PlanError(f"{state.name!r} spawns {name!r}, not a spawned thread of the plan")
        if child.cpu == SPAWNER_CPU:
            child.cpu = state.cpu
        self._alive += 1
        child.process = self.env.process(self._thread(child, states, barriers))

    def _join(self, state: _ThreadState, states: dict[str, _ThreadState], op) -> Generator:
        """Wait for a thread's end; a run-first parent may instead move to an idle CPU after
        ``migrate_after_us``."""
        target = states.get(op.thread)
        if target is None:
            raise PlanError(f"{state.name!r} joins unknown thread {op.thread!r}")
        if target.finished:
            return
        began = self.env.now
        activity = "join_wait"
        if type(op) is RunFirst:
            activity = "runqueue_wait"
            timer = _Timer(self.env, self._priority(state), op.migrate_after_us)
            yield target.end | timer
            if not target.finished:  # the timer: move to the lowest idle CPU, if any
                idle = self._idle_cpu(exclude=state.cpu)
                if idle is not None:
                    self._record(state, activity, began, self.env.now)
                    state.cpu = idle
                    return
        if not target.finished:
            yield target.end
        yield self._turn(state)  # the fast engine wakes joiners in key order
        if self.env.now > began:
            self._record(state, activity, began, self.env.now)

    def _idle_cpu(self, exclude: int) -> int | None:
        for index, cpu in enumerate(self._cpu):
            if index != exclude and cpu.count == 0 and not cpu.queue:
                return index
        return None

    def _check(self, plan: FramePlan) -> None:
        if len(plan.threads) == 0 or plan.threads[0].spawned:
            raise PlanError("the coordinator (threads[0]) must exist and not be spawned")
        if len(plan.threads) >= RANKS:
            raise PlanError(f"more than {RANKS - 1} threads in one frame")
        if len({t.name for t in plan.threads}) != len(plan.threads):
            raise PlanError(f"thread names are not unique: {[t.name for t in plan.threads]}")
        for t in plan.threads:
            if not 0 <= t.cpu < self.cpus and not (t.spawned and t.cpu == SPAWNER_CPU):
                raise PlanError(f"thread {t.name!r}: cpu {t.cpu} out of range 0..{self.cpus - 1}")
