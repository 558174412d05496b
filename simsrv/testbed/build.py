"""Build the instrumented QuakeWorld server from the shared GPL source.

The server (mvdsv 0.35), id's game logic and id's maps are GPL and live outside this
repository, in the shared folder beside the checkout (``../shared/qw-testbed/`` and
``../shared/maps/quake-gpl/``).  :func:`build_server` unpacks the source into a cache
directory, applies our patch (``patches/mvdsv-0.35-simsrv-testbed.patch``, GPL-2.0-or-later)
and builds it with cmake; the binary is kept per (source, patch) digest, so the ~15-20 s
build runs once per machine.  Concurrent builds wait on a file lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from simsrv.core.errors import InputError

SOURCE_ARCHIVE = "mvdsv-0.35.tar.gz"
PATCH = Path(__file__).with_name("patches") / "mvdsv-0.35-simsrv-testbed.patch"
MAPS = ("dm1", "dm2", "dm3", "dm4", "dm5", "dm6", "e1m2", "start")
SERVER_MAX_CLIENTS = (32, 256)
"""The builds' MAX_CLIENTS (the patch's ``-DSIMSRV_MAX_CLIENTS``): 32, mvdsv's own, for up to
32 clients, so those runs measure the server as mvdsv ships it (player edicts 1..32, 479 of the
512 edicts left to the map); 256 beyond (255 edicts left to the map)."""


def server_max_clients(clients: int) -> int:
    """The smallest build that takes ``clients``."""
    for size in SERVER_MAX_CLIENTS:
        if clients <= size:
            return size
    raise InputError(f"testbed: at most {SERVER_MAX_CLIENTS[-1]} clients, got {clients}")


@dataclass(frozen=True)
class SharedFolder:
    """Where the GPL server source, game logic and maps are (never copied into the repo)."""

    root: Path

    @property
    def testbed(self) -> Path:
        return self.root / "qw-testbed"

    @property
    def archive(self) -> Path:
        return self.testbed / SOURCE_ARCHIVE

    @property
    def progs(self) -> Path:
        return self.testbed / "qwprogs.dat"

    def map_file(self, name: str) -> Path:
        """Where map ``name`` (a name of :data:`MAPS`, never a path) is kept."""
        if name not in MAPS:
            raise InputError(
                f"testbed --map must be one of {', '.join(MAPS)} (a name, not a path), got {name!r}"
            )
        return self.root / "maps" / "quake-gpl" / f"{name}.bsp.gz"

    def available_maps(self) -> list[str]:
        return [m for m in MAPS if self.map_file(m).is_file()]


def default_shared_root() -> Path:
    """``$SIMSRV_SHARED``, else the ``shared`` folder beside the checkout (or the cwd)."""
    env = os.environ.get("SIMSRV_SHARED")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[2]
    for candidate in (checkout.parent / "shared", Path.cwd().parent / "shared"):
        if (candidate / "qw-testbed").is_dir():
            return candidate
    return checkout.parent / "shared"


def find_shared(root: Path | None = None) -> SharedFolder:
    """The shared folder, checked: one :class:`InputError` line when a part is missing."""
    shared = SharedFolder(Path(root) if root is not None else default_shared_root())
    for what, path in (("the server source", shared.archive), ("id's qwprogs.dat", shared.progs)):
        if not path.is_file():
            raise InputError(
                f"testbed --shared: {what} is not at {path}; the testbed needs the shared folder "
                "(qw-testbed/ and maps/quake-gpl/) beside the checkout, or --shared DIR"
            )
    return shared


def missing_build_tools() -> list[str]:
    """The build tools (cmake, make, a C compiler, patch) this machine lacks."""
    return [tool for tool in ("cmake", "make", "cc", "patch") if shutil.which(tool) is None]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "simsrv" / "testbed"


@dataclass(frozen=True)
class ServerBuild:
    """A built, patched server: its binary and its unpacked (patched) source tree."""

    binary: Path
    source: Path
    digest: str
    max_clients: int = 256

    def command(self, basedir: Path, port: int) -> list[str]:
        """The server's command line, on ``port`` of the loopback address."""
        return [str(self.binary), "-basedir", str(basedir), "-port", str(port), "-ip", "127.0.0.1"]


def _digest(shared: SharedFolder) -> str:
    return read_digest(shared.archive, PATCH)[:16]


def cached_build(
    digest: str,
    archive: Path,
    tree_name: str,
    patch: Path,
    commands: list[tuple[list[str], str]],
    binary: str,
    what: str,
    quiet: bool = True,
) -> Path:
    """The unpacked tree ``tree_name`` of ``archive``, patched with ``patch`` and built by
    ``commands`` (each a command line and the tree's sub-folder it runs in, created if
    missing), kept in the cache under ``digest`` until ``binary`` (a path in the tree)
    exists: each build runs once per machine.  Concurrent builds wait on a file lock; a
    failed one leaves nothing in the cache."""
    home = cache_root() / digest
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / tree_name / binary).is_file():
            return home / tree_name
        if home.exists():
            shutil.rmtree(home)
        staging = home.with_name(digest + ".staging")
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir()
        try:
            _unpack(archive, staging, tree_name)
            tree = staging / tree_name
            out = subprocess.DEVNULL if quiet else None
            subprocess.run(
                ["patch", "-p1", "--quiet", "-i", str(patch)], cwd=tree, check=True, stdout=out
            )
            for command, folder in commands:
                (tree / folder).mkdir(exist_ok=True)
                subprocess.run(command, cwd=tree / folder, check=True, stdout=out, stderr=out)
        except subprocess.CalledProcessError as error:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"building {what} failed: {error}") from error
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        staging.rename(home)
    return home / tree_name


def _unpack(archive: Path, into: Path, tree_name: str) -> None:
    """Unpack ``archive`` into ``into``; one :class:`InputError` line naming the archive when
    it is not a readable tar.gz holding ``tree_name/``."""
    try:
        with tarfile.open(archive) as packed:
            packed.extractall(into, filter="data")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        reason = "not a tar archive" if isinstance(error, tarfile.ReadError) else str(error)
        raise InputError(
            f"testbed --shared: {archive} is not a readable source archive "
            f"({reason or type(error).__name__}); put the original tar.gz back in the shared "
            "folder"
        ) from None
    if not (into / tree_name).is_dir():
        raise InputError(
            f"testbed --shared: {archive} does not hold the folder {tree_name}/; put the "
            "original tar.gz back in the shared folder"
        )


def read_digest(*paths: Path) -> str:
    """The sha256 of the files ``paths`` in turn (hex), or one :class:`InputError` line
    naming the one that cannot be read."""
    h = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as stream:
                while chunk := stream.read(1 << 20):
                    h.update(chunk)
        except OSError as error:
            raise InputError(f"testbed --shared: cannot read {path}: {error.strerror}") from None
    return h.hexdigest()


def build_server(shared: SharedFolder, *, max_clients: int = 32, quiet: bool = True) -> ServerBuild:
    """Unpack, patch and build the server once per (source, patch, MAX_CLIENTS)."""
    if max_clients not in SERVER_MAX_CLIENTS:
        raise ValueError(f"max_clients must be one of {SERVER_MAX_CLIENTS}, got {max_clients}")
    missing = missing_build_tools()
    if missing:
        raise InputError(
            f"testbed: the build needs {', '.join(missing)} on PATH "
            "(Debian: apt-get install cmake build-essential patch)"
        )
    digest = f"{_digest(shared)}-c{max_clients}"
    cmake = [
        "cmake",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_C_FLAGS=-DSIMSRV_MAX_CLIENTS={max_clients}",
        "..",
    ]
    make = ["make", f"-j{os.cpu_count() or 2}"]
    tree = cached_build(
        digest,
        shared.archive,
        "mvdsv-0.35",
        PATCH,
        [(cmake, "build"), (make, "build")],
        "build/mvdsv",
        "the testbed server",
        quiet,
    )
    return ServerBuild(tree / "build" / "mvdsv", tree, digest, max_clients)
