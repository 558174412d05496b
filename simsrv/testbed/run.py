"""One testbed run: build, start the real server, drive the clients, read what happened.

:func:`run_testbed` returns a :class:`TestbedResult`: the server's frame table (every frame,
``measured`` marking the window), one row per client, and a summary whose keys follow
``simsrv run --json`` where the quantity is the same (``frames_per_s``,
``messages_per_frame``, ``messages_per_s``, ``replies_per_s``, ``reply_ratio``, the stage
shares) plus what only a real server has (CPU time per stage, the clients' round trips).

The measured window is the clients' ``[start, start + duration_s]`` after every client has
signed on and ``warmup_s`` has passed; a frame belongs to it when it starts inside it.
The clients run in the compiled load generator (:mod:`simsrv.testbed.loadgen`, the default)
or in this process (``clients_impl="python"``), pinned to ``client_cpu``; the server to
``server_cpu``.  A load generator that cannot keep up (:data:`MAX_SEND_LATENESS_P95_MS`,
:data:`MAX_CLIENT_BUSY_SHARE`) is named in the summary's ``load_generator_warning``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform as host_platform
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.core.errors import InputError
from simsrv.scenario.schema import DEFAULT_PERIOD_US, MAX_SEED
from simsrv.testbed import protocol as qw
from simsrv.testbed.build import MAPS, build_server, find_shared, server_max_clients
from simsrv.testbed.clients import (
    SIGNON_SPACING_S,
    ClientPlan,
    ClientRun,
    PhasePattern,
    run_clients,
)
from simsrv.testbed.frames import read_frames, wakeup_latencies_us
from simsrv.testbed.loadgen import build_loadgen, run_loadgen
from simsrv.testbed.quaketm import MAX_CLIENTS as QUAKETM_MAX_CLIENTS
from simsrv.testbed.quaketm import MAX_THREADS as QUAKETM_MAX_THREADS
from simsrv.testbed.quaketm import VARIANTS as QUAKETM_VARIANTS
from simsrv.testbed.server import (
    ServerProcess,
    kernel_quota,
    port_is_free,
    prepare_basedir,
    read_map,
    socket_buffer_packets,
)

MAX_CLIENTS = qw.MAX_CLIENTS
CLIENT_IMPLS = ("c", "python")
SERVERS = ("mvdsv", *(f"quaketm-{variant}" for variant in QUAKETM_VARIANTS))
"""The real servers: mvdsv 0.35 (one thread) and QuakeTM's builds (OpenMP threads)."""
OMP_WAIT_POLICIES = ("passive", "active")
MAX_SEND_LATENESS_P95_MS = 1.0
"""A run whose sends leave later than this after their due time (95th percentile, the
burst's own width excluded, see :func:`send_lateness_p95_ms`) had a load generator that
could not keep up."""
MAX_CLIENT_BUSY_SHARE = 0.95
"""...nor one busy (sending, reading, handling replies) more than this share of the window.
Its CPU share (``client_cpu_share``) is no measure of that: the generator polls its sockets
for the last 0.3 ms before every send, so with sends < 0.3 ms apart it uses ~100 % of its
CPU however little work it does."""


def signon_timeout_s(clients: int) -> float:
    """How long the clients may take to sign on: 20 s, more when they join one by one."""
    return max(20.0, clients * SIGNON_SPACING_S + 15.0)


MIN_RATE_HZ, MAX_RATE_HZ = 1.0, 1000.0
"""The clients' rate: at least one packet a second each, at most one a millisecond."""
MAX_DURATION_S = 3600.0
"""The longest measured window (s): also the bound on a stored condition's, so that the
model of a comparison cannot be asked to run for ever."""
MAX_WARMUP_S = 600.0
MIN_PORT, MAX_PORT = 1024, 65535
MAX_CPUS = 1024
MAP_NAME = re.compile(r"[A-Za-z0-9_]+")
"""A map is named, never a path: id's GPL maps of the shared folder (:data:`MAPS`)."""
LABEL_BASE = {
    "mvdsv": {
        "duration_s": 10.0, "warmup_s": 2.0, "port": 27600, "server_cpu": 1, "client_cpu": 0,
        "clients_impl": "c",
    },
    "quaketm": {"duration_s": 6.0, "warmup_s": 1.0, "port": 27620, "client_cpu": 0,
                "clients_impl": "c"},
}  # fmt: skip
"""The fields a label names only where they differ from these: the standard campaign's
values (mvdsv) and QuakeTM's campaign's, so that those campaigns' labels stay short."""
QUOTA_LABEL_PERIOD_US = 20_000
"""A quota's period a label does not name (the standard campaign's, 20 ms)."""


def number_label(value: float) -> str:
    """A number as a label shows it: the shortest text that reads back as the same float
    (``77``, ``31.25``, ``0.5``), so that two values never share a label."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class TestbedConfig:
    """One measured condition of the real server.

    ``server`` is mvdsv or one of QuakeTM's builds (``quaketm-serial|global|coarse|fine``);
    QuakeTM runs ``threads`` OpenMP threads, frames at the fixed period ``frame_s`` (0.1 s
    stock) and its idle threads wait as ``omp_wait`` says (libgomp's ``OMP_WAIT_POLICY``:
    ``passive`` sleeps, ``active`` spins).  ``server_cpu`` None lets the server's threads
    use every CPU; with ``bind`` each OpenMP thread is bound to one CPU, thread 0 away from
    the clients' CPU (``OMP_PROC_BIND=close``, ``OMP_PLACES``).
    """

    __test__ = False  # not a pytest class

    clients: int = 16
    map: str = "dm1"
    rate_hz: float = 77.0
    phases: str = "independent"
    duration_s: float = 20.0
    warmup_s: float = 2.0
    seed: int = 1
    quota_us: int | None = None
    period_us: int = 100_000
    port: int = 27600
    server_cpu: int | None = 1
    client_cpu: int = 0
    clients_impl: str = "c"
    server: str = "mvdsv"
    threads: int = 1
    frame_s: float = 0.1
    omp_wait: str = "passive"
    bind: bool = False

    @property
    def quaketm(self) -> str | None:
        """QuakeTM's variant (serial, global, coarse, fine), or None for mvdsv."""
        return self.server.removeprefix("quaketm-") if self.server != "mvdsv" else None

    def checked(self) -> TestbedConfig:
        """This config, or one :class:`InputError` line naming the bad field: the rules of
        :meth:`static_check`, and the CPUs this process may use."""
        self.static_check()
        cpus = sorted(os.sched_getaffinity(0))
        for name, cpu in (("server-cpu", self.server_cpu), ("client-cpu", self.client_cpu)):
            if cpu is None and name == "server-cpu":
                continue
            if cpu not in cpus:
                raise InputError(
                    f"testbed --{name} must be one of this process's CPUs {cpus}, got {cpu}"
                )
        return self

    def static_check(self) -> TestbedConfig:
        """This config, or one :class:`InputError` line naming the bad field: every rule
        that does not depend on this machine (a stored condition measured elsewhere is held
        to these)."""
        if self.server not in SERVERS:
            raise InputError(
                f"testbed --server must be one of {', '.join(SERVERS)}, got {self.server!r}"
            )
        most = MAX_CLIENTS if self.quaketm is None else QUAKETM_MAX_CLIENTS
        if not 1 <= self.clients <= most:
            raise InputError(
                f"testbed --clients must be in [1, {most}] (MAX_CLIENTS of the "
                f"patched {self.server}), got {self.clients}"
            )
        if not (isinstance(self.map, str) and MAP_NAME.fullmatch(self.map)):
            raise InputError(
                f"testbed --map must be a map name (letters, digits, _), not a path: one of "
                f"{', '.join(MAPS)}; got {self.map!r}"
            )
        if self.map not in MAPS:
            raise InputError(f"testbed --map: no map {self.map!r} (one of {', '.join(MAPS)})")
        self._check_threads()
        if self.clients_impl not in CLIENT_IMPLS:
            raise InputError(
                f"testbed --clients-impl must be one of {', '.join(CLIENT_IMPLS)}, "
                f"got {self.clients_impl!r}"
            )
        if not (MIN_RATE_HZ <= self.rate_hz <= MAX_RATE_HZ):
            raise InputError(
                f"testbed --rate-hz must be in [{MIN_RATE_HZ:g}, {MAX_RATE_HZ:g}], "
                f"got {self.rate_hz:g}"
            )
        if not (0 < self.duration_s <= MAX_DURATION_S):
            raise InputError(
                f"testbed --duration-s must be in (0, {MAX_DURATION_S:g}], got {self.duration_s:g}"
            )
        if not (0 <= self.warmup_s <= MAX_WARMUP_S):
            raise InputError(
                f"testbed --warmup-s must be in [0, {MAX_WARMUP_S:g}], got {self.warmup_s:g}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise InputError(f"testbed --seed must be in [0, {MAX_SEED}], got {self.seed}")
        if not MIN_PORT <= self.port <= MAX_PORT:
            raise InputError(f"testbed --port must be in [{MIN_PORT}, {MAX_PORT}], got {self.port}")
        for name, cpu in (("server-cpu", self.server_cpu), ("client-cpu", self.client_cpu)):
            if cpu is not None and not 0 <= cpu < MAX_CPUS:
                raise InputError(f"testbed --{name} must be in [0, {MAX_CPUS - 1}], got {cpu}")
        PhasePattern.parse(self.phases)
        if self.quota_us is not None:
            if self.quaketm is not None:
                raise InputError("testbed --quota-us applies to mvdsv only (--server mvdsv)")
            kernel_quota(self.quota_us, self.period_us)
        elif self.period_us != DEFAULT_PERIOD_US:
            raise InputError(
                f"testbed --period-us applies with --quota-us (the quota's period), got "
                f"{self.period_us} without a quota"
            )
        return self

    def _check_threads(self) -> None:
        if self.quaketm is None:
            if self.threads != 1:
                raise InputError(
                    f"testbed --threads applies to QuakeTM (mvdsv has one thread), got "
                    f"{self.threads}"
                )
            for flag, value, default in (
                ("frame-s", self.frame_s, 0.1),
                ("omp-wait", self.omp_wait, "passive"),
                ("bind", self.bind, False),
            ):
                if value != default:
                    raise InputError(
                        f"testbed --{flag} applies to QuakeTM (--server quaketm-...), got "
                        f"{value!r} for mvdsv"
                    )
            return
        most = 1 if self.quaketm == "serial" else QUAKETM_MAX_THREADS
        if not 1 <= self.threads <= most:
            raise InputError(
                f"testbed --threads must be in [1, {most}] for {self.server}, got {self.threads}"
            )
        if not 0.005 <= self.frame_s <= 1.0:
            raise InputError(f"testbed --frame-s must be in [0.005, 1], got {self.frame_s:g}")
        if self.bind and self.server_cpu is not None:
            raise InputError(
                "testbed --bind binds QuakeTM's threads to every CPU: use it with --server-cpu all"
            )
        if self.clients_impl != "c":
            raise InputError(
                "testbed --clients-impl python is for mvdsv; QuakeTM runs take the compiled "
                "load generator (c)"
            )
        if self.omp_wait not in OMP_WAIT_POLICIES:
            raise InputError(
                f"testbed --omp-wait must be one of {', '.join(OMP_WAIT_POLICIES)}, "
                f"got {self.omp_wait!r}"
            )

    @property
    def label(self) -> str:
        """The condition's name: every field of the config, those of :data:`LABEL_BASE`
        only where they differ from its values, the seed last (``-sN``: the repeats of a
        condition differ in it alone).  Two configs that differ have different labels."""
        quota = ""
        if self.quota_us is not None:
            quota = f"-q{self.quota_us}"
            if self.period_us != QUOTA_LABEL_PERIOD_US:
                quota += f"of{self.period_us}"
        server = ""
        if self.quaketm is not None:
            cpu = "all" if self.server_cpu is None else str(self.server_cpu)
            wait = "" if self.omp_wait == "passive" else f"-{self.omp_wait}"
            wait += "-bind" if self.bind else ""
            server = (
                f"{self.server}-t{self.threads}-f{number_label(self.frame_s * 1e3)}ms-cpu{cpu}"
                f"{wait}-"
            )
        base = LABEL_BASE["mvdsv" if self.quaketm is None else "quaketm"]
        extra = ""
        for name, tag in (
            ("duration_s", "d{}s"),
            ("warmup_s", "w{}s"),
            ("port", "port{}"),
            ("server_cpu", "cpu{}"),
            ("client_cpu", "ccpu{}"),
            ("clients_impl", "{}"),
        ):
            value = getattr(self, name)
            if name in base and value != base[name]:
                shown = (
                    "all" if value is None else number_label(value) if isinstance(value, float)
                    else value
                )  # fmt: skip
                extra += "-" + tag.format(shown)
        return (
            f"{server}{self.map}-n{self.clients}-{number_label(self.rate_hz)}hz-{self.phases}"
            f"{quota}{extra}-s{self.seed}"
        )


@dataclass
class TestbedResult:
    """Frames (one row per server frame), clients (one row each) and the summary."""

    config: TestbedConfig
    frames: pd.DataFrame
    clients: pd.DataFrame
    summary: dict = field(default_factory=dict)
    sends: pd.DataFrame | None = None
    """every packet the clients sent in the measured window: client, tick, due_s, sent_s"""
    threads: pd.DataFrame | None = None
    """QuakeTM: one row per frame and thread of its request stage (``quaketm_frames``)"""

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.frames.to_parquet(out / "frames.parquet", index=False)
        self.clients.to_parquet(out / "clients.parquet", index=False)
        if self.sends is not None:
            self.sends.to_parquet(out / "sends.parquet", index=False)
        if self.threads is not None:
            self.threads.to_parquet(out / "threads.parquet", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")


def _edicts_per_reply(window: pd.DataFrame) -> float:
    """The server's edict count each reply of the window scanned, on average (weighted by
    the frames' replies; ``SV_WriteEntitiesToClient`` tests every edict up to
    ``sv.num_edicts`` against the client's PVS); NaN without replies."""
    replies = window["replies"].to_numpy(dtype=float)
    if replies.sum() == 0:
        return float("nan")
    return float((window["edicts"].to_numpy(dtype=float) * replies).sum() / replies.sum())


def _quantiles_ms(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {k: float("nan") for k in ("mean", "p50", "p95", "p99", "max")}
    ms = values * 1e3
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {
        "mean": float(ms.mean()),
        "p50": float(p50),
        "p95": float(p95),
        "p99": float(p99),
        "max": float(ms.max()),
    }


def _wakeup(frames: pd.DataFrame, run: ClientRun) -> dict[str, float]:
    """The idle server's wake-up latency (:func:`wakeup_latencies_us`): mean, p50, p90, us."""
    latencies = wakeup_latencies_us(frames, run.sends[:, 3] if len(run.sends) else [])
    if len(latencies) == 0:
        return {"mean": float("nan"), "p50": float("nan"), "p90": float("nan"), "frames": 0}
    p50, p90 = np.percentile(latencies, [50, 90])
    return {
        "mean": float(latencies.mean()),
        "p50": float(p50),
        "p90": float(p90),
        "frames": int(len(latencies)),
    }


def _clients_table(run: ClientRun) -> pd.DataFrame:
    start, end = run.window
    rows = []
    for log, phase in zip(run.logs, run.phases_s, strict=True):
        moves = np.asarray(log.move_times)
        replies = np.asarray(log.reply_times)
        origins = np.asarray(log.origins).reshape(-1, 4)
        inside = (origins[:, 0] >= start) & (origins[:, 0] <= end)
        path = origins[inside, 1:]
        travelled = (
            float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum()) if len(path) > 1 else 0.0
        )
        rows.append(
            {
                "client": log.index,
                "phase_ms": float(phase * 1e3),
                "signon_s": (log.began_at - log.connected_at)
                if log.began_at and log.connected_at
                else float("nan"),
                "began": log.began_at is not None,
                "moves_sent": int(((moves >= start) & (moves <= end)).sum()),
                "replies_received": int(((replies >= start) & (replies <= end)).sum()),
                "origin_updates": int(inside.sum()),
                "distance_travelled_units": travelled,
                "parse_errors": log.parse_errors,
            }
        )
    return pd.DataFrame(rows)


def send_lateness_p95_ms(run: ClientRun, config: TestbedConfig) -> float:
    """95th percentile of how late each burst's first send left after its due time (ms).

    A burst is the sends due at one instant (every client for ``step``, one host's clients
    for ``hosts:H``, each send alone for ``independent``): its later sends wait for the
    earlier ones by design (``burst_width_ms``), so only its first measures whether the
    generator was on time.
    """
    sends = run.sends
    if len(sends) == 0:
        return float("nan")
    pattern = PhasePattern.parse(config.phases)
    late = sends[:, 3] - sends[:, 2]
    if pattern.kind != "independent":
        hosts = 1 if pattern.kind == "step" else pattern.hosts
        frame = pd.DataFrame(
            {"host": sends[:, 0].astype(int) % hosts, "tick": sends[:, 1], "late": late}
        )
        late = frame.groupby(["host", "tick"])["late"].min().to_numpy()
    return float(np.percentile(late, 95) * 1e3)


def keep_up_warning(summary: dict) -> str | None:
    """One line naming why the load generator could not keep up, or None."""
    p95, busy = summary["send_lateness_p95_ms"], summary["client_busy_share"]
    reasons = []
    if p95 > MAX_SEND_LATENESS_P95_MS:
        reasons.append(f"p95 send lateness {p95:.2f} ms > {MAX_SEND_LATENESS_P95_MS:g} ms")
    if busy > MAX_CLIENT_BUSY_SHARE:
        reasons.append(f"busy {busy:.0%} of the window > {MAX_CLIENT_BUSY_SHARE:.0%}")
    if not reasons:
        return None
    return (
        f"the {summary['load_generator']} load generator could not keep up with "
        f"{summary['config']['clients']} clients at {summary['config']['rate_hz']:g} Hz "
        f"({'; '.join(reasons)}): the send times are not the ones asked for"
    )


def summarize(
    config: TestbedConfig, frames: pd.DataFrame, clients: pd.DataFrame, run: ClientRun, extra: dict
) -> dict:
    """The run's summary (units in the keys); every quantity over the measured window."""
    window = frames[frames["measured"]]
    duration = config.duration_s
    n_frames = len(window)
    busy_frames = int((window["packets"] > 0).sum())
    packets = int(window["packets"].sum())
    replies = int(window["replies"].sum())
    cpu = float(window["cpu_us"].sum() + window["select_us"].sum())
    sent = int(clients["moves_sent"].sum())
    received = int(clients["replies_received"].sum())
    start, end = run.window
    rtts = (
        np.concatenate(
            [
                np.asarray(log.round_trips)[
                    (np.asarray(log.reply_times) >= start) & (np.asarray(log.reply_times) <= end)
                ]
                for log in run.logs
            ]
        )
        if run.logs
        else np.array([])
    )

    def share(column: str) -> float:
        return float(window[column].sum()) / cpu if cpu else float("nan")

    def per(column: str, count: str) -> float:
        total = float(window[count].sum())
        return float(window[column].sum()) / total if total else float("nan")

    return {
        "kind": "testbed",
        "config": asdict(config),
        "label": config.label,
        "frames": n_frames,
        "frames_per_s": n_frames / duration,
        "packet_frames_per_s": busy_frames / duration,
        "messages_per_frame": packets / n_frames if n_frames else float("nan"),
        "messages_per_s": packets / duration,
        "replies_per_s": replies / duration,
        "replies_per_frame": replies / n_frames if n_frames else float("nan"),
        "reply_ratio": received / sent if sent else float("nan"),
        "server_reply_ratio": replies / packets if packets else float("nan"),
        "packets_sent_by_clients": sent,
        "packets_read_by_server": packets,
        "replies_received_by_clients": received,
        "server_cpu_utilization": cpu / (duration * 1e6),
        "cpu_share": {
            "world": share("physics_us"),
            "net_recv": share("recv_syscall_us"),
            "request": share("execute_us"),
            "reply": share("build_us"),
            "net_send": share("send_syscall_us"),
            "frame": (
                float(window["other_us"].sum() + window["select_us"].sum()) / cpu
                if cpu
                else float("nan")
            ),
        },
        "us_per_packet": {
            "read": per("read_us", "packets"),
            "recv_syscall": per("recv_syscall_us", "packets"),
            "execute": per("execute_us", "packets"),
        },
        "us_per_reply": {
            "send": per("send_us", "replies"),
            "send_syscall": per("send_syscall_us", "replies"),
            "build": per("build_us", "replies"),
        },
        "us_per_world_tick": per("physics_us", "physics_ran"),
        "edicts_per_reply": _edicts_per_reply(window),
        "us_per_frame": {
            "other": float(window["other_us"].mean()) if n_frames else float("nan"),
            "select": float(window["select_us"].mean()) if n_frames else float("nan"),
        },
        "world_ticks_per_s": float(window["physics_ran"].sum()) / duration,
        "commands_per_move": per("commands", "moves"),
        "round_trip_ms": _quantiles_ms(rtts),
        "wakeup_latency_us": _wakeup(frames, run),
        **clients_summary(config, clients, run),
        **extra,
    }


def clients_summary(config: TestbedConfig, clients: pd.DataFrame, run: ClientRun) -> dict:
    """The clients' part of a run's summary: who signed on and moved, their CPU, how late
    their sends left (any server)."""
    duration = config.duration_s
    return {
        "clients_began": int(clients["began"].sum()),
        "clients_moved": int((clients["distance_travelled_units"] > 0).sum()),
        "client_cpu_share": run.cpu_s / run.wall_s if run.wall_s else float("nan"),
        "client_window_cpu_share": run.window_cpu_s / duration,
        "client_busy_share": run.window_busy_s / duration,
        "send_lateness_ms": run.send_lateness_s * 1e3,
        "send_lateness_p95_ms": send_lateness_p95_ms(run, config),
        "burst_width_ms": run.burst_width_s * 1e3,
        "load_generator": config.clients_impl,
        "signon_s": run.signon_s,
    }


SERVER_WARNINGS = {
    "reply_overflows": "WARNING: msg overflowed",  # a reply over 1,450 bytes, sent empty
    "datagram_overflows": "WARNING: datagram overflowed",
    "broadcast_overflows": "WARNING: reliable broadcast overflowed",  # our patch: no crash
    "buffer_overflows": "SZ_GetSpace: overflow",
    "no_free_edicts": "ED_Alloc: no free edicts",
}


def server_warnings(log: Path) -> dict[str, int]:
    """How often the server's console said each of :data:`SERVER_WARNINGS` during the run
    (beyond 32 clients a reply can outgrow the protocol's 1,450-byte datagram)."""
    counts = dict.fromkeys(SERVER_WARNINGS, 0)
    with contextlib.suppress(OSError):
        for line in log.read_text(errors="replace").splitlines():
            for key, text in SERVER_WARNINGS.items():
                if text in line:
                    counts[key] += 1
    return counts


def machine_description() -> dict[str, str]:
    """The CPU model, kernel and clock source the measurement was made on."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    clock = "unknown"
    with contextlib.suppress(OSError):
        clock = (
            Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .read_text()
            .strip()
        )
    return {
        "cpu_model": model,
        "kernel": host_platform.release(),
        "clocksource": clock,
        "cpus": str(os.cpu_count()),
    }


def run_testbed(
    config: TestbedConfig, *, shared_root: Path | None = None, workdir: Path | None = None
) -> TestbedResult:
    """Measure the real server under ``config`` (see the module docstring)."""
    config = config.checked()
    shared = find_shared(shared_root)
    map_data = read_map(shared, config.map)  # a damaged map is refused before any build
    if not port_is_free(config.port):
        raise InputError(
            f"testbed --port {config.port} is busy on this machine; choose another with --port"
        )
    quota = None if config.quota_us is None else kernel_quota(config.quota_us, config.period_us)
    if config.quaketm is None:
        build = build_server(shared, max_clients=server_max_clients(config.clients))
        server_options: dict = {"quota": quota}
    else:
        from simsrv.testbed.quaketm import build_quaketm, run_args
        from simsrv.testbed.quaketm_summary import openmp_environment

        build = build_quaketm(shared, config.quaketm)
        server_options = {
            "args": run_args(config.threads, config.frame_s),
            "env": openmp_environment(config),
        }
    if config.clients_impl == "c":
        build_loadgen()  # compiled before the server starts (once per source digest)
    table = qw.load_checksum_table(qw.read_common_c(build.source))
    pattern = PhasePattern.parse(config.phases)
    affinity = os.sched_getaffinity(0)
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="simsrv-tb-")))
        basedir = prepare_basedir(
            workdir / "server", shared, config.map, build.max_clients, map_data
        )
        frames_file = workdir / "frames.bin"
        wall0 = time.monotonic()
        server = stack.enter_context(
            ServerProcess(
                build, basedir, config.port, frames_file, cpu=config.server_cpu, **server_options
            )
        )
        plan = ClientPlan(config.clients, config.rate_hz, pattern, config.seed)
        timing = {
            "warmup_s": config.warmup_s,
            "duration_s": config.duration_s,
            "signon_timeout_s": signon_timeout_s(config.clients),
        }
        if config.clients_impl == "c":
            run = run_loadgen(
                plan, config.port, table, cpu=config.client_cpu, workdir=workdir, **timing
            )
        else:
            os.sched_setaffinity(0, {config.client_cpu})
            try:
                run = run_clients(plan, config.port, table, **timing)
            finally:
                os.sched_setaffinity(0, affinity)
        throttling = server.throttling()
        crashed = server.exit_code_so_far()
        server.stop()
        if crashed is not None:
            raise RuntimeError(
                f"the server exited during the run (code {crashed}): {server.last_log_line()}"
            )
        if config.quaketm is None:
            frames, threads = read_frames(frames_file), None
        else:
            from simsrv.testbed.quaketm_frames import read_quaketm_frames

            frames, threads = read_quaketm_frames(frames_file)
        wall = time.monotonic() - wall0
        warnings = server_warnings(server.log_path)
    start, end = run.window
    frames["measured"] = (frames["start_s"] >= start) & (frames["start_s"] < end)
    if threads is not None:
        threads = threads.merge(frames[["frame", "measured"]], on="frame", how="left")
    clients = _clients_table(run)
    extra = {
        "quota_share": None if quota is None else quota.share,
        "throttled_periods": throttling.get("nr_throttled"),
        "throttled_s": throttling.get("throttled_time", 0) * 1e-9 if throttling else None,
        "socket_buffer_packets": socket_buffer_packets(),
        "server_warnings": warnings,
        "machine": machine_description(),
        "server_build": build.digest,
        "server_max_clients": build.max_clients,
        "wall_time_s": wall,
    }
    sends = pd.DataFrame(run.sends, columns=["client", "tick", "due_s", "sent_s"]).astype(
        {"client": "int64", "tick": "int64"}
    )
    if config.quaketm is None:
        summary = summarize(config, frames, clients, run, extra)
    else:
        from simsrv.testbed.quaketm_summary import summarize_quaketm

        summary = summarize_quaketm(config, frames, threads, clients, run, extra)
    summary["load_generator_warning"] = keep_up_warning(summary)
    return TestbedResult(config, frames, clients, summary, sends, threads)
