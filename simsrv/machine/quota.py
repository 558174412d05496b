"""A CPU quota on the server's threads: CFS bandwidth control, as the Linux kernel runs it.

Linux's ``Documentation/scheduler/sched-bwc.rst``: a task group with ``cpu.cfs_quota_us`` =
``Q`` and ``cpu.cfs_period_us`` = ``P`` may run ``Q`` us of CPU time (summed over its threads
and CPUs) in each period of ``P`` us; once it has used ``Q`` it is *throttled*: none of its
threads runs until the next period begins and the quota is refilled.  The group here is the
modelled server (every thread of every plan); the periods are ``[k P, (k + 1) P)`` from the
run's start (the kernel's period timer keeps the phase of the group's first activation).

What the rule leaves out, each second order for a single-threaded server whose frames are far
shorter than a period: the kernel notices an exhausted quota at its next accounting point
(a tick, a sleep or a wake-up; a thread that computes through a tick overruns by up to a tick
and pays it back in the next period); runtime moves from the group's pool to each CPU in
slices of ``sched_cfs_bandwidth_slice_us`` (5 ms), so that several CPUs may strand some of it;
and ``cpu.cfs_burst_us`` (unused quota carried over, 0 by default).  Both engines implement
the rule (:func:`simsrv.machine.engine._quota_event`,
:class:`simsrv.machine.simpy_engine.SimpyMachine`).
"""

from __future__ import annotations

from dataclasses import dataclass

from simsrv.scenario.schema import DEFAULT_PERIOD_US


@dataclass(frozen=True)
class CpuQuota:
    """``quota_us`` of CPU time per ``period_us`` for the server's threads together."""

    quota_us: float
    period_us: float = DEFAULT_PERIOD_US

    def __post_init__(self) -> None:
        # (the kernel's bounds, 1 ms to 1 s, are the scenario's: the rule holds at any scale)
        if not (0.0 < self.quota_us < float("inf") and 0.0 < self.period_us < float("inf")):
            raise ValueError(
                f"cpu quota: quota_us and period_us must be positive and finite, got "
                f"{self.quota_us:g} and {self.period_us:g}"
            )

    @property
    def share(self) -> float:
        """CPUs' worth of time the quota allows on average (``quota / period``)."""
        return self.quota_us / self.period_us

    @classmethod
    def of(cls, machine) -> CpuQuota | None:
        """The quota of a scenario's ``[machine]`` section (None: none)."""
        if machine.cpu_quota_us is None:
            return None
        return cls(machine.cpu_quota_us, machine.cpu_period_us)


def check_quota_machine(quota: CpuQuota | None, background, irq_cpu: int | None) -> None:
    """Refuse the machines the quota rule is not written for (``ValueError``): background
    load (a fluid share of another program's time, whose CPU time the quota cannot count) and
    an interrupt CPU (softirqs preempting a throttled thread)."""
    if quota is None:
        return
    if any(b > 0.0 for b in background):
        raise ValueError("a CPU quota cannot be combined with machine.background")
    if irq_cpu is not None:
        raise ValueError("a CPU quota cannot be combined with a platform's interrupt CPU (irq_cpu)")
