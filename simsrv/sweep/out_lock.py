"""One writer per output directory: ``simsrv sweep``, ``simsrv capacity --sweep`` and
``simsrv compare`` hold a lock on their ``--out`` while they run.

Two sweeps writing one store at once each believed it was the only writer (two rows per run,
or one sweep stopping with a ``FileNotFoundError`` when the other merged a file away); two
comparisons on one ``--out`` deleted and rewrote each other's tables.  The second one is now
refused before it computes anything, with one line naming the first one's pid (exit 2).

The lock is an advisory :func:`fcntl.flock` on :data:`LOCK_NAME` inside the directory, taken
without waiting.  Assumptions:

* The operating system releases a ``flock`` when the last descriptor of its open file is
  closed, so the lock dies with the process that holds it, even by ``kill -9``: the file left
  behind locks nothing (it only says who held it last).
* Processes this one forks (pool workers) inherit the descriptor and with it the lock, which
  would outlive a killed parent for as long as they do; a fork handler closes the inherited
  descriptor in every child (closing a duplicate leaves the parent's lock in place).
* Readers do not take the lock: reading a store while a sweep writes it is supported.
* Where :mod:`fcntl` does not exist (Windows), nothing is locked.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from simsrv.core.errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".simsrv.lock"
"""The lock file in a locked directory; it holds ``<pid> <command>`` of the last holder."""

_held: set[int] = set()
"""Descriptors of the locks this process holds (closed in forked children)."""


@contextmanager
def hold(directory: Path, flag: str, command: str) -> Iterator[None]:
    """Hold the lock on ``directory`` (an existing directory, given by ``flag``) for the
    ``with`` block; ``command`` says who holds it.  Raises :class:`InputError` naming the
    holder's pid when another process holds it."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    path = Path(directory) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise InputError(f"{flag}: cannot create the lock file {path}: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise InputError(
            f"{flag}: {directory} is in use by another simsrv process ({holder}); wait for it "
            f"to end or give another {flag}"
        ) from None
    _held.add(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
        yield
    finally:
        _held.discard(fd)
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    """Who holds the lock, from the file's text (the holder writes it just after locking)."""
    try:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    pid, _, command = text.partition(" ")
    if not pid.isdigit():
        return "pid unknown"
    return f"pid {pid}, {command}" if command else f"pid {pid}"


def _close_inherited() -> None:
    """In a forked child: close the lock descriptors inherited from the parent."""
    for fd in _held:
        with suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited)
