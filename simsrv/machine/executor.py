"""Execution of frame plans on simulated CPUs (simpy).

Model
-----
* Each CPU runs one thread at a time.  A thread's :class:`Compute` holds its CPU for the cost;
  threads that share a CPU take turns at operation boundaries, in request order (FIFO), so two
  threads on one CPU take the sum of their costs and two threads on two CPUs the maximum.
* A blocked thread (barrier, lock, join) does not hold its CPU; the time it waits is recorded as
  a wait interval (``barrier_wait``, ``lock_wait``, ``join_wait``) that does not count as busy.
* Locks are FIFO mutexes that persist across frames; barriers belong to one frame's plan.
* Optional SMT: logical CPUs grouped into cores run slower while a sibling computes
  (:mod:`simsrv.machine.smt`).
* Simulated time runs in microseconds internally; the API speaks seconds.

A plan that is a single thread of computations while nothing else runs is executed without
simpy (a straight sum), which is exactly what simpy would compute; tests check the two agree.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass

import simpy

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
from simsrv.machine.smt import Core
from simsrv.machine.trace import Trace, is_wait

US_PER_S = 1e6


class PlanError(RuntimeError):
    """A strategy produced an inconsistent plan (a bug in the strategy, not user input)."""


class _Barrier:
    """A one-shot barrier for ``parties`` threads."""

    def __init__(self, env: simpy.Environment, name: str, parties: int) -> None:
        self.name = name
        self.parties = parties
        self.arrived = 0
        self.event = env.event()

    def arrive(self) -> simpy.Event:
        self.arrived += 1
        if self.arrived > self.parties:
            raise PlanError(f"barrier {self.name!r}: more than {self.parties} parties arrived")
        if self.arrived == self.parties:
            self.event.succeed()
        return self.event


@dataclass
class _FrameContext:
    frame: int
    threads: dict[str, Thread]
    barriers: dict[str, _Barrier]
    done: dict[str, simpy.Event]


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
    """

    def __init__(self, cpus: int, smt_per_core: int = 1, smt_throughput: float = 1.0) -> None:
        self.cpus = cpus
        self.env = simpy.Environment(initial_time=0.0)
        self._cpu = [simpy.Resource(self.env, capacity=1) for _ in range(cpus)]
        self.smt_throughput = smt_throughput
        self._core: list[Core] | None = None
        if smt_per_core > 1 and smt_throughput < 1.0:
            cores = [Core(self.env) for _ in range(-(-cpus // smt_per_core))]
            self._core = [cores[i // smt_per_core] for i in range(cpus)]
        self._locks: dict[Hashable, simpy.Resource] = {}
        self._live_threads = 0
        self.trace = Trace()

    @property
    def idle(self) -> bool:
        """True when no thread of any earlier frame is still running."""
        return self._live_threads == 0

    def execute(self, plan: FramePlan, frame: int, start_s: float) -> float:
        """Run ``plan`` as frame ``frame`` from ``start_s``; return when its coordinator ends, s."""
        start_us = start_s * US_PER_S
        if self._live_threads == 0 and plan.is_serial():
            return self._execute_serial(plan.threads[0], frame, start_us) / US_PER_S
        self._check(plan)
        if self.env.now < start_us:
            self.env.run(until=start_us)
        env = self.env
        ctx = _FrameContext(
            frame=frame,
            threads={t.name: t for t in plan.threads},
            barriers={n: _Barrier(env, n, p) for n, p in plan.barriers.items()},
            done={t.name: env.event() for t in plan.threads},
        )
        for thread in plan.threads:
            if not thread.spawned:
                env.process(self._run(ctx, thread))
        coordinator = ctx.done[plan.threads[0].name]
        try:
            env.run(until=coordinator)
        except RuntimeError as error:
            raise PlanError(f"frame {frame}: plan deadlocked ({error})") from None
        return env.now / US_PER_S

    def _execute_serial(self, thread: Thread, frame: int, now: float) -> float:
        if not 0 <= thread.cpu < self.cpus:
            raise PlanError(f"thread {thread.name!r}: cpu {thread.cpu} out of range")
        rows, cpu, name = self.trace.rows, thread.cpu, thread.name
        # Trace.record inlined (hot path): zero-length intervals are skipped the same way
        for activity, cost in thread.ops:
            if cost > 0:
                end = now + cost
                rows.append((frame, cpu, name, activity, now, end))
                now = end
        return now

    def _run(
        self, ctx: _FrameContext, thread: Thread, spawner_cpu: int = 0
    ) -> Generator[simpy.Event, None, None]:
        env, record, frame, name = self.env, self.trace.record, ctx.frame, thread.name
        # the CPU changes when the thread migrates (RunFirst)
        where = spawner_cpu if thread.cpu == SPAWNER_CPU else thread.cpu
        held: dict[Hashable, simpy.resources.resource.Request] = {}
        self._live_threads += 1
        for op in thread.ops:
            kind = type(op)
            if kind is Compute:
                if op.cost_us <= 0:
                    continue
                core = None if self._core is None else self._core[where]
                with self._cpu[where].request() as request:
                    yield request
                    began = env.now
                    if core is None:
                        yield env.timeout(op.cost_us)
                    else:
                        yield from core.compute(op.cost_us, self.smt_throughput)
                    record(frame, where, name, op.activity, began, env.now)
            elif kind is BarrierWait:
                began = env.now
                yield ctx.barriers[op.name].arrive()
                record(frame, where, name, op.activity, began, env.now)
            elif kind is Acquire:
                lock = self._locks.get(op.lock)
                if lock is None:
                    lock = self._locks[op.lock] = simpy.Resource(env, capacity=1)
                request = lock.request()
                began = env.now
                yield request
                record(frame, where, name, "lock_wait", began, env.now)
                held[op.lock] = request
            elif kind is Release:
                self._locks[op.lock].release(held.pop(op.lock))
            elif kind is Spawn:
                env.process(self._run(ctx, ctx.threads[op.thread], where))
            elif kind is Join:
                began = env.now
                yield ctx.done[op.thread]
                record(frame, where, name, "join_wait", began, env.now)
            elif kind is RunFirst:
                began, done = env.now, ctx.done[op.thread]
                yield done | env.timeout(op.migrate_after_us)
                idle = None if done.triggered else self._idle_cpu(exclude=where)
                if idle is None:
                    yield done
                record(frame, where, name, "runqueue_wait", began, env.now)
                if idle is not None:
                    where = idle
        if held:
            raise PlanError(f"thread {name!r} ended holding locks {sorted(map(str, held))}")
        self._live_threads -= 1
        ctx.done[name].succeed()

    def _idle_cpu(self, exclude: int) -> int | None:
        """The lowest-numbered CPU with no thread running or queued, other than ``exclude``."""
        for index, cpu in enumerate(self._cpu):
            if index != exclude and cpu.count == 0 and not cpu.queue:
                return index
        return None

    def _check(self, plan: FramePlan) -> None:
        names = [t.name for t in plan.threads]
        if len(set(names)) != len(names):
            raise PlanError(f"thread names are not unique: {names}")
        if plan.threads[0].spawned:
            raise PlanError("the coordinator (threads[0]) cannot be a spawned thread")
        spawned = {t.name for t in plan.threads if t.spawned}
        for t in plan.threads:
            starts_with_spawner = t.spawned and t.cpu == SPAWNER_CPU
            if not starts_with_spawner and not 0 <= t.cpu < self.cpus:
                raise PlanError(f"thread {t.name!r}: cpu {t.cpu} out of range 0..{self.cpus - 1}")
            for op in t.ops:
                if type(op) is Spawn and op.thread not in spawned:
                    raise PlanError(f"{t.name!r} spawns {op.thread!r}, not a spawned thread")
                if type(op) in (Join, RunFirst) and op.thread not in names:
                    raise PlanError(f"{t.name!r} joins unknown thread {op.thread!r}")
                if type(op) is BarrierWait and op.name not in plan.barriers:
                    raise PlanError(f"{t.name!r} waits at undeclared barrier {op.name!r}")
                if type(op) is BarrierWait and not is_wait(op.activity):
                    raise PlanError(
                        f"{t.name!r}: barrier activity {op.activity!r} must end in _wait"
                    )
