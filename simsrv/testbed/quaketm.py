"""Build QuakeTM, a lock-based multithreaded QuakeWorld server, from the shared GPL source.

QuakeTM (Gajinov et al., "QuakeTM: Parallelizing a Complex Serial Application Using
Transactional Memory", ICS 2009) is id's QuakeWorld 2.40 server whose request stage runs as
OpenMP tasks under locks.  Its source lives outside this repository
(``../shared/qw-parallel/quaketm-f024c83.tar.gz``); :func:`build_quaketm` unpacks it into a
cache directory, applies our patch (``patches/quaketm-f024c83-simsrv.patch``,
GPL-2.0-or-later: gcc and OpenMP, id's GPL progs, frames slept to instead of busy-waited
for, the fixes the clients needed) and builds one variant with its Makefile; the binary is
kept per (source, patch, variant) digest, so each build runs once per machine.  Concurrent
builds wait on a file lock.

The variants (:data:`VARIANTS`): ``serial`` (no OpenMP tasks), ``global`` (every packet's
processing under one lock), ``coarse`` and ``fine`` (the areanode tree and each client's
messages under their own locks, coarse or fine grained: ``server/tm_macros.h``).  A server
runs as ``qwsv -basedir DIR -port P -threads T -frametime S``: T OpenMP threads, frames at a
fixed period of S seconds (0.1 stock).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simsrv.core.errors import InputError
from simsrv.testbed.build import SharedFolder, cached_build, missing_build_tools, read_digest

ARCHIVE = "quaketm-f024c83.tar.gz"
TREE = "quaketm-f024c83"
PATCH = Path(__file__).with_name("patches") / "quaketm-f024c83-simsrv.patch"
VARIANTS = {
    "serial": "serial",
    "global": "lock_global",
    "coarse": "lock_coarse",
    "fine": "lock_fine",
}
"""Our name of each variant -> its ``make run=`` target."""
MAX_CLIENTS = 32
"""QuakeWorld 2.40's ``MAX_CLIENTS`` (QuakeTM keeps it)."""
MAX_THREADS = 8
"""QuakeTM's ``MAXNUMTHR`` and the thread slots of its per-frame record."""


def archive_path(shared: SharedFolder) -> Path:
    """Where the shared folder keeps QuakeTM's source."""
    return shared.root / "qw-parallel" / ARCHIVE


@dataclass(frozen=True)
class QuakeTMBuild:
    """A built, patched QuakeTM variant: its binary and its patched source tree."""

    binary: Path
    source: Path
    variant: str
    digest: str
    max_clients: int = MAX_CLIENTS

    def command(self, basedir: Path, port: int) -> list[str]:
        """The server's command line on ``port`` (threads and frame period: :func:`run_args`)."""
        return [str(self.binary), "-basedir", str(basedir), "-port", str(port)]


def run_args(threads: int, frame_s: float = 0.1) -> tuple[str, ...]:
    """QuakeTM's run options: ``threads`` OpenMP threads, frames every ``frame_s`` seconds."""
    return ("-threads", str(threads), "-frametime", repr(float(frame_s)))


def _digest(archive: Path, variant: str) -> str:
    return f"quaketm-{read_digest(archive, PATCH)[:16]}-{variant}"


def build_quaketm(shared: SharedFolder, variant: str, *, quiet: bool = True) -> QuakeTMBuild:
    """Unpack, patch and build QuakeTM's ``variant`` once per (source, patch, variant)."""
    if variant not in VARIANTS:
        raise InputError(f"QuakeTM variants are {', '.join(VARIANTS)}, got {variant!r}")
    archive = archive_path(shared)
    if not archive.is_file():
        raise InputError(
            f"QuakeTM ({variant}): its source is not at {archive} "
            "(the shared folder's qw-parallel/)"
        )
    missing = [tool for tool in missing_build_tools() if tool != "cmake"]
    if missing:
        raise InputError(
            f"testbed: the QuakeTM build needs {', '.join(missing)} on PATH "
            "(Debian: apt-get install build-essential patch)"
        )
    digest = _digest(archive, variant)
    make = ["make", f"run={VARIANTS[variant]}"]
    tree = cached_build(
        digest, archive, TREE, PATCH, [(make, "server")], "server/qwsv", f"QuakeTM ({variant})",
        quiet,
    )  # fmt: skip
    return QuakeTMBuild(tree / "server" / "qwsv", tree, variant, digest)
