"""Arrays allocated without initial values, poisoned on request.

Every array simsrv allocates without writing it first (numpy's ``empty``) comes from
:func:`empty` or :func:`empty_like`, in Python code and in compiled code alike (numba's
``register_jitable``: plain Python when called from Python, inlined when called from a compiled
function).  Such an array must be written before it is read; a read of memory nobody wrote
makes a result depend on what the process (or the allocator) left there before, that is on
what ran before.

**Poison mode.** With the environment variable ``SIMSRV_POISON`` set to a byte (``0xFF``,
``127``...), every such array is filled with that byte when it is allocated: ``0xFF`` makes
every float a NaN, every signed integer -1 and every boolean true; ``0x7F`` makes floats
~1.4e306 and integers huge and positive.  A run whose result changes in poison mode reads memory
it never wrote.  The byte is part of every compiled function's cache key
(:mod:`simsrv.core.compiled_loading`), so poisoned and ordinary machine code never mix in one
cache.  Unset (the default), the arrays are numpy's and numba's ``empty``: no cost.

Importing this module turns numpy's huge-page advice off (:mod:`simsrv.core.huge_pages`: on
the machines measured, fresh memory is several times cheaper to write in 4 KB pages).
"""

from __future__ import annotations

import os

import numpy as np
from numba.extending import register_jitable

from simsrv.core.huge_pages import advise_no_huge_pages

advise_no_huge_pages()

POISON_VARIABLE = "SIMSRV_POISON"
"""The environment variable that turns poison mode on (its value: the byte, 0-255)."""


def poison_byte(value: str | None) -> int:
    """The poison byte set by ``value`` (the variable's text: decimal, ``0x..`` or ``0o..``),
    or -1 (off) when unset or empty."""
    if value is None or not value.strip():
        return -1
    try:
        byte = int(value.strip(), 0)
    except ValueError:
        byte = -1
    if not 0 <= byte <= 255:
        raise SystemExit(f"{POISON_VARIABLE}: {value!r} is not a byte (0-255, e.g. 0xFF)")
    return byte


POISON = poison_byte(os.environ.get(POISON_VARIABLE))
"""The poison byte of this process, -1 when poison mode is off (read once, at import)."""


def poisoned_again(*arrays: np.ndarray) -> None:
    """In poison mode, fill ``arrays`` (working arrays kept from one use to the next, about
    to be used again as if new: written before they are read) with the poison byte, so that
    reading what the last use left shows as a read of a new array would.  Off: nothing."""
    if POISON >= 0:
        for array in arrays:
            array.view(np.uint8).reshape(-1)[:] = POISON


@register_jitable(inline="always")
def empty(shape, dtype=np.float64):  # noqa: ANN001, ANN201 (numba's argument types)
    """``np.empty(shape, dtype)``; in poison mode filled with :data:`POISON`."""
    array = np.empty(shape, dtype)
    if POISON >= 0:
        array.reshape(-1).view(np.uint8)[:] = POISON
    return array


@register_jitable(inline="always")
def empty_like(other):  # noqa: ANN001, ANN201 (numba's argument types)
    """``np.empty_like(other)`` (same shape and dtype, C order); in poison mode filled with
    :data:`POISON`."""
    array = np.empty(other.shape, other.dtype)
    if POISON >= 0:
        array.reshape(-1).view(np.uint8)[:] = POISON
    return array
