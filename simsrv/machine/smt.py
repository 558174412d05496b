"""Simultaneous multithreading: logical CPUs that share a physical core's throughput.

Model
-----
Logical CPU ``i`` belongs to core ``i // per_core``.  A computation runs at speed 1 (one unit of
cost per microsecond) while it is the only busy logical CPU of its core, and at
``throughput`` (0 < throughput <= 1) while any sibling is busy too.  Speeds change the instant
a sibling starts or stops computing and the work already done is kept: a computation of cost
``c`` (us) that spends ``t_alone`` us alone and ``t_shared`` us beside a busy sibling ends when
``t_alone + throughput * t_shared = c``.  ``per_core = 1`` or ``throughput = 1`` is no SMT.

Blocked threads (barriers, locks, joins) do not compute, so they do not slow their siblings.
"""

from __future__ import annotations

from collections.abc import Generator

import simpy


class Core:
    """Busy logical CPUs of one physical core, with an event that fires when that changes."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.busy = 0
        self.changed = env.event()

    def _notify(self) -> None:
        event, self.changed = self.changed, self.env.event()
        event.succeed()

    def compute(self, cost_us: float, throughput: float) -> Generator[simpy.Event, None, None]:
        """Run ``cost_us`` of work on one logical CPU of this core (a simpy process body)."""
        env = self.env
        self.busy += 1
        self._notify()
        remaining = cost_us
        while True:
            speed = 1.0 if self.busy == 1 else throughput
            began = env.now
            end = began + remaining / speed
            yield env.timeout(end - began) | self.changed
            if env.now >= end:
                break
            remaining -= (env.now - began) * speed
        self.busy -= 1
        self._notify()
