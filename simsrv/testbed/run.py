"""One testbed run: build, start the real server, drive the clients, read what happened.

:func:`run_testbed` returns a :class:`TestbedResult`: the server's frame table (every frame,
``measured`` marking the window), one row per client, and a summary whose keys follow
``simsrv run --json`` where the quantity is the same (``frames_per_s``,
``messages_per_frame``, ``messages_per_s``, ``replies_per_s``, ``reply_ratio``, the stage
shares) plus what only a real server has (CPU time per stage, the clients' round trips).

The measured window is the clients' ``[start, start + duration_s]`` after every client has
signed on and ``warmup_s`` has passed; a frame belongs to it when it starts inside it.
The clients run in this process, pinned to ``client_cpu``; the server to ``server_cpu``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform as host_platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.core.errors import InputError
from simsrv.testbed import protocol as qw
from simsrv.testbed.build import build_server, find_shared
from simsrv.testbed.clients import ClientPlan, ClientRun, PhasePattern, run_clients
from simsrv.testbed.frames import read_frames, wakeup_latencies_us
from simsrv.testbed.server import (
    CpuQuota,
    ServerProcess,
    port_is_free,
    prepare_basedir,
    socket_buffer_packets,
)

MAX_CLIENTS = qw.MAX_CLIENTS


@dataclass(frozen=True)
class TestbedConfig:
    """One measured condition of the real server."""

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
    server_cpu: int = 1
    client_cpu: int = 0

    def checked(self) -> TestbedConfig:
        """This config, or one :class:`InputError` line naming the bad field."""
        if not 1 <= self.clients <= MAX_CLIENTS:
            raise InputError(
                f"testbed --clients must be in [1, {MAX_CLIENTS}] (the server's "
                f"MAX_CLIENTS), got {self.clients}"
            )
        if not (0 < self.rate_hz <= 1000):
            raise InputError(f"testbed --rate-hz must be in (0, 1000], got {self.rate_hz}")
        if not (0 < self.duration_s <= 3600):
            raise InputError(f"testbed --duration-s must be in (0, 3600], got {self.duration_s}")
        if not (0 <= self.warmup_s <= 600):
            raise InputError(f"testbed --warmup-s must be in [0, 600], got {self.warmup_s}")
        if not 1024 <= self.port <= 65535:
            raise InputError(f"testbed --port must be in [1024, 65535], got {self.port}")
        cpus = sorted(os.sched_getaffinity(0))
        for name, cpu in (("server-cpu", self.server_cpu), ("client-cpu", self.client_cpu)):
            if cpu not in cpus:
                raise InputError(
                    f"testbed --{name} must be one of this process's CPUs {cpus}, got {cpu}"
                )
        PhasePattern.parse(self.phases)
        if self.quota_us is not None:
            CpuQuota(self.quota_us, self.period_us)
        return self

    @property
    def label(self) -> str:
        quota = "" if self.quota_us is None else f"-q{self.quota_us}"
        return f"{self.map}-n{self.clients}-{self.rate_hz:g}hz-{self.phases}{quota}-s{self.seed}"


@dataclass
class TestbedResult:
    """Frames (one row per server frame), clients (one row each) and the summary."""

    config: TestbedConfig
    frames: pd.DataFrame
    clients: pd.DataFrame
    summary: dict = field(default_factory=dict)
    sends: pd.DataFrame | None = None
    """every packet the clients sent in the measured window: client, tick, due_s, sent_s"""

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.frames.to_parquet(out / "frames.parquet", index=False)
        self.clients.to_parquet(out / "clients.parquet", index=False)
        if self.sends is not None:
            self.sends.to_parquet(out / "sends.parquet", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")


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
        "us_per_frame": {
            "other": float(window["other_us"].mean()) if n_frames else float("nan"),
            "select": float(window["select_us"].mean()) if n_frames else float("nan"),
        },
        "world_ticks_per_s": float(window["physics_ran"].sum()) / duration,
        "commands_per_move": per("commands", "moves"),
        "round_trip_ms": _quantiles_ms(rtts),
        "wakeup_latency_us": _wakeup(frames, run),
        "clients_began": int(clients["began"].sum()),
        "clients_moved": int((clients["distance_travelled_units"] > 0).sum()),
        "client_cpu_share": run.cpu_s / run.wall_s if run.wall_s else float("nan"),
        "send_lateness_ms": run.send_lateness_s * 1e3,
        "burst_width_ms": run.burst_width_s * 1e3,
        "signon_s": run.signon_s,
        **extra,
    }


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
    if not port_is_free(config.port):
        raise InputError(
            f"testbed --port {config.port} is busy on this machine; choose another with --port"
        )
    quota = None if config.quota_us is None else CpuQuota(config.quota_us, config.period_us)
    build = build_server(shared)
    table = qw.load_checksum_table(qw.read_common_c(build.source))
    pattern = PhasePattern.parse(config.phases)
    affinity = os.sched_getaffinity(0)
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="simsrv-tb-")))
        basedir = prepare_basedir(workdir / "server", shared, config.map, MAX_CLIENTS)
        frames_file = workdir / "frames.bin"
        wall0 = time.monotonic()
        server = stack.enter_context(
            ServerProcess(
                build, basedir, config.port, frames_file, cpu=config.server_cpu, quota=quota
            )
        )
        os.sched_setaffinity(0, {config.client_cpu})
        try:
            run = run_clients(
                ClientPlan(config.clients, config.rate_hz, pattern, config.seed),
                config.port,
                table,
                warmup_s=config.warmup_s,
                duration_s=config.duration_s,
            )
        finally:
            os.sched_setaffinity(0, affinity)
        throttling = server.throttling()
        crashed = server.exit_code_so_far()
        server.stop()
        if crashed is not None:
            raise RuntimeError(
                f"the server exited during the run (code {crashed}): {server.last_log_line()}"
            )
        frames = read_frames(frames_file)
        wall = time.monotonic() - wall0
    start, end = run.window
    frames["measured"] = (frames["start_s"] >= start) & (frames["start_s"] < end)
    clients = _clients_table(run)
    extra = {
        "quota_share": None if quota is None else quota.share,
        "throttled_periods": throttling.get("nr_throttled"),
        "throttled_s": throttling.get("throttled_time", 0) * 1e-9 if throttling else None,
        "socket_buffer_packets": socket_buffer_packets(),
        "machine": machine_description(),
        "server_build": build.digest,
        "wall_time_s": wall,
    }
    sends = pd.DataFrame(run.sends, columns=["client", "tick", "due_s", "sent_s"]).astype(
        {"client": "int64", "tick": "int64"}
    )
    return TestbedResult(
        config, frames, clients, summarize(config, frames, clients, run, extra), sends
    )
