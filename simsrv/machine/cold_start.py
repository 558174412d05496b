"""A CPU's cold start: the extra CPU time of the first computation after the CPU was idle.

A program that runs again on a CPU after an idle spell pays for having slept and for what
the spell took from its caches:

* **the wake-up path**: a server blocked in ``select()`` was switched out to the idle task
  and is switched back in when a packet wakes it (Linux ``fs/select.c``: ``do_select`` sleeps
  in ``poll_schedule_timeout``), kernel work a ``select()`` that finds a packet already
  queued does not do: a fixed ``wake_us`` after any idleness;
* **the refill**: part of its working set is gone from the caches and TLB (evicted by
  whatever ran in between: the kernel's idle path, interrupts, on a virtual machine the host
  and its other guests), and the misses bring it back.  Thiébaut and Stone (*Footprints in
  the cache*, ACM TOCS 5(4), 1987) model the footprint a program leaves as decaying with the
  length of the intervening activity, and Mogul and Borg (*The effect of context switches on
  cache performance*, ASPLOS IV, 1991) measure the reload cost growing with it and levelling
  off once the footprint is gone; Linux's ``Documentation/admin-guide/pm/cpuidle.rst`` adds
  that deeper idle states, entered after longer spells, flush more of the caches.

The rule is that shape with three numbers (charged as two computations, ``cold_start`` the
wake-up and then ``cold_refill`` the refill, each when it is not 0: a server's own stage
timers see the wake-up in its ``select()`` and the refill spread over the work that follows):

    cold(g) = wake_us + refill_us * (1 - exp(-g / decay_us))   for g > 0,   cold(0) = 0,

where ``g`` is how long the CPU was idle (no thread computing or spinning on it) before a
computation starts there.  The machine computes ``cold(g)`` first, as the activity
``cold_start`` (a cost the machine charges itself, like a signal's wake-up), then the
computation.  A CPU handed from one thread to a queued one at the same instant was not idle
(``g = 0``: no cost); at the run's start every CPU has been idle since time 0.  A thread
standing still (a softirq, a throttled quota) keeps its CPU: going on is no cold start.  A
spinning thread keeps its CPU warm, so a spin section's cold start, if any, comes before its
spin.

The testbed sizes the three numbers from the real server's frames (its CPU per frame against
the idle time before the frame: :func:`simsrv.testbed.frames.cold_start_fit`); every other
platform has none.  Both engines implement the rule
(:func:`simsrv.machine.engine._cold_start`, :class:`simsrv.machine.simpy_engine.SimpyMachine`)
with the same formula, :func:`cold_us`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simsrv.core.compiled import inlinable
from simsrv.machine.trace import COLD_REFILL, COLD_START

__all__ = ["COLD_REFILL", "COLD_START", "ColdStart", "cold_us"]


@dataclass(frozen=True)
class ColdStart:
    """``wake_us`` after any idleness, plus up to ``refill_us`` approached as the idle time
    grows past ``decay_us`` (us)."""

    wake_us: float
    refill_us: float
    decay_us: float

    def __post_init__(self) -> None:
        values = (self.wake_us, self.refill_us, self.decay_us)
        if not all(0.0 <= v < math.inf for v in values) or self.decay_us <= 0.0:
            raise ValueError(
                f"cold start: wake_us and refill_us must be >= 0 and decay_us > 0, all finite, "
                f"got {self.wake_us:g}, {self.refill_us:g} and {self.decay_us:g}"
            )
        if self.wake_us == 0.0 and self.refill_us == 0.0:
            raise ValueError("cold start: wake_us or refill_us must be > 0 (else: none)")

    @classmethod
    def of(cls, platform) -> ColdStart | None:
        """The cold start of a platform (None: its ``cold_start_us`` and ``cold_refill_us``
        are 0)."""
        if platform.cold_start_us <= 0.0 and platform.cold_refill_us <= 0.0:
            return None
        return cls(platform.cold_start_us, platform.cold_refill_us, platform.cold_decay_us)

    def cost(self, idle_us: float) -> float:
        """The cold start after ``idle_us`` of idleness, us."""
        return cold_us(self.wake_us, self.refill_us, self.decay_us, idle_us)

    def wake_part(self, idle_us: float) -> float:
        """Its wake-up part (``cold_start``), us: ``wake_us`` after any idleness."""
        return cold_us(self.wake_us, 0.0, 1.0, idle_us)

    def refill_part(self, idle_us: float) -> float:
        """Its refill part (``cold_refill``), us: ``refill_us (1 - exp(-g / decay_us))``."""
        return cold_us(0.0, self.refill_us, self.decay_us, idle_us)


@inlinable
def cold_us(wake_us, refill_us, decay_us, idle_us):
    """``wake_us + refill_us * (1 - exp(-idle_us / decay_us))`` for ``idle_us`` > 0, else 0;
    the ``1 - exp`` written as ``-expm1`` (exact near 0).  Both engines and the frame loop's
    read clock (:func:`simsrv.frame_steps.kernels.read_start`) call it."""
    if idle_us <= 0.0:
        return 0.0
    return wake_us + refill_us * -math.expm1(-idle_us / decay_us)
