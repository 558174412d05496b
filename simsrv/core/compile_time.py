"""How long this process has spent on first compiles: compiling numba functions, or waiting for
another process's compile of a function it needs (:mod:`simsrv.core.compile_lock`).

A run reports it apart from its wall time (``RunResult.compile_time_s``): the first runs after
an install compile the kernels they need (tens of seconds), which says nothing about the
simulation's own speed.  Only the outermost compile counts (a compile triggers its callees'),
and a wait counts when no compile is under way (a wait inside a compile is in its time).
"""

from __future__ import annotations

import time

from numba.core import event

_depth = 0
_started = 0.0
_seconds = 0.0


class _Clock(event.Listener):
    def on_start(self, ev: event.Event) -> None:
        global _depth, _started
        if _depth == 0:
            _started = time.perf_counter()
        _depth += 1

    def on_end(self, ev: event.Event) -> None:
        global _depth, _seconds
        _depth -= 1
        if _depth == 0:
            _seconds += time.perf_counter() - _started


event.register("numba:compile", _Clock())


def add_wait(seconds: float) -> None:
    """A wait for another process's compile, ``seconds`` long."""
    global _seconds
    if _depth == 0:
        _seconds += seconds


def compile_seconds() -> float:
    """Seconds this process has spent compiling or waiting for a compile, so far."""
    return _seconds
