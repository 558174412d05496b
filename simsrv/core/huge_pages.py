"""numpy's transparent-huge-page advice, off in simsrv's processes unless the user chose.

numpy advises the kernel to back each array of 4 MB or more with 2 MB pages
(``madvise(MADV_HUGEPAGE)``).  A page's first write then maps 2 MB at once, which the kernel
must find free and contiguous (compacting memory when it is not) and zero.  On the machines
simsrv is developed and benchmarked on (2-core virtual machines, ``transparent_hugepage`` in
``madvise`` mode), a process's first write to 300 MB of fresh memory took 0.58-0.73 s with the
advice and 0.11 s without (4 KB pages, ~77,000 faults), measured in fresh processes; memory
written before within the process costs ~0.03 s either way.  Runs that fill large buffers
(a cluster's sockets, a million players' arrays) spent up to a fifth of their CPU time in
those faults: without the advice the 100,000-player cluster ran 20 % faster and the
100,000-client single server 12 % faster, neither slower in user time, and the peak memory of
the smaller runs fell (unused parts of 2 MB pages are no longer mapped): docs/performance.md.

Setting the environment variable ``NUMPY_MADVISE_HUGEPAGE`` (numpy's own switch: ``1`` on,
``0`` off) before simsrv is imported keeps numpy's choice, e.g. on a machine where huge pages
are cheap to map.  The advice changes where memory comes from, never a value: results are
the same either way.
"""

from __future__ import annotations

import os

import numpy as np

NUMPY_VARIABLE = "NUMPY_MADVISE_HUGEPAGE"
"""numpy's environment variable for the advice (read by numpy when it is imported)."""


def advise_no_huge_pages() -> bool:
    """Turn numpy's huge-page advice off for this process, unless :data:`NUMPY_VARIABLE` is
    set (the user's choice stands) or this numpy has no switch for it.  Returns whether it
    was turned off here."""
    if os.environ.get(NUMPY_VARIABLE, "").strip():
        return False
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True
