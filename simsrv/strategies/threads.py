"""Static server threads on the modelled CPUs: placement and the cost of sharing a CPU.

Used by the strategies that keep a fixed set of threads across frames (``abdelkhalek``,
``area-quadrant``).  Model assumptions:

* thread ``t`` runs on physical core ``t mod cores`` first, then on the next logical CPU of the
  core (the Linux/Solaris load balancers spread runnable threads over idle cores before
  siblings); with more threads than CPUs, threads share CPUs;
* a thread that shares its CPU with another thread of the server was switched out while it
  waited, so every time it resumes after a barrier it pays a context switch plus
  ``thread_cache_refill`` (its cold stack and state: the per-thread memory cost of MODEL.md §6).
  Switches therefore grow linearly with the threads sharing CPUs, as [M §3.2] measured
  (context switches proportional to the number of threads, none added by event-loop tasks);
* every thread has its own stack (:func:`thread_memory_bytes`): [M §3.1] "each thread has
  its memory area for its stack ... the default stack size in modern operating systems is
  2 MB" of *virtual* memory, of which only the pages touched are resident, "at least one page
  of 4 kB" per thread [M §3.3], where tasks of an event loop share pages.
"""

from __future__ import annotations

import numpy as np

from simsrv.strategies import costs as c

STACK_RESERVED_BYTES = 2 * 1024 * 1024
"""Virtual memory a thread's stack reserves by default [M §3.1] (2 MiB)."""
PAGE_BYTES = 4096
"""A page: the least a thread's stack makes resident [M §3.3]."""


def thread_memory_bytes(threads: int, stack_pages: int) -> tuple[int, int]:
    """(resident, reserved) bytes of ``threads`` thread stacks, each touching ``stack_pages``
    pages of its :data:`STACK_RESERVED_BYTES` reservation."""
    return threads * stack_pages * PAGE_BYTES, threads * STACK_RESERVED_BYTES


def place_threads(threads: int, cpus: int, smt_per_core: int) -> np.ndarray:
    """The CPU of each of ``threads`` threads, (threads,) int."""
    per_core = max(1, min(smt_per_core, cpus))
    cores = max(1, cpus // per_core)
    t = np.arange(threads)
    return ((t % cores) * per_core + (t // cores) % per_core) % cpus


def resume_costs(cpu_of: np.ndarray, cpus: int, k: np.ndarray) -> np.ndarray:
    """Cost of resuming each thread after a barrier, us (float64): 0 unless it shares its CPU,
    else :func:`~simsrv.strategies.costs.resume_us` of the cost vector ``k``."""
    sharing = np.bincount(cpu_of, minlength=cpus)[cpu_of] > 1
    return np.where(sharing, c.resume_us(k), 0.0)
