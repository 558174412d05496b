"""A stamp of the source compiled code is made from, part of every cached function's key.

numba keys a function's cached machine code by the modification time and size of the
function's *own* file.  A compiled function's code also holds the code of the compiled
functions it calls (inlined, or linked in) and the module constants it reads, frozen when it
was compiled; when those live in another file and change (an engine rule in
``machine/engine.py`` under a frame loop in ``frame_steps/kernels.py``, a register's index),
numba still loads the caller's old code as valid, and the run computes with the old rule.
Seen in simsrv: the compiled frame loop, cached before a change to the engine's registers,
ran the old engine.

:data:`SOURCE_STAMP` hashes the text of every module of the packages that hold compiled code
or the constants it reads (:data:`COMPILED_PACKAGES`); :mod:`simsrv.core.compiled_loading` adds
it to every function's cache key.  Any change to that source makes every cached function a
miss, compiled again once (a first run's compile time, docs/performance.md); changes elsewhere
(the command line, the pipeline, documentation files) keep the cache.  Reading the ~150 files
costs a few milliseconds per process.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

COMPILED_PACKAGES = (
    "core",
    "frame_steps",
    "machine",
    "metrics",
    "strategies",
    "workload",
    "world",
)
"""The packages of ``simsrv`` whose modules define compiled functions or constants they read."""


def source_stamp(root: Path, packages: tuple[str, ...] = COMPILED_PACKAGES) -> str:
    """A hash of the path and text of every ``.py`` file under ``root``'s ``packages``."""
    digest = hashlib.blake2b(digest_size=16)
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


SOURCE_STAMP = source_stamp(Path(__file__).resolve().parents[1])
"""The stamp of the installed simsrv."""
