"""The testbed's child processes (the server, the load generator): started tied to simsrv and
pinned, stopped for sure, so that nothing the testbed starts outlives it."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess

PR_SET_PDEATHSIG = 1


def tie_and_pin(cpu: int | frozenset[int] | None) -> None:
    """In the child, before it runs: it gets SIGKILL when simsrv dies (``prctl``), leads its
    own session (a Ctrl-C reaches simsrv, which stops it), and runs on ``cpu`` (a CPU, a set
    of CPUs its threads may use, or None: any)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu} if isinstance(cpu, int) else cpu)


def stop_group(process: subprocess.Popen, grace_s: float = 0.0) -> None:
    """Let ``process`` exit by itself for ``grace_s``, then SIGTERM its process group (2 s),
    then SIGKILL it (5 s)."""
    if process.poll() is not None:
        return
    for sig, wait_s in ((None, grace_s), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
        try:
            process.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
