"""Where each server thread's time goes, by frame stage [R §5, Figures 10, 11 and 17].

QuakeWorld's frame has three stages [R §2.1]: 1 world physics (and the fixed frame work),
2 receiving and executing the client packets, 3 building and sending the replies.  Every
activity of the trace falls in one *category*:

=========================  =================================================================
``stage1``                 ``frame``, ``world``
``stage2``                 ``net_recv``, ``sort``, ``grouping``, ``schedule``, ``lock``,
                           ``request``
``stage3``                 ``reply_info``, ``reply``, ``net_send``, ``lock_spin`` (spinning
                           for the network device's transmit lock, inside a send: the one
                           kernel spinlock the strategies take)
``os``                     process and thread management (``spawn``, ``copy_on_write``,
                           ``teardown``, ``context_switch``, ...): any other computation
``lock_wait``              blocked on a lock
``barrier``                passing barriers (their cost; busy)
``barrier_wait``           blocked at a barrier; named barrier waits keep their own name
``internal_barrier_wait``  (e.g. the reply stage's internal and end barriers), as do
``end_barrier_wait``       ``join_wait`` and ``runqueue_wait``
``idle``                   the rest of the window: waiting for packets between frames (and,
                           when threads share a CPU, waiting for the CPU)
=========================  =================================================================

``intra_frame_wait`` is the report's "Intra-Frame Wait": every barrier category together
(``barrier`` and every ``*barrier_wait``).

* ``per_thread``: for each thread (by name), category -> share of the measured window;
* ``stage_time_fraction``: the mean over threads of ``per_thread`` (each thread's time counts
  once, as in the report's "average across all threads"), plus ``intra_frame_wait``.

A thread counts if it has any interval in the window; for strategies whose workers change from
frame to frame (``bsp-group``) the thread names are the worker slots.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from simsrv.machine.trace import is_wait

STAGE_OF_ACTIVITY = {
    "frame": "stage1",
    "world": "stage1",
    "net_recv": "stage2",
    "sort": "stage2",
    "grouping": "stage2",
    "action_lists": "stage2",
    "schedule": "stage2",
    "lock": "stage2",
    "request": "stage2",
    "reply_info": "stage3",
    "reply": "stage3",
    "net_send": "stage3",
    "lock_spin": "stage3",
    "barrier": "barrier",
}


def category(activity: str) -> str:
    """The category of an activity (table in the module docstring)."""
    if activity in STAGE_OF_ACTIVITY:
        return STAGE_OF_ACTIVITY[activity]
    return activity if is_wait(activity) else "os"


def per_thread(trace: pd.DataFrame, span_s: float) -> dict[str, dict[str, float]]:
    """Thread -> category -> share of the window, for a trace clipped to a window of
    ``span_s`` seconds; ``idle`` is what the categories leave of the window."""
    if trace.empty or span_s <= 0:
        return {}
    length = (trace["end_s"] - trace["start_s"]) / span_s
    # sum per (thread, activity) first: the rows are many, the pairs few
    by_activity = length.groupby([trace["thread"], trace["activity"]], observed=True).sum()
    return thread_shares((str(t), str(a), float(v)) for (t, a), v in by_activity.items())


def thread_shares(pairs: Iterable[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """:func:`per_thread` from each (thread, activity)'s share of the window, in the order of
    thread, then activity name (the order the shares of a category are added in)."""
    out: dict[str, dict[str, float]] = {}
    for thread, activity, share in pairs:
        shares = out.setdefault(thread, {})
        name = category(activity)
        shares[name] = shares.get(name, 0.0) + share
    for shares in out.values():
        shares["idle"] = max(0.0, 1.0 - sum(shares.values()))
    return {t: dict(sorted(out[t].items())) for t in sorted(out, key=_natural)}


def stage_time_fraction(threads: dict[str, dict[str, float]]) -> dict[str, float]:
    """Mean over threads of :func:`per_thread`'s shares, with ``intra_frame_wait``."""
    if not threads:
        return {}
    names = sorted({name for shares in threads.values() for name in shares})
    mean = {n: sum(s.get(n, 0.0) for s in threads.values()) / len(threads) for n in names}
    mean["intra_frame_wait"] = sum(v for n, v in mean.items() if is_barrier_category(n))
    return dict(sorted(mean.items()))


def is_barrier_category(category_name: str) -> bool:
    """True for the categories of the report's "Intra-Frame Wait" (barrier cost and waits)."""
    return category_name == "barrier" or category_name.endswith("barrier_wait")


def _natural(name: str) -> tuple:
    """Sort key: ``thread2`` before ``thread10``."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1, name)
