"""Unique ids for numba's compiled functions that no other process hands out.

numba names the machine code of every function it compiles (the function itself and each of
numba's own implementations it links in: ``np.sort``, ``np.argsort``, ``max`` ...) by its
qualified name, its argument types and an id, ``v<uid>`` in the mangled symbol.  The id comes
from a counter of the process (``FunctionIdentity._unique_ids``, from 1), so two processes that
compile in a different order give the same id to different functions.  Most of numba's
implementations are closures made by a factory (the quicksort of ``np.sort`` and of
``np.argsort`` are both ``make_quicksort_impl.<locals>.partition``, ``run_quicksort1``),
so the qualified name and the argument types do not tell them apart: two such closures with
the same id get the same symbol and different bodies.  The symbols are ``linkonce_odr`` (one
definition per name, any copy as good as another): a process that loads both from the on-disk
cache keeps the first one loaded, and the other function calls it.  Seen in simsrv: ``_distinct``
(``np.unique``, which sorts) cached by one process, ``count_commands`` (``np.argsort``) by
another; a cluster run loading both had ``np.argsort`` run ``np.sort``'s partition, so
``count_commands`` read packets at indices that were sort keys (outside the array) and the
results depended on whatever memory was there (numba's issue #10486).

:func:`install` replaces numba's counter by :class:`ProcessUniqueIds`: each id is 64 random
bits (from ``os.urandom``, so a forked process draws other ones than its parent) above a counter
of the process (so ids never repeat within one).  Only the names change; the code is the same.
Code cached before the ids were unique may hold colliding names: :data:`CACHE_KEY_SALT` is part
of every cache key (:mod:`simsrv.core.compiled_loading`), so that code is never loaded again.
"""

from __future__ import annotations

import itertools
import os

from numba.core.bytecode import FunctionIdentity

CACHE_KEY_SALT = "simsrv: process-unique symbol ids"
"""Added to the cache key of every simsrv function: code cached with numba's own counter (which
may call another function's code, see the module's doc) is a miss and compiled again."""


class ProcessUniqueIds:
    """An endless iterator of ids unique within the process (a counter in the low 32 bits) and
    across processes (64 random bits above it)."""

    def __init__(self) -> None:
        self._count = itertools.count(1)

    def __iter__(self) -> ProcessUniqueIds:
        return self

    def __next__(self) -> int:
        return int.from_bytes(os.urandom(8), "little") << 32 | next(self._count) & 0xFFFFFFFF


def install() -> None:
    """Make numba draw its function ids from :class:`ProcessUniqueIds` (once; numba releases
    without the counter are left alone)."""
    if isinstance(getattr(FunctionIdentity, "_unique_ids", None), itertools.count):
        FunctionIdentity._unique_ids = ProcessUniqueIds()
