"""The scenario: one validated, typed description of a run.

Sections and their fields (every field has a default and a unit; see ``docs/reference.md``):

``[run]`` length, warm-up and seed; ``[map]`` the map kind and its parameters; ``[players]``
count, mobility model and its parameters; ``[clients]`` how clients send packets and how the
network treats them; ``[server]`` the strategy, its options and the QuakeWorld frame rules;
``[machine]`` the platform profile and the number of CPUs; ``[cluster]`` (optional) several
server nodes, each a ``[machine]``, serving the zones of one world (docs/cluster.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from simsrv.core.errors import InputError
from simsrv.core.strict_model import StrictModel, first_error_line, validated_copy

MAX_SEED = 2**32 - 1  # seeds are stored as int64 with a sweep's seed offsets added

MAX_BACKGROUND = 0.999
"""Largest background share of a CPU: the server keeps at least 0.1 % of it, so its costs
there grow at most 1000-fold.  Closer to 1, ``cost / (1 - share)`` grows without bound and the
trace's float sums no longer check against the plan's (``costs_accounted``)."""


class RunSection(StrictModel):
    """Length of the run and its seed."""

    duration_s: float = Field(10.0, gt=0, le=1e6, description="measured simulated time, s")
    warmup_s: float = Field(1.0, ge=0, le=1e6, description="simulated time discarded first, s")
    seed: int = Field(
        1, ge=0, le=MAX_SEED, description="root seed of every random stream (0 to 2**32 - 1)"
    )
    map_seed: int | None = Field(
        None,
        ge=0,
        le=MAX_SEED,
        description="seed of the map's own draws (hotspot and entity positions of the "
        "generated maps): the map a run with seed = map_seed would have; unset = seed.  Fix it "
        "to repeat one map (as a real map is one artefact) while seed varies the players",
    )


class MapSection(StrictModel):
    """Map kind and its validated parameters (``params`` is the kind's own model).

    Given in the files' layout (the kind's parameters beside ``kind``, as
    :meth:`Scenario.to_dict` writes them), the parameters are gathered into ``params``, as a
    plain dict until the kind validates them (:func:`simsrv.pipeline.load.build_scenario`)."""

    kind: str = "cube"
    params: Any = None

    @model_validator(mode="before")
    @classmethod
    def _gather_params(cls, data: Any) -> Any:
        if isinstance(data, dict) and "params" not in data and set(data) - {"kind"}:
            params = {key: value for key, value in data.items() if key != "kind"}
            return {"kind": data.get("kind", "cube"), "params": params}
        return data


class PlayersSection(StrictModel):
    """Synthetic players: how many, how they move."""

    count: int = Field(160, ge=1, le=10_000_000, description="players = connected clients")
    mobility: str = Field("quake-bot", description="registered mobility model")
    behaviour: Any = None
    speed: float = Field(320.0, gt=0, le=10_000, description="run speed, units/s (sv_maxspeed)")
    action_range: float = Field(
        256.0, gt=0, le=65536, description="edge of the action-range cube L_a, units"
    )
    visibility_range: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="entities farther than this are not visible (PVS proxy), units; "
        "0 = everything in the visible rooms",
    )
    respawn: bool = Field(
        False,
        description="a shot may kill the nearest opponent in range; it respawns at a spawn "
        "point (spawn_select, respawn_wait)",
    )
    hit_chance: float = Field(
        0.3, ge=0, le=1, description="chance that a shot kills its target (with respawn)"
    )
    spawn_select: Literal["random", "quake"] = Field(
        "random",
        description="with respawn, the spawn point: random (uniform over the map's points) or "
        "quake (QuakeWorld SelectSpawnPoint: uniform over the points with no player within "
        "84 units, else over all)",
    )
    respawn_wait: Literal["next-tick", "button"] = Field(
        "next-tick",
        description="with respawn, when the dead reappear: next-tick, or button (QuakeWorld "
        "PlayerDeathThink: the body lies still until the player releases, then presses, "
        "fire or jump)",
    )


class ClientsSection(StrictModel):
    """Client packets and the network between clients and server."""

    rate_hz: float = Field(31.25, gt=0, le=1000, description="move packets per client per s")
    jitter_s: float = Field(0.002, ge=0, description="uniform send-time jitter, s (< 1/rate)")
    latency_s: float = Field(0.0, ge=0, le=10, description="one-way client->server latency, s")
    commands_per_packet: int = Field(
        3, ge=1, le=3, description="user commands per packet (redundancy against loss)"
    )
    packet_loss: float = Field(0.0, ge=0, lt=1, description="probability a packet is lost")
    bandwidth_control: bool = Field(False, description="QuakeWorld per-client reply rate limit")
    rate_bytes_per_s: float = Field(2500.0, gt=0, le=1e9, description="client 'rate' (bytes/s)")
    socket_buffer_messages: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="socket receive buffer in packets per socket; 0 = unbounded",
    )
    hosts: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="client machines the clients run on, each sending its processes' packets "
        "of a tick in one burst (docs/calibration-groups.md); 0 = every client on its own phase",
    )
    host_burst_s: float = Field(
        0.0,
        ge=0,
        description="with hosts: the window in which a host sends its processes' packets of "
        "one tick, s (0 to 1/rate_hz; 1/rate_hz = evenly spaced round robin)",
    )
    receiver_idle_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="the share of time the replies' receiver sleeps on the server's own "
        "machine (a load generator over the loopback: its measured idle share), which a "
        "frame's first reply then wakes at the platform's net_send_wake; 0 = clients on "
        "other machines (no wake-up charged to the server)",
    )
    send_times_file: str = Field(
        "",
        strict=True,
        max_length=4096,
        description="a load generator's measured send times to replay (a testbed run's "
        "sends.parquet: client, tick, due_s, sent_s; simsrv/workload/send_times.py); each "
        "client's phase and lateness come from it, with jitter_s = 0 and hosts = 0; "
        "'' = the phases and jitter above",
    )

    @model_validator(mode="after")
    def _jitter_below_period(self) -> ClientsSection:
        if self.jitter_s >= 1.0 / self.rate_hz:
            raise ValueError(
                f"jitter_s: must be smaller than 1/rate_hz = {1.0 / self.rate_hz:g} s, "
                f"got {self.jitter_s}"
            )
        return self

    @model_validator(mode="after")
    def _send_times_replace_the_draws(self) -> ClientsSection:
        if self.send_times_file and (self.jitter_s or self.hosts or self.host_burst_s):
            field = "jitter_s" if self.jitter_s else "hosts" if self.hosts else "host_burst_s"
            raise ValueError(
                f"send_times_file: needs clients.{field} = 0 (the measured send times replace "
                f"the drawn phases and jitter), got {field} = {getattr(self, field)}"
            )
        return self

    @model_validator(mode="after")
    def _burst_within_period(self) -> ClientsSection:
        if self.host_burst_s > 1.0 / self.rate_hz:
            raise ValueError(
                f"host_burst_s: must be at most 1/rate_hz = {1.0 / self.rate_hz:g} s, "
                f"got {self.host_burst_s}"
            )
        return self


class ServerSection(StrictModel):
    """Server strategy and the QuakeWorld frame rules every strategy follows."""

    strategy: str = Field("sequential", description="registered strategy name")
    options: Any = None
    max_messages_per_frame: int = Field(
        0,
        ge=0,
        le=100_000_000,
        description="messages read per frame; 0 = one per client slot",
    )
    sv_mintic_s: float = Field(0.03, ge=0, le=1, description="minimum world-physics step, s")
    frame_period_s: float = Field(
        0.0,
        ge=0,
        le=1,
        description="fixed frame period, s: frames start every period whether packets wait or "
        "not, one that overran the period starting the next at once (QuakeTM's SV_Frame, "
        "0.1 stock); 0 = a frame starts when a packet waits (QuakeWorld's select loop)",
    )
    reply_header_bytes: int = Field(40, ge=0, le=1450, description="fixed bytes per reply")
    reply_bytes_per_entity: int = Field(12, ge=0, le=1450, description="bytes per entity")
    reply_max_entities: int = Field(64, ge=1, le=65536, description="entities per reply (QW: 64)")
    reply_max_bytes: int = Field(
        1450, ge=1, le=65507, description="largest datagram, bytes (UDP/IPv4: 65507)"
    )
    scanned_entities: int = Field(
        0,
        ge=0,
        le=10_000_000,
        strict=True,
        description="entities in the server's list that building each reply scans "
        "(QuakeWorld: every edict up to sv.num_edicts, the map's, the players' and those the "
        "game spawned: bodies, gibs, backpacks); charged reply_per_scanned_entity each; "
        "0 = the world's own, players + map entities",
    )
    read_until_empty: bool = Field(
        False,
        strict=True,
        description="true: a frame reads packets until the socket is empty, so a packet that "
        "arrives while the frame reads and executes the ones before it joins the frame "
        "(mvdsv's SV_ReadPackets loops recvfrom until it fails); false: the packets queued "
        "when the frame starts (the papers' frame rule).  Only the sequential strategy, "
        "without a cluster",
    )

    @model_validator(mode="after")
    def _header_fits_a_datagram(self) -> ServerSection:
        if self.reply_header_bytes >= self.reply_max_bytes:
            raise ValueError(
                f"reply_header_bytes: must be smaller than reply_max_bytes = "
                f"{self.reply_max_bytes}, got {self.reply_header_bytes}"
            )
        return self


MIN_QUOTA_US = 1000.0
"""The kernel's smallest CPU quota and period (``cpu.cfs_quota_us``, ``cpu.cfs_period_us``
>= 1 ms; Linux ``Documentation/scheduler/sched-bwc.rst``)."""
MAX_PERIOD_US = 1_000_000.0
"""The kernel's largest quota period (1 s)."""
MAX_QUOTA_US = 1e9
"""A bound on the quota (1,000 s of CPU a period: never reached by a modelled machine)."""
DEFAULT_PERIOD_US = 100_000.0
"""The kernel's default quota period (100 ms)."""


class MachineSection(StrictModel):
    """The modelled machine: a platform profile and how many of its CPUs the server uses."""

    platform: str = Field("cordeiro2007-xeon", description="platform name or .toml path")
    cpus: int = Field(2, ge=1, le=65536, description="logical CPUs")
    engine: str = Field(
        "fast",
        description="machine engine: fast, or simpy (a reference engine on simpy, op by op, "
        "slower; the same results)",
    )
    background: list[Annotated[float, Field(ge=0.0, le=MAX_BACKGROUND)]] = Field(
        default_factory=list,
        description="busy share of each CPU taken by other programs, CPU 0 first (missing "
        "CPUs: 0), each 0 <= share <= 0.999; the server's computations there run at "
        "1 - share of the CPU's speed (e.g. [0, 0, 0, 0.5]: one CPU shared with one "
        "CPU-bound program)",
    )
    costs: dict[str, float] = Field(
        default_factory=dict,
        description="per-scenario overrides of platform costs, microseconds, each 0 to 1e6 "
        "(e.g. costs.request_per_message = 40)",
    )
    cpu_quota_us: float | None = Field(
        None,
        strict=True,
        ge=MIN_QUOTA_US,
        le=MAX_QUOTA_US,
        description="a CPU quota on the server's threads, us of CPU time per cpu_period_us "
        "(CFS bandwidth control, as cgroup's cpu.cfs_quota_us: the server runs at full speed "
        "until it has used it in the period, then stops until the next period); absent: no "
        "quota.  1000 to 1e9; not with background",
    )
    cpu_period_us: float = Field(
        DEFAULT_PERIOD_US,
        strict=True,
        ge=MIN_QUOTA_US,
        le=MAX_PERIOD_US,
        description="the CPU quota's period, us (cgroup's cpu.cfs_period_us), 1000 to 1e6",
    )

    @model_validator(mode="after")
    def _background_shares(self) -> MachineSection:
        if len(self.background) > self.cpus:
            raise ValueError(
                f"background: at most one share per CPU ({self.cpus}), got {len(self.background)}"
            )
        if self.cpu_quota_us is not None and any(b > 0.0 for b in self.background):
            raise ValueError(
                "cpu_quota_us: a CPU quota cannot be combined with background load; "
                "remove one of them"
            )
        return self

    @model_validator(mode="after")
    def _known_costs(self) -> MachineSection:
        from simsrv.platforms.profile import MAX_COST_US, Costs

        for name, value in self.costs.items():
            if name not in Costs.model_fields:
                raise ValueError(
                    f"costs.{name}: unknown cost; allowed: {', '.join(sorted(Costs.model_fields))}"
                )
            if value < 0:
                raise ValueError(f"costs.{name}: must be >= 0 microseconds, got {value}")
            if value > MAX_COST_US:
                raise ValueError(
                    f"costs.{name}: must be <= {MAX_COST_US:g} microseconds (one second of CPU "
                    f"per operation), got {value:g}"
                )
        return self


STATE_BYTES = 24
"""Default bytes per mirrored entity per frame: a QuakeWorld delta-compressed entity update
(``entity_state_t`` sent by ``SV_WriteDelta``: a 2-byte header with the entity number and the
changed-field bits, then only the changed fields: origin 3 x 2 bytes, angles 3 x 1 byte, model,
frame, colormap, skin, effects 1 byte each) is at most about 20 bytes; 24 adds a little framing.
An order-of-magnitude argument (tens of bytes), see docs/cluster.md."""

HANDOFF_BYTES = 8192
"""Default bytes per handed-over client: QuakeWorld's ``client_t`` (server.h) holds the
userinfo string, the netchan with its reliable and message buffers (``MAX_MSGLEN`` = 1450
bytes each), the datagram and back buffers (several x 1450 bytes) and the ``UPDATE_BACKUP``
frame history: several kilobytes; 8 KiB is that order of magnitude (docs/cluster.md)."""


ACTION_BYTES = 32
"""Default bytes per cross-border action, in its request and again in its reply: the request
carries the shooter's command (a delta-compressed ``usercmd_t``: ~8 bytes), the target's entity
number and the shot's origin and direction (~12 bytes), the reply the outcome and the target's
changed state (an entity delta, ~20 bytes): tens of bytes (docs/cluster.md)."""


class ClusterSection(StrictModel):
    """Several server nodes serving zones of one world, linked by an interconnect
    (docs/cluster.md).  Absent: one server, as without this section."""

    nodes: int = Field(1, ge=1, le=4096, description="server nodes, each a [machine]")
    zoning: str = Field(
        "grid",
        description="registered zoning rule: grid (static rectangles), areanode (static "
        "areanode subtrees), load-aware (median bisection redone every rebalance_s)",
    )
    interconnect: str = Field(
        "libvip", description="interconnect profile name (simsrv/interconnect/profiles) or path"
    )
    border_width: float | None = Field(
        None,
        ge=0,
        le=65536,
        description="an entity closer than this to another zone is mirrored on its node, "
        "units; default players.action_range",
    )
    state_bytes: int = Field(
        STATE_BYTES, ge=0, le=65536, description="bytes per mirrored entity per frame"
    )
    handoff_bytes: int = Field(
        HANDOFF_BYTES, ge=0, le=10_000_000, description="bytes per handed-over client state"
    )
    areanode_weight: Literal["area", "entities"] = Field(
        "area",
        description="areanode zoning: share the zones between subtrees by 'area' or by static "
        "map 'entities'",
    )
    rebalance_s: float = Field(
        1.0, gt=0, le=1e6, description="load-aware zoning: period of the border moves, s"
    )
    remote_actions: bool = Field(
        False,
        description="a shot at a player another node owns costs a request and a reply "
        "message (a round trip)",
    )
    action_bytes: int = Field(
        ACTION_BYTES, ge=0, le=65536, description="bytes per cross-border action, each way"
    )


class Scenario(BaseModel):
    """A fully validated scenario.  Build it with :func:`simsrv.pipeline.load.load_scenario`.

    ``Scenario(...)`` and ``Scenario.model_validate(data)`` (e.g. of :meth:`to_dict`) check
    every section's fields; the names they give (strategy, map kind, mobility, platform) and
    the kinds' own parameters are resolved by ``load_scenario``, and again by
    :func:`simsrv.run`, which validates every scenario it is given."""

    model_config = {"frozen": True, "extra": "forbid"}

    run: RunSection = RunSection()
    map: MapSection = MapSection()
    players: PlayersSection = PlayersSection()
    clients: ClientsSection = ClientsSection()
    server: ServerSection = ServerSection()
    # a factory: validating a MachineSection imports the platform profiles, which import this
    # module (building the default at class creation would make that import circular)
    machine: MachineSection = Field(default_factory=MachineSection)
    cluster: ClusterSection | None = None

    def __init__(self, **sections: Any) -> None:
        with _one_line_errors():
            super().__init__(**sections)

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Scenario:
        r"""Pydantic's ``model_validate``, its errors one-line :class:`InputError`\ s."""
        with _one_line_errors():
            return super().model_validate(obj, **options)

    @classmethod
    def model_validate_json(cls, json_data: Any, **options: Any) -> Scenario:
        r"""Pydantic's ``model_validate_json``, its errors one-line :class:`InputError`\ s."""
        with _one_line_errors():
            return super().model_validate_json(json_data, **options)

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Scenario:
        """A copy with the sections of ``update`` replaced, validated as ``Scenario(...)`` is
        (an unknown section, a section of the wrong type: one-line :class:`InputError`);
        ``deep`` is accepted for pydantic's signature (the sections are frozen)."""
        return validated_copy(self, update, "scenario")

    @model_validator(mode="after")
    def _read_until_empty_on_one_cpu(self) -> Scenario:
        if self.server.read_until_empty and (
            self.server.strategy != "sequential" or self.cluster is not None
        ):
            where = "a cluster" if self.cluster is not None else f"{self.server.strategy!r}"
            raise ValueError(
                "server.read_until_empty: true only with server.strategy = 'sequential' "
                f"on one server (its read clock is one CPU's), got {where}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario as plain data (TOML layout: params flattened into sections)."""
        out = self.model_dump(mode="json")
        if self.cluster is None:
            del out["cluster"]  # a single server: the layout of scenarios without the section
        if self.run.map_seed is None:
            del out["run"]["map_seed"]  # unset: the layout (and hash) of scenarios before it
        if not self.server.scanned_entities:
            del out["server"]["scanned_entities"]  # the world's own: the layout without it
        if not self.server.read_until_empty:
            del out["server"]["read_until_empty"]  # the papers' rule: the layout without it
        if not self.clients.send_times_file:
            del out["clients"]["send_times_file"]  # drawn send times: the layout without it
        if not self.clients.receiver_idle_share:
            del out["clients"]["receiver_idle_share"]  # remote clients: the layout without it
        out["map"] = {"kind": self.map.kind, **_dump(self.map.params)}
        players = out["players"]
        players["behaviour"] = _dump(self.players.behaviour)
        out["server"]["options"] = _dump(self.server.options)
        return out

    @property
    def max_messages_per_frame(self) -> int:
        """Messages read per frame, resolved (defaults to one per client slot)."""
        return self.server.max_messages_per_frame or self.players.count


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Pydantic's validation errors inside the block raised as one-line :class:`InputError`."""
    try:
        yield
    except ValidationError as error:
        raise InputError(_error_line(error)) from None


def _error_line(error: ValidationError) -> str:
    line = first_error_line(error, Scenario, "").lstrip(".")
    return f"scenario{line}" if line.startswith(":") else line


def _dump(params: Any) -> dict[str, Any]:
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json")
    return dict(params) if isinstance(params, dict) else {}
