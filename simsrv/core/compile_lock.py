"""One compile per machine: processes that miss the same cached function wait for each other.

A sweep or ``simsrv compare`` starts a pool of worker processes that run the same pipeline at
the same time.  On a machine whose numba cache is empty, each worker would compile every
kernel it needs (~90 s of CPU over the four strategies on a 2-core machine), all of them the
same kernels at the same moment: the pool's first runs took as long as one process
compiling alone, on each core.  With this lock, the first process that misses a function's
cache compiles it and the others wait, then load its code from the cache: each kernel is
compiled once per machine, and while one worker compiles the world's kernels another can
compile a strategy's.

The lock is an advisory file lock (:func:`fcntl.flock`) on ``<index file>.lock`` beside the
function's cache index, taken on a cache miss (:meth:`CompileLocks.acquire`) and released once
the compiled code is saved (:meth:`CompileLocks.release`); the operating system releases it
when a process dies.  A function calls only functions it does not depend on in turn (numba's
call graph is acyclic here), and a process takes a caller's lock before its callees', so two
processes never wait for each other in a circle.  A process waits at most
:data:`WAIT_S` for a lock (a compile that failed in a process that lives on holds its lock), then
compiles the function itself, as without the lock.  Where :mod:`fcntl` does not exist
(Windows), nothing is locked.
"""

from __future__ import annotations

import os
import time

from simsrv.core.compile_time import add_wait

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

WAIT_S = 600.0
"""How long a process waits for another's compile of one function, s."""
POLL_S = 0.05
"""How often a waiting process tries the lock again, s."""


class CompileLocks:
    """The compile locks this process holds, by lock file path (with a count: a function
    compiled for a second signature while its first compile is under way keeps one lock)."""

    def __init__(self) -> None:
        self._held: dict[str, list[int]] = {}

    def acquire(self, path: str) -> bool:
        """Take the lock at ``path`` (waiting up to :data:`WAIT_S` for another process);
        True when this process holds it now."""
        if fcntl is None:
            return False
        if path in self._held:
            self._held[path][1] += 1
            return True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # a read-only cache directory: compile without the lock
            return False
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= started + WAIT_S:
                    os.close(fd)
                    add_wait(time.monotonic() - started)
                    return False
                time.sleep(POLL_S)
                continue
            add_wait(time.monotonic() - started)
            self._held[path] = [fd, 1]
            return True

    def release(self, path: str) -> None:
        """Give up one hold of the lock at ``path`` (nothing if this process holds none)."""
        held = self._held.get(path)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del self._held[path]
            os.close(held[0])  # closing the file releases the lock

    def holds(self, path: str) -> bool:
        """Whether this process holds the lock at ``path``."""
        return path in self._held


LOCKS = CompileLocks()
"""This process's compile locks."""
