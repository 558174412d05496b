"""The model's description of a testbed run, and which measured quantity is which model one.

:func:`scenario_overrides` turns one measured condition into ``--set`` overrides of
``scenarios/testbed/mvdsv-dm1.toml``: the same map, client count, rate, duration and seed,
the phase pattern as simsrv's ``clients.hosts`` with the burst width and send lateness the
clients *measured* (a Python client cannot send 32 packets in the same microsecond: a burst
is ~0.3-1.5 ms wide, and the server wakes several times inside it), the socket's capacity
the harness measured (``clients.socket_buffer_messages``: a saturated server's kernel drops
what does not fit), and a CPU quota as the machine's own (``machine.cpu_quota_us``,
``machine.cpu_period_us``: CFS bandwidth control, the server at full speed until it has used
its quota in the period, then stopped until the next, :mod:`simsrv.machine.quota`).

:data:`QUANTITIES` pairs each measured summary key with the model quantity of the same
meaning (:mod:`simsrv.validation.quantities`), its tolerance and whether the error is
relative.  The tolerances are the ones the issue set: +-10 % on rates, +-5 points on shares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from simsrv.core.errors import InputError
from simsrv.testbed.build import SharedFolder
from simsrv.testbed.campaign import condition_of
from simsrv.testbed.run import TestbedConfig
from simsrv.testbed.schema import CORE_FIELDS

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "testbed" / "mvdsv-dm1.toml"


@dataclass(frozen=True)
class Compared:
    """A measured summary key, the model quantity it is compared with, and its tolerance."""

    measured: str
    model: str
    tolerance: float
    relative: bool
    label: str


QUANTITIES: tuple[Compared, ...] = (
    Compared("frames_per_s", "frames_per_s", 0.10, True, "frames/s"),
    Compared("messages_per_frame", "messages_per_frame", 0.10, True, "messages/frame"),
    Compared("messages_per_s", "messages_per_s", 0.10, True, "messages/s"),
    Compared("replies_per_s", "replies_per_s", 0.10, True, "replies/s"),
    Compared("server_cpu_utilization", "busy_fraction", 0.10, True, "server CPU busy"),
    Compared("cpu_share.world", "world_share", 0.05, False, "world share"),
    Compared("cpu_share.net_recv", "net_recv_share", 0.05, False, "receive-call share"),
    Compared("cpu_share.request", "request_share", 0.05, False, "execute share"),
    Compared("cpu_share.reply", "reply_share", 0.05, False, "reply-build share"),
    Compared("cpu_share.net_send", "net_send_share", 0.05, False, "send-call share"),
    Compared("cpu_share.frame", "frame_share", 0.05, False, "per-frame share"),
)


def judged(c: Compared, real: float, sim: float, spread: float) -> dict:
    """A measured value against the model's under ``c``: the error (relative for rates, in
    points for shares; infinite against a real 0), the repeats' spread in the error's unit,
    the tolerance (``c``'s, or that spread where wider: never tighter than the measurement's
    own noise) and whether the error is within it."""
    error = (sim - real) / real if c.relative else sim - real
    if c.relative and real == 0:
        error = math.inf
    if c.relative:
        spread = spread / abs(real) if real else 0.0
    tolerance = max(c.tolerance, spread)
    return {
        "error": error,
        "relative": c.relative,
        "spread": spread,
        "tolerance": tolerance,
        "tolerance_from_spread": tolerance > c.tolerance,
        "within": bool(abs(error) <= tolerance),
    }


def phase_overrides(
    config: TestbedConfig, burst_width_ms: float, send_lateness_ms: float
) -> list[str]:
    """The phase pattern as simsrv client fields, with the clients' measured timing."""
    period = 1.0 / config.rate_hz
    kind, _, arg = config.phases.partition(":")
    if kind == "independent":  # each packet is late by its own draw
        jitter = min(max(2.0 * send_lateness_ms * 1e-3, 0.0), 0.5 * period)
        return [f"clients.jitter_s={jitter!r}", "clients.hosts=0", "clients.host_burst_s=0"]
    # a burst is sent back to back after one wake-up of the clients' loop: its lateness moves
    # the whole burst (the period stays), its width is the measured one
    out = ["clients.jitter_s=0.0"]
    hosts = 1 if kind == "step" else int(arg)
    per_host = max(1, config.clients // hosts)
    # simsrv spreads a host's P clients over host_burst_s in P equal slots: the last is sent
    # (P - 1) / P of it after the first, which is the measured width.
    width = burst_width_ms * 1e-3 * per_host / (per_host - 1) if per_host > 1 else 0.0
    width = min(max(width, 0.0), period)
    return [*out, f"clients.hosts={min(hosts, config.clients)}", f"clients.host_burst_s={width!r}"]


DEFAULT_SOCKET_BUFFER_PACKETS = 256
"""The real server's socket capacity when a stored run did not measure it (this machine's
kernel: net.core.rmem_default = 212,992 bytes, 832 bytes counted per small datagram)."""


def scenario_overrides(
    config: TestbedConfig,
    shared: SharedFolder,
    *,
    seed: int,
    platform: str,
    burst_width_ms: float = 0.0,
    send_lateness_ms: float = 0.0,
    socket_buffer_packets: int = DEFAULT_SOCKET_BUFFER_PACKETS,
) -> list[str]:
    """``--set`` overrides of :data:`SCENARIO` that describe one testbed condition."""
    out = [
        f"players.count={config.clients}",
        f"clients.rate_hz={config.rate_hz!r}",
        f"map.file={shared.map_file(config.map)}",
        f"run.duration_s={config.duration_s!r}",
        f"run.warmup_s={config.warmup_s!r}",
        f"run.seed={seed}",
        f"machine.platform={platform}",
        f"clients.socket_buffer_messages={int(socket_buffer_packets)}",
        *phase_overrides(config, burst_width_ms, send_lateness_ms),
    ]
    if config.quota_us is not None:
        out += [
            f"machine.cpu_quota_us={float(config.quota_us)!r}",
            f"machine.cpu_period_us={float(config.period_us)!r}",
        ]
    return out


def config_from_row(row: dict) -> TestbedConfig:
    """The :class:`TestbedConfig` stored in a campaign row (``config.*`` columns; a row read
    by :func:`simsrv.testbed.store.read_runs`, which validated them).  Every field a campaign
    has always stored must be there (none is taken from a default); QuakeTM's fields,
    absent from a campaign stored before them, are mvdsv's."""
    values = {
        key.removeprefix("config."): value
        for key, value in row.items()
        if key.startswith("config.")
    }
    missing = [name for name in CORE_FIELDS if name not in values]
    if missing:
        raise InputError(f"config.{missing[0]}: required column is missing from the stored row")
    if values.get("quota_us") is not None and values["quota_us"] != values["quota_us"]:
        values["quota_us"] = None  # NaN from a column shared with quota-free rows
    if values.get("server_cpu") is not None and values["server_cpu"] != values["server_cpu"]:
        values["server_cpu"] = None  # NaN: the server's threads used every CPU
    for key in ("clients", "seed", "period_us", "port", "client_cpu", "threads"):
        if key in values:
            values[key] = int(values[key])
    if values.get("server_cpu") is not None:
        values["server_cpu"] = int(values["server_cpu"])
    if "bind" in values:
        values["bind"] = bool(values["bind"])
    if values.get("quota_us") is not None:
        values["quota_us"] = int(values["quota_us"])
    return TestbedConfig(**values)


def _measured(row: dict, key: str, default: float) -> float:
    """A campaign row's measurement, or ``default`` where the run did not record it (NaN)."""
    value = row.get(key)
    return default if value is None or value != value else float(value)


def receiver_idle_share(row: dict) -> float:
    """The share of a stored run's measured window its load generator, the replies'
    receiver on this machine, was idle: ``1 - client_window_cpu_share`` (0 where the run
    did not measure it: no wake-up charged)."""
    busy = _measured(row, "client_window_cpu_share", 1.0)
    return min(max(1.0 - busy, 0.0), 1.0)


def sends_file(store: Path | None, row: dict, seed: int) -> Path | None:
    """The load generator's measured send times to replay for model seed ``seed`` of a stored
    condition: repeat ``seed``'s ``sends.parquet`` (the row's own run's when the condition
    has fewer repeats), or None (no store, or the run recorded none)."""
    if store is None:
        return None
    condition = condition_of(str(row["label"]))
    for label in (f"{condition}-s{seed}", str(row["label"])):
        path = Path(store) / "runs" / label / "sends.parquet"
        if path.is_file():
            return path
    return None


def row_overrides(
    row: dict, shared: SharedFolder, *, seed: int, platform: str, store: Path | None = None
) -> list[str]:
    """:func:`scenario_overrides` of a stored campaign row, with the timing and socket
    capacity that run measured; with the campaign's ``store``, the clients send when the
    load generator sent (its measured send times replayed: :func:`sends_file`,
    :mod:`simsrv.workload.send_times`) rather than with drawn phases and jitter.  The
    server's entity list its replies scanned (``edicts_per_reply``: the map's edicts, the
    players' and the bodies, gibs and backpacks the game spawned, which the model's world does
    not hold) is the run's measurement too (``server.scanned_entities``)."""
    out = scenario_overrides(
        config_from_row(row),
        shared,
        seed=seed,
        platform=platform,
        burst_width_ms=_measured(row, "burst_width_ms", 0.0),
        send_lateness_ms=_measured(row, "send_lateness_ms", 0.0),
        socket_buffer_packets=int(
            _measured(row, "socket_buffer_packets", DEFAULT_SOCKET_BUFFER_PACKETS)
        ),
    )
    out.append(f"clients.receiver_idle_share={receiver_idle_share(row)!r}")
    edicts = _measured(row, "edicts_per_reply", 0.0)
    if edicts > 0:  # the game's entity list as the real server held it (a run's measurement)
        out.append(f"server.scanned_entities={round(edicts)}")
    sends = sends_file(store, row, seed)
    if sends is not None:
        out = [o for o in out if not o.startswith(REPLAYED)]
        out += [*(f"{key}=0" for key in REPLAYED), f"clients.send_times_file={sends}"]
    return out


REPLAYED = ("clients.jitter_s", "clients.hosts", "clients.host_burst_s")
"""The drawn send timing a replay of measured send times replaces."""


def visible_per_reply(row: dict, shared: SharedFolder, seconds: float = 2.0) -> float:
    """The mean number of entities a reply lists in the model of a campaign row's condition
    (the ``visible_count`` of its clients' packets over ``seconds`` after the warm-up): the
    unit the model charges ``reply_per_visible_entity`` by, for the calibration to put the
    measured build time per reply against."""
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.seeding import run_streams
    from simsrv.pipeline.simulation import build_world
    from simsrv.workload.clients import ClientStream

    overrides = row_overrides(row, shared, seed=1, platform="this-machine-mvdsv")
    scenario = load_scenario(str(SCENARIO), [*overrides, f"run.duration_s={seconds!r}"])
    rng = run_streams(scenario.run)
    start = scenario.run.warmup_s
    stream = ClientStream(
        scenario.clients, build_world(scenario, rng), rng["clients"], (start, start + seconds)
    )
    packets = stream.release_until(start + seconds)
    counts = packets["visible_count"][packets["arrival_s"] > start]
    return float(counts.mean()) if len(counts) else 0.0
