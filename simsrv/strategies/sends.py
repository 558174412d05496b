"""The replies' send system calls as plan operations, through the network device's transmit
lock when the platform has one (:func:`simsrv.platforms.network_path.xmit_us`).

Without the lock (``xmit_us`` = 0) a thread's sends are one computation of ``net_send_us``,
as every strategy charged them before the lock existed.  With it, each reply is its own
``sendto``: the system call's own part (``net_send_per_reply - xmit_us``: the copy, the
checksum, UDP and IP output) then the device part, a :class:`SpinSection` of the device lock
(:data:`DEVICE_LOCK`) costing ``xmit_us``: one sender at a time, a sender that finds it held
spinning on its CPU (Linux 2.4's ``dev_queue_xmit``).  Both parts are ``net_send``, so the
activity's total is the same.  A strategy whose sends all run in one thread (``sequential``)
keeps the single computation: nobody else could hold the lock.
"""

from __future__ import annotations

from simsrv.core.compiled import borrowing
from simsrv.machine.plan_arrays import COMPUTE, SPIN, emit

DEVICE_LOCK = "netdev_xmit"
"""The name of the device's transmit lock in a plan's ``locks`` (one card, one lock)."""


@borrowing
def emit_sends(
    fill, at, thread, kind, cost, arg, activity, t, replies, send_us, per_reply_us, xmit_us,
    lock, act,
):  # fmt: skip
    """Thread ``t``'s sends of ``replies`` replies (:func:`~simsrv.machine.plan_arrays.emit`'s
    first seven arguments): one computation of ``send_us`` (their ``net_send_us``) without a
    transmit lock (``xmit_us`` <= 0), else per reply ``per_reply_us - xmit_us`` then a spin
    section of lock id ``lock`` costing ``xmit_us``; activity ``act`` for all, us."""
    if xmit_us <= 0.0 or replies == 0:
        emit(fill, at, thread, kind, cost, arg, activity, t, COMPUTE, send_us, -1, act)
        return
    for _ in range(int(replies)):
        emit(fill, at, thread, kind, cost, arg, activity, t, COMPUTE, per_reply_us - xmit_us,
             -1, act)  # fmt: skip
        emit(fill, at, thread, kind, cost, arg, activity, t, SPIN, xmit_us, lock, act)
