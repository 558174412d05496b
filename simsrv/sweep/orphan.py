"""Pool workers that exit when the process that started them dies.

A ``ProcessPoolExecutor`` worker blocks waiting for work; when its parent is killed with
``kill -9`` nobody tells it, so it stays alive, re-parented, holding its memory (~170 MB for a
sweep worker).  :func:`exit_with_parent` is the pool's ``initializer``: it starts a daemon
thread that checks every :data:`POLL_S` seconds whether the worker's parent changed (the
parent died and the worker was re-parented) and then ends the worker at once with
``os._exit``.  The check costs one ``getppid`` call per poll; the thread holds no lock a run
needs.
"""

from __future__ import annotations

import os
import threading
import time

POLL_S = 0.25  # seconds between two checks of the parent


def exit_with_parent(poll_s: float = POLL_S) -> None:
    """Start the watchdog thread in this (worker) process; call it once, at start-up."""
    parent = os.getppid()
    threading.Thread(
        target=_watch, args=(parent, poll_s), name="exit-with-parent", daemon=True
    ).start()


def _watch(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(70)  # EX_SOFTWARE: the parent is gone, no one will collect the result
