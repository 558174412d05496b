"""Quantities of one run that published figures are compared with.

Each is a function of a run's summary (:func:`simsrv.pipeline.summary.summarize`) and its
scenario, registered by name; a reference row names one.  Shares are fractions
(0-1) unless the name carries a unit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simsrv.core.registry import Registry
from simsrv.machine.trace import is_wait
from simsrv.scenario.schema import Scenario

Summary = dict[str, Any]
Quantity = Callable[[Summary, Scenario], float]

QUANTITIES: Registry[Quantity] = Registry("quantity")


def quantity(name: str) -> Callable[[Quantity], Quantity]:
    """Register the decorated function as the quantity ``name``."""

    def register(function: Quantity) -> Quantity:
        return QUANTITIES.register(name, function)

    return register


def _plain(key: str, doc: str) -> None:
    def read(summary: Summary, scenario: Scenario) -> float:
        return float(summary[key])

    read.__doc__ = doc
    QUANTITIES.register(key, read)


_plain("frames_per_s", "Server frames per simulated second.")
_plain("messages_per_frame", "Client packets read per frame.")
_plain("messages_per_s", "Client packets read per simulated second.")
_plain("lock_wait_fraction", "Share of thread time blocked on locks.")
_plain("barrier_wait_fraction", "Share of thread time blocked at barriers.")
_plain("any_waiting_fraction", "Share of the window with at least one thread blocked.")
_plain("parallel_fraction", "Share of the window with every CPU busy, from the trace.")


def busy_share(summary: Summary, activities: tuple[str, ...], untraced: float = 0.0) -> float:
    """Share of the busy CPU time spent in ``activities`` (waits and idle are not busy), with
    ``untraced`` busy time (a share of the total CPU time, as the breakdown's) counted in both."""
    breakdown = summary["time_breakdown"]
    busy = sum(v for a, v in breakdown.items() if a != "idle" and not is_wait(a)) + untraced
    spent = sum(breakdown.get(a, 0.0) for a in activities) + untraced
    return spent / busy if busy else 0.0


@quantity("replies_per_frame")
def replies_per_frame(summary: Summary, scenario: Scenario) -> float:
    """Replies sent per frame."""
    fps = summary["frames_per_s"]
    return summary["replies_per_s"] / fps if fps else 0.0


@quantity("reply_ratio")
def reply_ratio(summary: Summary, scenario: Scenario) -> float:
    """Replies/s as a share of the packets/s the clients offer (the capacity rule [R §5])."""
    return summary["replies_per_s"] / (scenario.players.count * scenario.clients.rate_hz)


@quantity("all_cpus_busy")
def all_cpus_busy(summary: Summary, scenario: Scenario) -> float:
    """Share of frame time with every CPU busy: moments (1) + (3) of [T §4.4.6]."""
    moments = summary["moments"]
    return moments["overlap"] + moments["parallel"]


@quantity("request_reply_share")
def request_reply_share(summary: Summary, scenario: Scenario) -> float:
    """Share of the busy CPU time reading, executing and answering packets [P §4.2]."""
    return busy_share(summary, ("net_recv", "request", "action_lists", "reply", "net_send"))


@quantity("world_share")
def world_share(summary: Summary, scenario: Scenario) -> float:
    """Share of the busy CPU time in world physics [P §3.1]."""
    return busy_share(summary, ("world",))


@quantity("network_share")
def network_share(summary: Summary, scenario: Scenario) -> float:
    """Share of the busy CPU time in the network system calls (receive and send) [P §4.1]:
    the threads' ``recvfrom`` and ``sendto``, as a system-call trace sees them."""
    return busy_share(summary, ("net_recv", "net_send"))


@quantity("network_processing_share")
def network_processing_share(summary: Summary, scenario: Scenario) -> float:
    """Share of the busy CPU time in network-related processing: the system calls and the
    receive softirq on the interrupt CPU (:mod:`simsrv.platforms.network_path`; not in the
    trace: the summary's ``softirq_fraction``, of one CPU's time)."""
    softirq = summary["softirq_fraction"] / scenario.machine.cpus  # of the total CPU time
    return busy_share(summary, ("net_recv", "net_send"), untraced=softirq)


@quantity("groups_per_frame")
def groups_per_frame(summary: Summary, scenario: Scenario) -> float:
    """BSP groups per frame (grouping strategies only)."""
    return float(summary["groups"]["mean_count"])


@quantity("group_size")
def group_size(summary: Summary, scenario: Scenario) -> float:
    """Entities per BSP group (grouping strategies only)."""
    return float(summary["groups"]["mean_size"])


@quantity("no_thread_waiting_fraction")
def no_thread_waiting_fraction(summary: Summary, scenario: Scenario) -> float:
    """Share of the window with no thread blocked ("full parallelism" [P §6])."""
    return 1.0 - summary["any_waiting_fraction"]


@quantity("worker_teardown_share")
def worker_teardown_share(summary: Summary, scenario: Scenario) -> float:
    """A worker's destruction as a share of the workers' busy time [T §4.4.5].

    Busy time of every thread except the coordinator (its waits and idle left out); the
    teardown runs on the worker's exit thread.
    """
    worker_busy = sum(
        share
        for thread, shares in summary["per_thread"].items()
        if thread != "coordinator"
        for category, share in shares.items()
        if category != "idle" and not is_wait(category)
    )
    cpus = scenario.machine.cpus
    teardown = summary["os_time_fraction"]["teardown"] * cpus  # share of CPU time -> of span
    return teardown / worker_busy if worker_busy else 0.0


def _stage_share(stage: str) -> Quantity:
    def read(summary: Summary, scenario: Scenario) -> float:
        return float(summary["stage_time_fraction"].get(stage, 0.0))

    read.__doc__ = f"Mean share of each thread's time in {stage} [R]."
    return read


QUANTITIES.register("stage1_share", _stage_share("stage1"))
QUANTITIES.register("stage3_share", _stage_share("stage3"))
QUANTITIES.register("end_barrier_wait_share", _stage_share("end_barrier_wait"))


@quantity("stage2_us_per_packet")
def stage2_us_per_packet(summary: Summary, scenario: Scenario) -> float:
    """Stage-2 thread time per client packet, us [R §5.2] (one thread: the sequential server)."""
    mps = summary["messages_per_s"]
    return summary["stage_time_fraction"].get("stage2", 0.0) / mps * 1e6 if mps else 0.0


_plain("replies_per_s", "Replies sent per simulated second.")


@quantity("busy_fraction")
def busy_fraction(summary: Summary, scenario: Scenario) -> float:
    """Share of the machine's CPU time (CPUs x window) that is busy: the server's CPU
    utilisation, which the testbed measures with the thread CPU clock."""
    breakdown = summary["time_breakdown"]
    return sum(v for a, v in breakdown.items() if a != "idle" and not is_wait(a))


def _busy_share_quantity(activities: tuple[str, ...], doc: str) -> Quantity:
    def read(summary: Summary, scenario: Scenario) -> float:
        return busy_share(summary, activities)

    read.__doc__ = doc
    return read


# The testbed's stage shares (simsrv.testbed: the patched server's thread CPU per stage).
def _cold_refill_frame_share(scenario: Scenario) -> float:
    from simsrv.platforms.profile import load_platform

    return load_platform(scenario.machine.platform).cold_refill_frame_share


def _stage_share_with_cold(activities: tuple[str, ...], frame_part: bool, doc: str) -> Quantity:
    """A stage's share with the part of the cold starts its stage timer sees: per-frame work
    (``frame_part``) the wake-ups and the platform's ``cold_refill_frame_share`` of the
    refills, executing packets the rest of the refills."""

    def read(summary: Summary, scenario: Scenario) -> float:
        share = _cold_refill_frame_share(scenario)
        refill = busy_share(summary, ("cold_refill",))
        if frame_part:
            return busy_share(summary, (*activities, "cold_start")) + refill * share
        return busy_share(summary, activities) + refill * (1.0 - share)

    read.__doc__ = doc
    return read


QUANTITIES.register(
    "net_recv_share",
    _busy_share_quantity(("net_recv",), "Share of the busy CPU time in the receive system calls."),
)
QUANTITIES.register(
    "request_share",
    _stage_share_with_cold(
        ("request",),
        False,
        "Share of the busy CPU time executing packets (after the receive call), with the "
        "share of the cold starts' refills that the real server's thread clock shows there "
        "(1 - the platform's cold_refill_frame_share).",
    ),
)
QUANTITIES.register(
    "reply_share",
    _busy_share_quantity(("reply_info", "reply"), "Share of the busy CPU time building replies."),
)
QUANTITIES.register(
    "net_send_share",
    _busy_share_quantity(("net_send",), "Share of the busy CPU time in the send system calls."),
)
QUANTITIES.register(
    "frame_share",
    _stage_share_with_cold(
        ("frame",),
        True,
        "Share of the busy CPU time in per-frame work (wake-up, timeouts, console), with the "
        "cold starts' wake-ups and the share of their refills that the real server's thread "
        "clock shows there (the platform's cold_refill_frame_share).",
    ),
)


def measure_all(summary: Summary, scenario: Scenario) -> dict[str, float]:
    """Every registered quantity that applies to the run (others are left out)."""
    out = {}
    for name in QUANTITIES.names():
        try:
            out[name] = float(QUANTITIES.get(name, "quantity")(summary, scenario))
        except KeyError:  # e.g. groups of a strategy that does not group
            continue
    return out
