"""The kernel's receive path on the CPU that takes the network card's interrupts.

On Linux before receive packet steering (2.6.35, 2010) and multi-queue cards, a card's receive
processing (its interrupt and the NET_RX softirq: IP, UDP demultiplexing, queueing onto the
socket, waking the reader) runs on the CPU that took the card's interrupt; only the system call
that reads the packet (``recvfrom``: the copy to user space, with the checksum on a card that
does not offload it) runs on the reading thread (the Red Hat 2.4.18 kernel's
``kernel/softirq.c``, ``net/core/dev.c``, ``net/ipv4/udp.c``; the RPS commit ``0a9627f2649a``;
docs/abdelkhalek-platform.md §1).  Which CPU: a mainline 2.4 kernel has no interrupt
balancer (a card's interrupts stay on one CPU); Red Hat's 2.4.18 moves a card's interrupt at
most once per tick, to a CPU it finds idle (``balance_irq`` in ``io_apic.c``).  The model keeps
one CPU for the run, ``irq_cpu``: the last logical CPU is the idle one for a server with fewer
threads than CPUs, and one of the busy ones for a server with a thread on every CPU.

A platform with ``irq_cpu`` set splits every received packet's kernel cost
``net_recv_per_message`` in two: the share ``softirq_share`` (:func:`softirq_us`) runs on
logical CPU ``irq_cpu`` when the packet reaches the card, the rest in the reading thread (its
``net_recv`` computations cost ``1 - softirq_share`` of it: :func:`thread_costs_platform`).
The machine takes every packet's softirq (:meth:`Machine.add_interrupts
<simsrv.machine.executor.Machine.add_interrupts>`, the rule in
:mod:`simsrv.machine.simpy_engine`'s docstring): first come first served on ``irq_cpu``, a
softirq preempts the thread computing there and makes the CPU busy for its SMT siblings, and
the packet is on its socket, readable, when its softirq ends (the client stream releases it
then: :attr:`ClientStream.on_arrivals <simsrv.workload.clients.ClientStream.on_arrivals>`).
The packets are every packet the clients send that is not lost, which the card receives
whether or not the server keeps up: above ``1 / softirq_us`` packets/s the interrupt CPU
cannot keep up, the kernel drops what its receive backlog (``netdev_max_backlog``) cannot
hold, and the thread on that CPU starves (a receive livelock, as 2.4 without NAPI: every
interrupt runs the softirqs on its exit; the gaps ``ksoftirqd`` would leave it are not
modelled).

The send path goes the other way through the card's single transmit queue: the part of a
reply's ``sendto`` from ``dev_queue_xmit`` down to the driver's transmit call runs holding the
device's queue and transmit locks (``queue_lock``, ``xmit_lock``: spinlocks, Linux 2.4.18's
``net/core/dev.c``, ``net/sched/sch_generic.c qdisc_restart``), one sender at a time on the
sender's own CPU.  A platform with ``xmit_lock_share`` > 0 charges that share of
``net_send_per_reply`` (:func:`xmit_us`) per reply as a spin section of the device lock
(:class:`~simsrv.machine.plan.SpinSection`: a sender that finds it held busy-waits on its CPU),
the rest as the send's own computation (:mod:`simsrv.strategies.sends`).

Assumptions (docs/abdelkhalek.md shows their effect): one softirq per packet (no interrupt
coalescing, no NAPI polling: Linux 2.4's ``netif_rx`` path); a cluster node's machine does not
take it (single-server runs only).  Times are microseconds.
"""

from __future__ import annotations

from simsrv.platforms.profile import Platform


def softirq_us(platform: Platform) -> float:
    """Softirq work per received packet on ``irq_cpu``, us (0 without an interrupt CPU)."""
    if platform.irq_cpu is None:
        return 0.0
    return platform.softirq_share * platform.costs.net_recv_per_message


def xmit_us(platform: Platform) -> float:
    """A reply's time holding the device's transmit lock, us (0 without the lock)."""
    return platform.xmit_lock_share * platform.costs.net_send_per_reply


def thread_costs_platform(platform: Platform) -> Platform:
    """The platform whose ``net_recv_per_message`` is what the reading thread pays (the rest
    runs in the softirq); the platform itself without an interrupt CPU."""
    if platform.irq_cpu is None or platform.softirq_share == 0.0:
        return platform
    thread_part = platform.costs.net_recv_per_message * (1.0 - platform.softirq_share)
    costs = platform.costs.model_copy(update={"net_recv_per_message": thread_part})
    return platform.model_copy(update={"costs": costs})


def interrupt_cpu(platform: Platform, cpus: int) -> int | None:
    """The machine's CPU (of ``cpus``) that takes the interrupts: ``irq_cpu``, negative counted
    from the last, past the last clamped to it; None without an interrupt CPU."""
    cpu = platform.irq_cpu
    if cpu is None:
        return None
    if cpu < 0:
        cpu += cpus
    return min(max(cpu, 0), cpus - 1)
