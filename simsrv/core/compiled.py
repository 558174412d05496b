"""Compiling the hot loops with numba, with its on-disk cache when it can have one.

``@compiled`` is ``numba.njit(cache=True)``: the first process after an install compiles each
function (a few seconds in all, see docs/performance.md) and stores the machine code next to
the module (``__pycache__``) or, when that directory is read-only, in numba's per-user cache
directory (``NUMBA_CACHE_DIR`` overrides it); later processes load it.  When no cache location
is writable, numba refuses ``cache=True``; the function is then compiled without a cache, in
every process (correct, only slower to start).  Cached code is loaded through
:mod:`simsrv.core.compiled_loading`, which skips the parts of numba's loading that only a compiler
needs (~0.15-0.2 s CPU of a process's first run).

Importing numba creates ~100,000 Python objects (its type system, LLVM bindings) that every
full garbage collection of the run would traverse again: a run allocates millions of small
objects (the machine's events, the Python engines' trace rows), so collections are frequent,
and the numba objects made the thread strategies ~20 % slower.  The objects alive once numba is
imported (modules and their tables, which live as long as the process) are moved out of the
collector's reach with :func:`gc.freeze`, once.

numba's ids of compiled functions are made unique across processes
(:mod:`simsrv.core.symbol_ids`) before anything is compiled: with its own counter, code cached by
two processes could share a symbol name, and one function then ran the other's code.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from typing import Any

import numba
from numba.core.cpu import CPUTargetOptions
from numba.core.errors import NumbaWarning

from simsrv.core import symbol_ids
from simsrv.core.compiled_loading import install

symbol_ids.install()
gc.freeze()


def _cached(function: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """``numba.njit(**options)(function)`` with numba's on-disk cache, loaded through
    :func:`install`; without the cache when no cache location is writable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaWarning)
            return install(numba.njit(cache=True, **options)(function))
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **options)(function)


def compiled(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` compiled in nopython mode on first call, cached on disk if possible."""
    return _cached(function)


def row_kernel(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` compiled as :func:`compiled`, releasing the GIL while it runs (numba's
    ``nogil``): for the per-row kernels :func:`simsrv.core.row_split.split_rows` runs on
    several threads at once."""
    return _cached(function, nogil=True)


def borrowing(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` compiled as :func:`compiled`, without reference counting: for the small
    helpers of a compiled loop that only read and write arrays their caller holds (they
    allocate no array and return or keep none; a scalar may be returned).  Numba otherwise
    increments and decrements the count of every array argument (and of every array taken
    out of a tuple argument) on each call, atomically: ~20 ns per call of a helper that gets
    a tuple of state arrays, which made most of the compiled engine's time.  Uses numba's
    ``_nrt`` option; a numba without it compiles the function as :func:`compiled` (correct,
    slower).
    """
    if not hasattr(CPUTargetOptions, "_nrt"):
        return compiled(function)
    return _cached(function, _nrt=False)


def inlined(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` inlined into every compiled caller (numba's ``inline="always"``, at the
    level of numba's IR), compiled without reference counting of its own: for the small
    helpers of the machine's engine, each called from a few places.  A :func:`borrowing`
    helper compiled on its own costs ~0.3-1 s to compile (types, lowering, LLVM and the
    cache, per argument types), and the engine has ~30 of them; inlined, they compile as part
    of their callers (the engine's first compile fell from ~39 s to ~26 s on a loaded 2-core
    machine).  Not callable from Python.

    Inlined code is counted by its caller: numba drops the increments and decrements of an
    array's reference count only within a basic block, so a helper with branches that reads
    arrays (arguments, or taken out of a tuple) costs its caller ~20 ns of atomic counting
    per call (a branchless one nothing).  Such a helper in a loop over millions of items
    (e.g. a packet's append to its socket) is :func:`borrowing` instead: ~0.6 ns a call."""
    return numba.njit(inline="always", _nrt=False)(function)


def inlinable(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` inlined into every compiled caller, as :func:`inlined`, and compiled (and
    cached) as :func:`compiled` when Python calls it: for the small rules both compiled and
    Python code call (the cost rules).  Inlined, a rule costs its compiled callers no
    separate compile per argument types (~0.3-0.6 s each on a 2-core machine)."""
    return _cached(function, inline="always")


def inlined_allocating(function: Callable[..., Any]) -> Callable[..., Any]:
    """As :func:`inlined`, for a helper that allocates arrays (reference counting on)."""
    return numba.njit(inline="always")(function)
