"""Run the instrumented server: a base directory, the process, a CPU quota, a clean stop.

The server is started with its own CPU (``taskset``-like affinity set before exec), the
record file named by ``SIMSRV_TESTBED_FRAMES``, and, when asked, inside a cgroup v1 CPU
controller group with ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``.  It dies with its parent
(``PR_SET_PDEATHSIG``), and :meth:`ServerProcess.stop` asks it to ``quit`` on its console,
then terminates and kills it; the cgroup is removed afterwards.  Nothing outlives a run.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import socket
import subprocess
import time
import zlib
from pathlib import Path

from simsrv.core.errors import InputError
from simsrv.machine.quota import CpuQuota
from simsrv.scenario.schema import MAX_PERIOD_US, MAX_QUOTA_US, MIN_QUOTA_US
from simsrv.testbed.build import ServerBuild, SharedFolder
from simsrv.testbed.processes import stop_group, tie_and_pin
from simsrv.testbed.quaketm import QuakeTMBuild

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
MAX_MAP_BYTES = 64 << 20  # a GPL deathmatch map is ~0.3-1.5 MB unpacked

SERVER_CFG = """\
sv_getrealip 0
sv_mapcheck 0
maxclients {maxclients}
maxspectators 0
deathmatch 1
timelimit 0
fraglimit 0
hostname simsrv-testbed
timeout 65
sys_select_timeout 1000000
map {map}
"""


def kernel_quota(quota_us: int, period_us: int = 100_000) -> CpuQuota:
    """A cgroup v1 CFS quota, ``quota_us`` of CPU time per ``period_us`` of wall time, the
    model's :class:`~simsrv.machine.quota.CpuQuota`; one :class:`InputError` line when it is
    outside the kernel's bounds."""
    if quota_us < MIN_QUOTA_US:
        raise InputError(
            f"testbed --quota-us must be >= {MIN_QUOTA_US:.0f} (the kernel's "
            f"minimum), got {quota_us}"
        )
    if quota_us > MAX_QUOTA_US:
        raise InputError(f"testbed --quota-us must be <= {MAX_QUOTA_US:.0f}, got {quota_us}")
    if not MIN_QUOTA_US <= period_us <= MAX_PERIOD_US:
        raise InputError(
            f"testbed --period-us must be in [{MIN_QUOTA_US:.0f}, {MAX_PERIOD_US:.0f}], "
            f"got {period_us}"
        )
    return CpuQuota(quota_us, period_us)


def cgroup_available() -> bool:
    return (CGROUP_CPU / "cpu.cfs_quota_us").exists() and os.access(CGROUP_CPU, os.W_OK)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def socket_buffer_packets(payload_bytes: int = 48, tries: int = 4096) -> int:
    """How many small datagrams a UDP socket with the default receive buffer holds on the
    loopback interface before the kernel drops the next (measured: mvdsv does not set
    SO_RCVBUF, so its socket has ``net.core.rmem_default`` bytes, and each queued datagram
    counts its buffer's true size against them: 256 packets on this machine's kernel)."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        address = receiver.getsockname()
        for _ in range(tries):
            sender.sendto(bytes(payload_bytes), address)
        held = 0
        while True:
            try:
                receiver.recv(2048)
            except BlockingIOError:
                return held
            held += 1
    finally:
        receiver.close()
        sender.close()


def read_map(shared: SharedFolder, map_name: str) -> bytes:
    """The unpacked BSP of ``map_name`` from the shared folder, or one :class:`InputError`
    line (no such map, not a gzip file, too big)."""
    source = shared.map_file(map_name)
    if not source.is_file():
        raise InputError(
            f"testbed --map: no map {map_name!r} in {source.parent} "
            f"(available: {', '.join(shared.available_maps()) or 'none'})"
        )
    try:
        with gzip.open(source) as packed:
            data = packed.read(MAX_MAP_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(
            f"testbed --shared: {source} is not a readable gzip file ({error}); the shared "
            "folder's maps/quake-gpl/ holds id's maps as MAP.bsp.gz"
        ) from None
    if len(data) > MAX_MAP_BYTES:
        raise InputError(f"testbed --map: {source} unpacks to more than {MAX_MAP_BYTES} bytes")
    return data


def prepare_basedir(
    directory: Path,
    shared: SharedFolder,
    map_name: str,
    maxclients: int,
    map_data: bytes | None = None,
) -> Path:
    """A server base directory: ``qw/qwprogs.dat``, ``qw/maps/MAP.bsp``, ``qw/server.cfg``
    (``map_data``: the map already read by :func:`read_map`)."""
    data = read_map(shared, map_name) if map_data is None else map_data
    qw = directory / "qw"
    (qw / "maps").mkdir(parents=True, exist_ok=True)
    progs = qw / "qwprogs.dat"
    if not progs.exists():
        progs.symlink_to(shared.progs)
    (qw / "maps" / f"{map_name}.bsp").write_bytes(data)
    (qw / "server.cfg").write_text(SERVER_CFG.format(map=map_name, maxclients=maxclients))
    return directory


class ServerProcess:
    """The running server; a context manager that always stops it and its cgroup."""

    def __init__(
        self,
        build: ServerBuild | QuakeTMBuild,
        basedir: Path,
        port: int,
        frames_file: Path,
        *,
        cpu: int | frozenset[int] | None = None,
        quota: CpuQuota | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.build, self.basedir, self.port = build, basedir, port
        self.frames_file, self.cpu, self.quota = frames_file, cpu, quota
        self.args, self.env = args, dict(env or {})
        self.process: subprocess.Popen | None = None
        self.cgroup: Path | None = None
        self.log_path = basedir / "server.log"

    def _preexec(self) -> None:
        tie_and_pin(self.cpu)
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def start(self, ready_timeout_s: float = 15.0) -> None:
        if self.quota is not None:
            if not cgroup_available():
                raise InputError(
                    "testbed --quota-us: needs a writable cgroup v1 cpu controller "
                    f"at {CGROUP_CPU} (run as root on a cgroup v1 machine)"
                )
            self.cgroup = CGROUP_CPU / f"simsrv-testbed-{os.getpid()}-{self.port}"
            self.cgroup.mkdir(exist_ok=True)
            (self.cgroup / "cpu.cfs_period_us").write_text(str(int(self.quota.period_us)))
            (self.cgroup / "cpu.cfs_quota_us").write_text(str(int(self.quota.quota_us)))
        env = dict(os.environ, **self.env, SIMSRV_TESTBED_FRAMES=str(self.frames_file))
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [*self.build.command(self.basedir, self.port), *self.args],
            cwd=self.basedir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=self._preexec,
        )
        self._wait_ready(ready_timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.settimeout(0.2)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"the server exited at start (code {self.process.returncode}): "
                        f"{self.last_log_line() or 'no console output'}"
                    )
                probe.sendto(b"\xff\xff\xff\xffstatus\n", ("127.0.0.1", self.port))
                with contextlib.suppress(TimeoutError, ConnectionRefusedError, OSError):
                    data, _ = probe.recvfrom(4096)
                    if data.startswith(b"\xff\xff\xff\xffn"):
                        return
                time.sleep(0.05)
        raise RuntimeError(f"the server did not answer on port {self.port} within {timeout_s} s")

    def stop(self) -> int | None:
        """Quit the server (console ``quit``, then SIGTERM, then SIGKILL); remove its cgroup."""
        code = None
        if self.process is not None:
            if self.process.poll() is None:
                with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                    self.process.stdin.write(b"quit\n")
                    self.process.stdin.flush()
                stop_group(self.process, grace_s=3.0)
            code = self.process.returncode
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            self.log.close()
            self.process = None
        if self.cgroup is not None:
            for _ in range(50):
                try:
                    self.cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
            self.cgroup = None
        return code

    def exit_code_so_far(self) -> int | None:
        """The server's exit code if it has already exited (a crash), else None."""
        return None if self.process is None else self.process.poll()

    def last_log_line(self) -> str:
        """The server's last console line (its error message after a crash)."""
        with contextlib.suppress(OSError):
            if not self.log.closed:  # stop() closes it
                self.log.flush()
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
            return lines[-1] if lines else ""
        return ""

    def throttling(self) -> dict[str, int]:
        """The cgroup's ``cpu.stat`` (periods, throttled periods, throttled time in ns)."""
        if self.cgroup is None:
            return {}
        stats = {}
        for line in (self.cgroup / "cpu.stat").read_text().splitlines():
            key, value = line.split()
            stats[key] = int(value)
        return stats

    def __enter__(self) -> ServerProcess:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
