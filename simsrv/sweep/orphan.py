"""Pool workers that exit when the process that started them dies.

A ``ProcessPoolExecutor`` worker blocks waiting for work; when its parent is killed with
``kill -9`` nobody tells it, so it stays alive, re-parented, holding its memory (~170 MB for a
sweep worker).  :func:`exit_with_parent` is the pool's ``initializer``:

* on Linux it asks the kernel to send the worker ``SIGKILL`` when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``): immediate, even while the worker is inside a compiled
  function that holds the GIL for the length of a run.  The kernel sends it when the
  *thread* that forked the worker ends; the pool forks its workers from the thread that
  first submits to it (:func:`simsrv.sweep.local.run_parallel`: the caller's, which waits for
  the pool to finish), so that thread's end is the parent's end;
* everywhere it starts a daemon thread that checks every :data:`POLL_S` seconds whether the
  worker's parent changed (the parent died and the worker was re-parented) and then ends the
  worker at once with ``os._exit``.  The check costs one ``getppid`` call per poll; the thread
  holds no lock a run needs;
* it restores SIGTERM's default action, in case the parent's handler
  (:func:`simsrv.sweep.local.run_parallel` turns SIGTERM into an interruption) was inherited.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

POLL_S = 0.25  # seconds between two checks of the parent
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def exit_with_parent(poll_s: float = POLL_S) -> None:
    """Make this (worker) process end with its parent; call it once, at start-up."""
    parent = os.getppid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _kill_on_parent_death()
    if os.getppid() != parent:  # the parent died before the kernel was asked
        os._exit(70)
    threading.Thread(
        target=_watch, args=(parent, poll_s), name="exit-with-parent", daemon=True
    ).start()


def _kill_on_parent_death() -> None:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux; nothing elsewhere, or if it fails."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _watch(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(70)  # EX_SOFTWARE: the parent is gone, no one will collect the result
