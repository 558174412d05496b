"""Validated platform profile (CPU description and cost table)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from simsrv.core.errors import InputError
from simsrv.core.paths import exists
from simsrv.core.strict_model import StrictModel, validate
from simsrv.core.toml_file import read_toml

PLATFORM_DIR = Path(__file__).parent


MAX_COST_US = 1e6
"""Largest cost of one operation: one second of CPU, microseconds.  Every modelled operation
is a system call or a few thousand instructions; a cost above a second is a unit mistake (and
would make one frame outlast any run)."""


def _us(description: str, default: float = 0.0):
    return Field(default, ge=0, le=MAX_COST_US, description=f"{description}, microseconds (<= 1e6)")


class Costs(StrictModel):
    """Cost of every modelled operation on one CPU of the platform, in microseconds.

    Server work [P §2.1, T §2.1]: a frame pays ``frame_overhead`` (select, timeouts,
    statistics); world physics, when due, pays ``world_base + world_per_entity x entities``;
    each message pays ``net_recv_per_message`` (recvfrom), ``request_per_message`` plus
    ``request_per_command`` per user command executed plus ``request_per_range_entity`` per
    entity in its action range L_a; every frame pays ``reply_info_per_client`` per
    connected client (the score and broadcast messages); each reply pays ``reply_per_client`` plus
    ``reply_per_visible_entity`` per entity in the client's potentially visible set plus
    ``reply_per_scanned_entity`` per entity of the server's list it scans
    (``server.scanned_entities``) plus ``net_send_per_reply`` (sendto).  Operating-system and
    synchronisation costs are used by the parallel strategies.
    """

    frame_overhead: float = _us("fixed work of every server frame")
    world_base: float = _us("world physics step, fixed part")
    world_per_entity: float = _us("world physics per entity (players + map entities)")
    net_recv_per_message: float = _us("receive system call per packet")
    request_per_message: float = _us("request processing per packet")
    request_per_command: float = _us("per user command executed (SV_RunCmd/pmove)")
    request_per_range_entity: float = _us("per entity in the sender's action range L_a")
    reply_info_per_client: float = _us(
        "stage-3 part 1 per connected client per frame (scores, broadcasts: "
        "SV_UpdateToReliableMessages); 0 where absorbed in frame_overhead"
    )
    reply_per_client: float = _us("building one reply")
    reply_per_visible_entity: float = _us("per entity in the client's visible set")
    reply_per_pvs_room: float = _us("per room (leaf) in the client's PVS row")
    reply_per_scanned_entity: float = _us(
        "per entity of the server's entity list each reply scans (QuakeWorld's "
        "SV_WriteEntitiesToClient tests every edict against the client's PVS; the count is "
        "server.scanned_entities); 0 = none"
    )
    net_send_per_reply: float = _us("send system call per reply")
    net_send_wake: float = _us(
        "a frame's first send to a receiver that sleeps on the same machine, extra: the "
        "loopback's delivery and wake-up run in the sender's sendto(); charged x "
        "clients.receiver_idle_share once per frame with replies (the single-CPU frame: "
        "sequential); 0 = none"
    )
    grouping_per_message: float = _us(
        "BSP-group: the graph and union-find beyond the action lists, per packet"
    )
    grouping_per_edge: float = _us("BSP-group: union-find per edge of the entity graph")
    schedule_per_group: float = _us("BSP-group: LPT per group")
    fork: float = _us("fork() of the server process")
    clone: float = _us("clone(CLONE_STOPPED)")
    setaffinity: float = _us("sched_setaffinity + SIGCONT per worker")
    cow_per_page: float = _us("copy-on-write fault per written page")
    copy_per_entity: float = _us("copying one entity state to or from shared memory")
    exit_teardown: float = _us("process exit and teardown (kernel frees the address space)")
    wait: float = _us("wait() system call and reaping per worker")
    context_switch: float = _us("one context switch")
    thread_cache_refill: float = _us(
        "refilling a resumed thread's cold stack and state into cache and TLB"
    )
    queue_per_message: float = _us("area-quadrant: putting one packet in a task queue")
    lock_acquire: float = _us("acquire of an uncontended lock")
    lock_per_node: float = _us("areanode tree traversal per node")
    barrier: float = _us("passing a barrier (per thread)")
    signal_send: float = _us(
        "thread library waking a sleeper with a signal (LinuxThreads): the waker's kill() per "
        "sleeper, charged by the machine at a barrier's opening and a contended lock's "
        "hand-off; 0 = wake-ups cost nothing beyond barrier (a futex library)"
    )
    signal_wakeup: float = _us(
        "thread library waking a sleeper with a signal (LinuxThreads): the sleeper's return "
        "from sigsuspend once the signal arrives (signal delivery, switch in)"
    )


class Platform(StrictModel):
    """A modelled machine: description, CPU topology, migration rule and costs."""

    name: str
    description: str = ""
    source: str = Field("", description="where the numbers come from")
    cpu_ghz: float = Field(1.0, gt=0, description="clock of one CPU (documentation only), GHz")
    cpus: int = Field(1, ge=1, description="logical CPUs of the real machine")
    smt_per_core: int = Field(1, ge=1, le=8, description="logical CPUs per physical core")
    smt_throughput: float = Field(
        1.0, gt=0, le=1, description="speed of a logical CPU while its sibling is busy, x1"
    )
    cow_pages_per_client: float = Field(
        4.0,
        ge=0,
        description="pages of a client's state (client_t) a worker writes when it serves the "
        "client's packet and reply: header and datagram buffer, the frame slot, the netchan "
        "buffers (copy-on-write faults)",
    )
    cow_base_pages: int = Field(
        0,
        ge=0,
        description="pages every forked worker writes besides client state (stack, buffers)",
    )
    migration_delay_us: float = Field(
        0.0, ge=0, description="time before an idle CPU pulls a runnable task, us"
    )
    lock_release: Literal["handoff", "barging"] = Field(
        "handoff",
        description="what a contended lock's release does: 'handoff' gives it to the first "
        "waiter (FIFO), 'barging' frees it and wakes the first sleeping waiter, which tries "
        "again signal_send + signal_wakeup later while anyone may take it (a futex mutex: "
        "glibc's, libgomp's config/linux/mutex.c)",
    )
    wakeup_latency_us: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="time from a packet's arrival at an idle server (blocked in select) to "
        "the start of the frame it wakes, us: the kernel waking the server's thread (and, on a "
        "virtual machine, its idle virtual CPU).  Packets arriving meanwhile join that frame.  "
        "A server with packets already queued does not sleep and pays none",
    )
    cold_start_us: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="CPU time of the first computation on a CPU after any idle spell, us: the "
        "wake-up path of a thread that slept (simsrv.machine.cold_start: cold(g) = "
        "cold_start_us + cold_refill_us * (1 - exp(-g / cold_decay_us)) after g > 0 us idle); "
        "0 and cold_refill_us 0 = none",
    )
    cold_refill_us: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="CPU time refilling caches and TLB after a long idle spell, at most, us "
        "(the part of the cold start that grows with the idle time)",
    )
    cold_refill_frame_share: float = Field(
        1.0,
        ge=0,
        le=1,
        description="where a measured server's own stage timers see a cold start's refill "
        "(cold_refill): this share in its per-frame work, the rest in receiving and executing "
        "its first packet (the wake-up part, cold_start, is per-frame work); only the stage "
        "shares compared with a measured server read it",
    )
    world_counts_map_entities: bool = Field(
        True,
        strict=True,
        description="whether world physics charges world_per_entity for the map's entities "
        "besides the players (true: the papers' model, E = players + map entities); false: "
        "players only, for a server whose physics step leaves idle map entities (items, "
        "unmoved doors) at a negligible cost and grows with what the players do (QuakeWorld's "
        "SV_Physics, docs/testbed.md)",
    )
    cold_decay_us: float = Field(
        1000.0,
        gt=0,
        le=1e9,
        description="idle time over which the cold start's refill approaches cold_refill_us, "
        "us (the time constant of the cache footprint's decay)",
    )
    wakeup_latency_quantiles_us: list[float] = Field(
        default_factory=list,
        description="the wake-up latency as a measured distribution: n quantiles of a sample "
        "at probabilities (i + 1/2) / n, us (non-decreasing; each wake-up draws one of them "
        "with equal probability; simsrv.frame_steps.wakeup); empty = the constant "
        "wakeup_latency_us, which must then be 0",
    )
    irq_cpu: int | None = Field(
        None,
        ge=-1024,
        le=1023,
        description="logical CPU that takes the network card's interrupts and runs its receive "
        "softirq (Linux before 2.6.35: one CPU per card); negative counts from the machine's "
        "last CPU (-1: the last), an index past the last means the last; unset = the receive "
        "path is all in the reading thread (simsrv.platforms.network_path)",
    )
    softirq_share: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="share of net_recv_per_message done in the receive softirq on irq_cpu (the "
        "rest in the reading thread's recvfrom)",
    )
    netdev_max_backlog: int = Field(
        300,
        ge=1,
        le=1_000_000,
        description="packets the kernel queues for the receive softirq at most (Linux 2.4's "
        "net.core.netdev_max_backlog, default 300): one arriving when more wait is dropped, "
        "and so is every one after it until the queue is empty",
    )
    xmit_lock_share: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="share of net_send_per_reply done holding the network device's transmit "
        "lock (Linux's dev->queue_lock and xmit_lock in dev_queue_xmit: the queueing "
        "discipline and the driver call), a spinlock senders take one at a time, busy-waiting; "
        "0 = sends wholly in parallel (simsrv.platforms.network_path)",
    )
    costs: Costs = Costs()

    @model_validator(mode="after")
    def _one_wakeup_latency(self) -> Platform:
        q = self.wakeup_latency_quantiles_us
        if not q:
            return self
        ordered = all(a <= b for a, b in zip(q, q[1:], strict=False))
        if any(not (0.0 <= v <= 1e6) for v in q) or not ordered:
            raise ValueError(
                "wakeup_latency_quantiles_us: quantiles must be in [0, 1e6] us and non-decreasing"
            )
        if self.wakeup_latency_us != 0.0:
            raise ValueError(
                "wakeup_latency_us: must be 0 when wakeup_latency_quantiles_us gives the "
                "distribution (set one of the two)"
            )
        return self


def platform_names() -> list[str]:
    """Names of the built-in platform profiles."""
    return sorted(p.stem for p in PLATFORM_DIR.glob("*.toml"))


@lru_cache(maxsize=64)
def load_platform(name_or_path: str) -> Platform:
    """Load a platform by built-in name or by path to a TOML file.

    Raises
    ------
    InputError
        Unknown name, unreadable or malformed file, or invalid fields (named as
        ``machine.platform[...]``).
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = PLATFORM_DIR / f"{name_or_path}.toml"
        if not exists(path):
            raise InputError(
                f"machine.platform: unknown platform {name_or_path!r}; allowed: "
                f"{', '.join(platform_names())} or a path to a .toml file"
            )
    return validate(Platform, read_toml(path, "machine.platform"), f"platform[{path.name}]")


def resolve_platform(name_or_path: str, cost_overrides: dict[str, float]) -> Platform:
    """The platform with the scenario's ``machine.costs`` overrides applied."""
    platform = load_platform(name_or_path)
    if not cost_overrides:
        return platform
    costs = platform.costs.model_copy(update=cost_overrides)
    return platform.model_copy(update={"costs": costs})
